"""Third-party formats arrive through the `trainwatch.formats` entry-point group, and a broken one only warns."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _site(tmp_path: Path, entry: str) -> Path:
    """A real distribution on sys.path: the plugin's module plus a dist-info with its entry point."""
    site = tmp_path / "site"
    shutil.copytree(ROOT / "examples/plugin_format/trainwatch_fairseq", site / "trainwatch_fairseq")
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
