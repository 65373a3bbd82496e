"""Shared helpers for the live tests: a fake clock, real child-process writers, waiting on output."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from trainwatch import config
from trainwatch.engine import Engine

TRACES = Path(__file__).parent / "traces"


class FakeClock:
    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.t = start

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def engine(clock: FakeClock) -> Engine:
    return Engine(config.load("sft"), clock=clock)


def append(path: Path, text: str, *, newline: bool = True) -> None:
    """A real child process appends to the file and flushes, as a training script would."""
    code = ("import sys; f = open(sys.argv[1], 'a', encoding='utf-8'); f.write(sys.argv[2]); f.flush(); f.close()")
    subprocess.run([sys.executable, "-c", code, str(path), text + ("\n" if newline else "")], check=True)


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    """Waits for output the engine thread produces (not a fixed sleep): polls the condition."""
    deadline = time.monotonic() + timeout
    ev = threading.Event()
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        ev.wait(0.01)
