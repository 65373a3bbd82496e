"""A blow-up told live is one incident, as `check` tells it: at most three warning or critical lines, the
root with its one-line story, and the links that fire after it as info lines that name it.

The issue's reproducer (tests/fixtures/blowup_repro.py) runs for real: appended line by line to a file a
`tail --headless` follows (each line waited for on the status line, no sleeps), and under `trainwatch run`.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from tests.fixtures import blowup_repro

from .conftest import append
from .test_cli_tail import Tail

ROOT = Path(__file__).resolve().parents[2]
CHAIN = {"grad.spike", "loss.spike", "loss.diverging", "loss.nonfinite", "grad.nonfinite"}


def _follow(tmp_path: Path, lines: list[str], backlog: int) -> list[dict]:
    """The alerts `tail --json` printed while a child process appended `lines[backlog:]` one at a time."""
    log = tmp_path / "run.log"
    log.write_text("\n".join(lines[:backlog]) + "\n")
    t = Tail(str(log), "--json", "--status-every", "0.1", cwd=tmp_path)
    try:
        for i in range(backlog, len(lines)):
            append(log, lines[i])
            while True:  # this line was read and judged before the next one is written
                doc = json.loads(t.wait_line('"type"', timeout=30))
                if doc["type"] == "status" and doc["sources"] and doc["sources"][0]["step"] == i + 1:
                    break
        t.proc.send_signal(signal.SIGTERM)
        t.finish()
    finally:
        if t.proc.poll() is None:
            t.proc.kill()
    docs = [json.loads(line) for line in t.seen]
    return [d for d in docs if d.get("type") == "alert" and d["state"] == "firing"]


def test_tail_tells_the_blowup_in_at_most_three_loud_lines(tmp_path: Path) -> None:
    fired = _follow(tmp_path, blowup_repro.lines(), backlog=blowup_repro.FALL_END)
    chain = [d for d in fired if d["id"] in CHAIN]
    assert {d["id"] for d in chain} == CHAIN  # every link is still told
    loud = [d for d in chain if d["severity"] in ("warning", "critical")]
    assert len(loud) <= 3, [(d["id"], d["severity"]) for d in loud]
    root = next(d for d in chain if d["incident"])
    assert root["id"] == "loss.diverging" and root["step"] == blowup_repro.BLOW_UP
    assert root["message"].startswith("training blew up at step 25: grad_norm 1 -> 50")
    after = chain[chain.index(root) + 1:]
    # the NaNs always come after the root; the spikes too when one round of the watcher judged them
    # with it (rows are judged in rounds on its timer), else they were told before it as warnings
    assert {"loss.nonfinite", "grad.nonfinite"} <= {d["id"] for d in after}
    assert all(d["severity"] == "info" and d["echo_of"] == "loss.diverging at step 25" for d in after)


def _grad_leads() -> list[str]:
    """A grad-norm spike at step 25 while the loss still falls, the loss spikes at 26 as grad_norm goes NaN,
    the loss is NaN from 27: no divergence, the NaN loss is the root and the chain runs back to step 25."""
    out = []
    for step in range(1, 41):
        loss = 5.0 if step == 26 else 2.43 - 0.04 * step if step < 27 else float("nan")
        grad = 1.0 if step < 25 else 50.0 if step == 25 else float("nan")
        out.append(f"Step {step}: loss={loss:.10g}, lr=3e-4, grad_norm={grad:.10g}")
    return out


def test_a_nan_root_folds_the_grad_nan_told_with_it(tmp_path: Path) -> None:
    fired = _follow(tmp_path, _grad_leads(), backlog=24)
    chain = [d for d in fired if d["id"] in CHAIN]
    loud = [d for d in chain if d["severity"] in ("warning", "critical")]
    assert len(loud) <= 3, [(d["id"], d["severity"]) for d in loud]
    root = next(d for d in chain if d["incident"])
    assert root["id"] == "loss.nonfinite" and root["severity"] == "critical"
    assert "grad_norm NaN from step 26, loss NaN from step 27" in root["message"]
    grad_nan = next(d for d in chain if d["id"] == "grad.nonfinite")
    assert grad_nan["severity"] == "info" and grad_nan["echo_of"] == f"loss.nonfinite at step {root['step']}"
    assert chain.index(root) < chain.index(grad_nan)  # fired in the same read: the root is told first


def test_run_prints_the_root_then_info_echoes(tmp_path: Path) -> None:
    script = ROOT / "tests" / "fixtures" / "blowup_repro.py"
    r = subprocess.run([sys.executable, "-m", "trainwatch", "run", "--headless", "--no-gpu", "--log",
                        str(tmp_path / "run.log"), "--", sys.executable, str(script)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 2, r.stderr  # exit 0 after a blow-up is no success
    heads = [line.split()[1:3] for line in r.stdout.splitlines() if line[:1].isdigit()]
    loud = [rule for sev, rule in heads if sev in ("CRITICAL", "WARNING") and rule in CHAIN]
    assert loud == ["loss.diverging"], r.stdout  # the whole blow-up in one read: one loud line
    root = next(line for line in r.stdout.splitlines() if " CRITICAL loss.diverging " in line)
    assert "training blew up at step 25: grad_norm 1 -> 50, loss 1.204 -> 3.611" in root
    echoes = [line for line in r.stdout.splitlines() if "(part of the incident of loss.diverging at step 25)" in line]
    assert {line.split()[2] for line in echoes} == CHAIN - {"loss.diverging"}
    assert all(line.split()[1] == "INFO" for line in echoes)
    out = r.stdout
    assert out.index("CRITICAL loss.diverging") < out.index("INFO     grad.spike")  # root first
