"""Detection reads a bounded sample of the whole file; a file no adapter knows is still read for errors."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from trainwatch import runner
from trainwatch.sources.files import HEAD_BYTES, SAMPLE_BYTES, read_head, read_sample

ROOT = Path(__file__).resolve().parents[2]
HEALTHY = ROOT / "examples" / "logs" / "hf_healthy.log"


def banner(size: int) -> str:
    """An argument dump like the ones trainers print before the first step (no metric in it)."""
    lines, n = [], 0
    while sum(len(x) + 1 for x in lines) < size:
        lines.append(f"[INFO:swift] argument_{n}: /data/shards/part-{n:05d}.parquet (weight {n % 7}, enabled True)")
        n += 1
    return "\n".join(lines) + "\n"


def test_sample_is_bounded_and_made_of_whole_lines(tmp_path: Path) -> None:
    p = tmp_path / "big.log"
    p.write_text("".join(f"line {i} {'x' * (i % 50)}\n" for i in range(200_000)))
    sample = read_sample(p)
    assert len(sample) <= SAMPLE_BYTES < p.stat().st_size
    lines = sample.decode().rstrip("\n").split("\n")
    assert lines[0] == "line 0 " and lines[-1].startswith("line 199999 ")
    numbers = [int(m.group(1)) for m in (re.fullmatch(r"line (\d+) x*", x) for x in lines) if m]
    assert len(numbers) == len(lines)  # no line cut in two, none glued to another
    middle = [n for n in numbers if 20_000 < n < 180_000]
    assert len(middle) > 1000  # the pieces between head and tail are there


def test_small_file_sample_is_the_whole_file(tmp_path: Path) -> None:
    p = tmp_path / "small.log"
    p.write_bytes(HEALTHY.read_bytes()[:100_000])
    assert read_sample(p) == p.read_bytes()


def test_metrics_after_a_long_banner_are_detected(tmp_path: Path) -> None:
    p = tmp_path / "run.log"
    p.write_text(banner(400_000) + HEALTHY.read_text())
    assert "Step" not in read_head(p, HEAD_BYTES).decode() and "loss" not in read_head(p, HEAD_BYTES).decode()
    opened = runner.open_source(p)
    assert opened.format == "hf_console" and not opened.fallback


def test_unrecognised_text_is_read_for_errors_only(tmp_path: Path) -> None:
    p = tmp_path / "notes.txt"
    p.write_text(banner(2_000))
    opened = runner.open_source(p)
    assert opened.fallback and opened.format == runner.FALLBACK_FORMAT


def check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "trainwatch", "check", str(path), "--json"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_an_error_outside_the_sample_is_still_reported(tmp_path: Path) -> None:
    """Detection sees only a sample; the error scan sees every line, whatever was detected."""
    error = ("RuntimeError: [enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: not enough memory: "
             "you tried to allocate 21474836480 bytes.")
    head = banner(HEAD_BYTES + 60_000)  # between the head and the first spread piece
    p = tmp_path / "launcher.out"
    p.write_text(head + error + "\n" + banner(2_000_000))
    assert error.encode() not in read_sample(p)
    proc = check(p)
    assert proc.returncode == 2, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["sources"][0]["format"] == "text"
    (finding,) = doc["findings"]
    assert finding["id"] == "oom.host" and finding["evidence"]["tried_gib"] == 20.0


def test_text_with_nothing_in_it_is_unknown_not_healthy(tmp_path: Path) -> None:
    p = tmp_path / "notes.txt"
    p.write_text(banner(500_000))
    proc = check(p)
    assert proc.returncode == 3 and "no known log format" in proc.stderr + proc.stdout  # --json errors are JSON
    assert "Traceback" not in proc.stderr
