"""Third-party formats arrive through the `trainwatch.formats` entry-point group, and a broken one only warns."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _site(tmp_path: Path, entry: str, edit: tuple[str, str] | None = None) -> Path:
    """A real distribution on sys.path: the plugin's module plus a dist-info with its entry point; `edit`
    replaces one piece of the module's source (a plugin written differently)."""
    site = tmp_path / "site"
    shutil.copytree(ROOT / "examples/plugin_format/trainwatch_fairseq", site / "trainwatch_fairseq")
    if edit is not None:
        module = site / "trainwatch_fairseq/__init__.py"
        text = module.read_text()
        assert edit[0] in text
        module.write_text(text.replace(*edit))
    info = site / "trainwatch_fairseq-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: trainwatch-fairseq\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(f"[trainwatch.formats]\n{entry}\n")
    return site


def _tw(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]))
    return subprocess.run([sys.executable, "-m", "trainwatch", *args], capture_output=True, text=True, env=env,
                          timeout=60)


def test_plugin_format_is_listed_and_detected(tmp_path: Path) -> None:
    site = _site(tmp_path, "fairseq = trainwatch_fairseq:FairseqAdapter")
    log = tmp_path / "train.log"
    log.write_text("".join(f"| epoch 001 | loss {7 - i * 0.1:.2f} | ppl 100 | lr 0.0005 | gnorm 1.{i} | "
                           f"num_updates {i * 10}\n" for i in range(1, 30)))
    listing = _tw(site, "formats")
    assert "fairseq" in listing.stdout and "hf_console" in listing.stdout
    proc = _tw(site, "check", str(log), "--json")
    assert proc.returncode == 0, proc.stderr
    assert '"format": "fairseq"' in proc.stdout


def test_broken_plugin_warns_and_the_rest_work(tmp_path: Path) -> None:
    site = _site(tmp_path, "broken = trainwatch_missing_module:Nope")
    proc = _tw(site, "formats")
    assert proc.returncode == 0
    assert "hf_console" in proc.stdout
    assert "format plugin 'broken'" in proc.stderr and "Traceback" not in proc.stderr


FAILING = ("        step = fields.pop(\"num_updates\", None)\n",
           "        step = fields.pop(\"num_updates\", None)\n        if fields.get(\"ppl\") == 999:\n"
           "            raise KeyError(\"boom\")\n")


def _fairseq_log(tmp_path: Path) -> Path:
    """Falling loss; two lines print a perplexity the edited plugin chokes on, one a NaN loss."""
    lines = []
    for i in range(1, 60):
        ppl = 999 if i in (20, 40) else 100
        loss = "nan" if i == 50 else f"{7 - i * 0.05:.2f}"
        lines.append(f"| epoch 001 | loss {loss} | ppl {ppl} | lr 0.0005 | gnorm 1.1 | num_updates {i * 10}\n")
    path = tmp_path / "train.log"
    path.write_text("".join(lines))
    return path


def test_a_reader_that_fails_on_some_lines_is_said_and_the_rest_is_judged(tmp_path: Path) -> None:
    """An adapter bug costs the lines it failed on: `check` and `tail` say so once, in words, and go on
    (the NaN loss after the failures is still found)."""
    site = _site(tmp_path, "fairseq = trainwatch_fairseq:FairseqAdapter", edit=FAILING)
    log = _fairseq_log(tmp_path)
    proc = _tw(site, "check", str(log), "--json")
    assert "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    notes = doc["sources"][0]["skipped"]
    said = [n for n in notes if "fairseq reader failed" in n]
    assert len(said) == 1 and "2 time(s)" in said[0] and "KeyError" in said[0] and "boom" in said[0]
    assert "loss.nonfinite" in {f["id"] for f in doc["findings"]}
    text = _tw(site, "check", str(log))
    assert "fairseq reader failed 2 time(s)" in text.stdout
    tail = _tw(site, "tail", str(log), "--headless", "--no-gpu", "--json", "--exit-on", "critical")
    assert "Traceback" not in tail.stderr
    lines = [ln for ln in (tail.stdout + tail.stderr).splitlines() if "fairseq reader failed" in ln]
    assert len(lines) == 1 and "KeyError" in lines[0]
    assert tail.returncode == 2  # the NaN's critical alert still fired after the failures


def test_a_reader_that_never_fails_says_nothing_of_it(tmp_path: Path) -> None:
    site = _site(tmp_path, "fairseq = trainwatch_fairseq:FairseqAdapter")
    doc = json.loads(_tw(site, "check", str(_fairseq_log(tmp_path)), "--json").stdout)
    assert not [n for n in doc["sources"][0]["skipped"] if "reader failed" in n]
