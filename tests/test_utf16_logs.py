"""A UTF-16 log (what Windows PowerShell's `>` writes) is read by `check` as the text it holds; `tail`
says in one line why it does not follow one."""

from __future__ import annotations

import codecs
import json
import subprocess
import sys
from pathlib import Path

LINES = [f"Epoch {e}/30 | step {e * 100} | loss: {2.0 - e * 0.05:.4f} | lr: 0.001" for e in range(1, 21)]


def _write(path: Path, encoding: str) -> Path:
    text = "\r\n".join(["[Train] Device: CPU", *LINES, ""])
    bom = codecs.BOM_UTF16_BE if encoding == "utf-16-be" else b""  # (plain utf-16 writes its own)
    path.write_bytes(bom + text.encode(encoding))
    return path


def _check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "trainwatch", "check", "--json", str(path)], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_check_reads_a_utf16_log_as_its_utf8_twin(tmp_path: Path) -> None:
    for enc in ("utf-16", "utf-16-be"):
        wide = _check(_write(tmp_path / f"{enc}.log", enc))
        assert wide.returncode in (0, 1), wide.stderr
        plain = _check(_write(tmp_path / "plain.log", "utf-8"))
        a, b = json.loads(wide.stdout)["sources"][0], json.loads(plain.stdout)["sources"][0]
        assert a["metrics"]["loss"] == b["metrics"]["loss"] and a["last_step"] == b["last_step"] == 2000


def test_tail_says_why_it_does_not_follow_a_utf16_log(tmp_path: Path) -> None:
    log = _write(tmp_path / "ps.log", "utf-16")
    r = subprocess.run([sys.executable, "-m", "trainwatch", "tail", "--headless", "--no-gpu", str(log)],
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert "UTF-16 text" in r.stderr and "Traceback" not in r.stderr
    assert r.returncode == 3
