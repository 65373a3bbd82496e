"""ruff and mypy as tests, so the README's test command (and CI, which runs it) enforces them.

Their settings live in pyproject.toml; these tests only run the tools from the repository root and fail
with the tools' own report. Without the tools (an install without the test extra) they skip.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec(tool) is None:
        pytest.skip(f"{tool} is not installed (pip install -e '.[test]' brings it)")
    return subprocess.run([sys.executable, "-m", tool, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, check=False)


def test_ruff_finds_nothing() -> None:
    r = _run("ruff", "check", "--no-cache", "--output-format", "concise", ".")
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_finds_nothing(tmp_path: Path) -> None:
    # a throwaway cache: nothing written into the tree, and each run checks from scratch (about 4 s)
    r = _run("mypy", "--cache-dir", str(tmp_path / "mypy-cache"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Success" in r.stdout, r.stdout
