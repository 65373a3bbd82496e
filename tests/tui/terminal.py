"""A real terminal for end-to-end tests: a private tmux server, read with capture-pane."""

from __future__ import annotations

import shutil
import subprocess
import time
import uuid
from pathlib import Path

TMUX = shutil.which("tmux")

WRITER = """
import sys, time
src, dst, start, pace = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
lines = open(src, encoding="utf-8").read().splitlines(keepends=True)[start:]
with open(dst, "a", encoding="utf-8") as f:
    for line in lines:
        time.sleep(pace)
        f.write(line)
        f.flush()
"""


class Tmux:
    def __init__(self, term: str, conf: Path) -> None:
        self.sock = f"tw-{uuid.uuid4().hex[:8]}"
        self.term = term
        conf.write_text("set -g default-size 200x50\n", encoding="utf-8")
        self.conf = str(conf)

    def __call__(self, *args: str) -> str:
        out = subprocess.run([TMUX or "tmux", "-L", self.sock, "-f", self.conf, *args], capture_output=True, text=True,
                             timeout=20)
        return out.stdout

    def capture(self) -> str:
        return self("capture-pane", "-p", "-t", "tw")

    def wait_for(self, predicate, timeout: float, what: str) -> str:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.capture()
            if predicate(text):
                return text
            time.sleep(0.2)  # polling interval, not synchronisation
        raise AssertionError(f"timed out waiting for {what}; screen was:\n{text}")


