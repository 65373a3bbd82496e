"""End to end on a small real terminal: `trainwatch tail` in a 40x12 tmux window keeps the badge, the
alert and its first fix; grown to 80x24 the cards come back; ctrl+s (raw mode, so not XOFF) writes an
SVG screenshot into the folder it was started in. Polls capture-pane with timeouts, no fixed sleeps.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.tui.terminal import TMUX, Tmux

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "examples" / "logs" / "hf_high_lr.log"
pytestmark = pytest.mark.skipif(TMUX is None or not LOG.is_file(), reason="needs tmux and examples/logs")


def test_small_terminal_keeps_badge_alert_and_fix_then_grows_and_ctrl_s_saves(tmp_path: Path) -> None:
    from tests.tui.test_e2e_tmux import _expected_alert

    title, fix = _expected_alert()
    tm = Tmux("xterm-256color", tmp_path / "tmux.conf")
    run_dir = tmp_path / "here"
    run_dir.mkdir()
    # COLUMNS/LINES (set in pytest's environment, inherited by tmux) would override the pane's size in Textual
    status = tmp_path / "status"
    cmd = (f"cd {run_dir} && env -u COLUMNS -u LINES TERM=xterm-256color PYTHONPATH={ROOT} {sys.executable} "
           f"-m trainwatch tail --no-gpu {LOG}; echo $? > {status}.tmp && mv {status}.tmp {status}; sleep 120")
    tm("new-session", "-d", "-s", "tw", "-x", "40", "-y", "12", "sh", "-c", cmd)
    try:
        def flat_of(t: str) -> str:
            return " ".join(t.replace("│", " ").split())

        # the alert is drawn as the backlog is read, its fix once its incident is whole: wait for all of it
        screen = tm.wait_for(lambda t: "CRITICAL" in t and "what to try" in t and fix[:12] in flat_of(t), 40,
                             "badge and fixes at 40x12")
        flat = flat_of(screen)
        assert title[:12] in flat and fix[:12] in flat, screen
        assert "metrics" not in screen and "no finite points" not in screen
        tm("resize-window", "-t", "tw", "-x", "80", "-y", "24")
        tm.wait_for(lambda t: "metrics" in t and "CRITICAL" in t, 20, "the cards at 80x24")
        tm("send-keys", "-t", "tw", "C-s")
        screen = tm.wait_for(lambda t: "screenshot saved" in t, 20, "the notice that says where")
        shots = list(run_dir.glob("trainwatch-*.svg"))
        assert len(shots) == 1 and shots[0].read_text(encoding="utf-8").startswith("<svg")
        assert shots[0].name[:12] in screen
        tm("send-keys", "-t", "tw", "q")
        tm.wait_for(lambda t: status.exists(), 20, "the process to exit")
        assert status.read_text().strip() in ("0", "2")  # 2: the worst alert, once that lands
    finally:
        tm("kill-server")
