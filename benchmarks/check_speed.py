"""How fast is `trainwatch check` next to `grep -c loss`, and how much memory does it take?

Generates logs of each shape (~1 GB by default) and times `trainwatch check` and `grep -c loss` on each
in the same run, printing MB/s and peak RSS, then `tail --headless` through the same file as a backlog:
- console: a Hugging Face Trainer console, tqdm redraws joined by `\r`, one dict a line;
- progress: the same run under a non-tty tqdm (a Slurm `.out`): every redraw ends in `\n`, a dict every
  ~11 lines;
- jsonl: nested JSON lines;
- flatjsonl: flat JSON rows of 6 metrics, about 120 bytes each;
- table: a space-aligned metrics table of mixed widths under a header, as the template reader reads it.
Targets (issue 26): the console shapes (console, progress, table) within 3x of grep and the JSON ones
within 10x, peak memory under 150 MB whatever the size; `tail --headless` through a backlog within 1.5x
of check.

    python benchmarks/check_speed.py [--size-mb 1024] [--dir /tmp/twbench] [--keep] [--only SHAPE ...]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

BAR = "\u2588"


TRACEBACK = """Traceback (most recent call last):
  File "train.py", line 88, in <module>
    trainer.train()
  File "transformers/trainer.py", line 2123, in train
    loss = self.training_step(model, inputs)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of \
79.10 GiB of which 1.02 GiB is free.
"""


BANNER = "***** Running training *****\n  Num examples = 1,000,000\n  Total optimization steps = 10,000,000\n"


def write_log(path: Path, size: int, chunks: Iterator[str], head: str = "", tail: str = "") -> None:
    """`head`, then chunks from the endless `chunks` until about `size` bytes are written, then `tail`;
    written in batches, so a gigabyte costs a few thousand writes."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(head)
        written = 0
        buf: list[str] = []
        for chunk in chunks:
            if written >= size:
                break
            buf.append(chunk)
            written += len(chunk.encode())
            if len(buf) >= 2000:
                f.write("".join(buf))
                buf.clear()
        f.write("".join(buf))
        f.write(tail)


def make_console(path: Path, size: int) -> None:
    """An HF Trainer console log: tqdm redraws sharing lines through carriage returns, transformers 4
    dicts and transformers 5 ones (quoted numbers), an eval every 500 logged steps, a NaN stretch at
    60% of the file, and an out-of-memory traceback at the end (so a follower sees the run end)."""
    def chunks() -> Iterator[str]:
        rng = random.Random(1)
        total = 10_000_000
        step = written = 0
        nan_from, nan_to = int(size * 0.6), int(size * 0.6) + 200_000
        while True:
            segs = []
            for _ in range(10):
                step += 1
                pct = step * 100 // total
                fill = BAR * (pct // 10)
                segs.append(f"\r{pct:3d}%|{fill:<10}| {step}/{total} "
                            f"[01:{step % 60:02d}<9:59:59, {rng.uniform(3, 5):.2f}it/s]")
            loss = 1.2 + 2.0 * math.exp(-step / 3000) + rng.gauss(0, 0.02)  # falls fast, then settles
            shown = "nan" if nan_from <= written < nan_to else f"{loss:.4f}"
            if (step // 10) % 2:  # transformers 4: bare numbers
                d = (f"{{'loss': {shown}, 'grad_norm': {rng.uniform(0.5, 2):.6f}, "
                     f"'learning_rate': {2e-5 * (1 - step / total):.6e}, 'epoch': {step / 1e6:.2f}}}")
            else:  # transformers 5: numbers quoted
                d = (f"{{'loss': '{shown}', 'grad_norm': '{rng.uniform(0.5, 2):.4f}', "
                     f"'learning_rate': '{2e-5 * (1 - step / total):.4e}', 'epoch': '{step / 1e6:.2f}'}}")
            chunk = "".join(segs) + "\r" + " " * 60 + "\r" + d + "\n"
            if step % 5000 == 0:
                chunk += (f"{{'eval_loss': {loss + 0.1:.4f}, 'eval_runtime': 12.5, 'eval_samples_per_second': 80.1, "
                          f"'epoch': {step / 1e6:.2f}}}\n")
            written += len(chunk.encode())
            yield chunk

    write_log(path, size, chunks(), BANNER, TRACEBACK)


def make_progress(path: Path, size: int) -> None:
    """A non-tty tqdm under Slurm: each redraw of the bar is a line of its own, and the Trainer's dict
    comes every ~11 lines."""
    def chunks() -> Iterator[str]:
        rng = random.Random(3)
        total = 10_000_000
        step = 0
        while True:
            for _ in range(10):
                step += 1
                pct = step * 100 // total
                yield (f"{pct:3d}%|{BAR * (pct // 10):<10}| {step}/{total} "
                       f"[01:{step % 60:02d}<9:59:59, {rng.uniform(3, 5):.2f}it/s]\n")
            loss = 1.2 + 2.0 * math.exp(-step / 3000) + rng.gauss(0, 0.02)
            yield (f"{{'loss': {loss:.4f}, 'grad_norm': {rng.uniform(0.5, 2):.6f}, "
                   f"'learning_rate': {2e-5 * (1 - step / total):.6e}, 'epoch': {step / 1e6:.2f}}}\n")

    write_log(path, size, chunks(), BANNER, TRACEBACK)


def make_flat_jsonl(path: Path, size: int) -> None:
    """Flat JSON rows of six metrics, about 120 bytes each: the per-row costs, not the parsing, show."""
    def chunks() -> Iterator[str]:
        rng = random.Random(4)
        for step in itertools.count(1):
            yield (f'{{"step": {step}, "loss": {1.2 + 2.0 * math.exp(-step / 3000) + rng.gauss(0, 0.02):.5f}, '
                   f'"lr": 0.0001, "grad_norm": {rng.uniform(0.5, 2):.4f}, "tokens_per_sec": '
                   f'{rng.uniform(9e4, 1e5):.1f}, "epoch": {step / 1e5:.4f}}}\n')

    write_log(path, size, chunks())


def make_table(path: Path, size: int) -> None:
    """A space-aligned metrics table under a header row, values of varying widths, the header printed
    again every 1000 rows (as loops that print a table per epoch do)."""
    def chunks() -> Iterator[str]:
        rng = random.Random(5)
        header = f"{'epoch':>5}  {'iter':>8}  {'loss':>9}  {'lr':>9}  {'grad_norm':>9}  {'acc':>7}  {'time':>6}\n"
        for step in itertools.count(1):
            if step % 1000 == 1:
                yield header
            loss = 1.2 + 2.0 * math.exp(-step / 3000) + rng.gauss(0, 0.02)
            acc = min(0.99, 0.1 + step / 2e5)
            yield (f"{step // 1000 + 1:>5}  {step:>8}  {loss:>9.{rng.choice((3, 4, 5))}f}  {1e-4:>9.2e}  "
                   f"{rng.uniform(0.5, 2):>9.3f}  {acc:>7.4f}  {rng.uniform(0.1, 0.3):>6.3f}\n")

    write_log(path, size, chunks())


def make_jsonl(path: Path, size: int) -> None:
    """Nested JSON lines: a metrics object with a sub-object on every line."""
    def chunks() -> Iterator[str]:
        rng = random.Random(2)
        t0 = 1.7e9
        for step in itertools.count(1):
            rec = {"step": step, "time": t0 + step * 0.5,
                   "loss": round(1.2 + 2.0 * math.exp(-step / 3000) + rng.gauss(0, 0.02), 5),
                   "lr": 1e-4, "grad_norm": round(rng.uniform(0.5, 2), 4),
                   "tokens_per_sec": round(rng.uniform(9e4, 1e5), 1),
                   "train": {"epoch": round(step / 1e5, 4)}}
            yield json.dumps(rec) + "\n"

    write_log(path, size, chunks())


def run_measured(cmd: list[str]) -> tuple[float, int, int]:
    """Wall seconds, exit code and peak RSS in MB of one command, run alone under a small wrapper
    (getrusage's children figure is a maximum over every child a process ever had). Output goes to a
    pipe, not /dev/null: GNU grep stops at the first match when it sees its output is /dev/null."""
    wrapper = ("import resource,subprocess,sys,time,json;t=time.perf_counter();"
               "rc=subprocess.run(sys.argv[1:],stdout=subprocess.PIPE).returncode;"
               "print(json.dumps([time.perf_counter()-t,rc,resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))")
    out = subprocess.run([sys.executable, "-c", wrapper, *cmd], capture_output=True, text=True, check=True)
    wall, rc, rss_kb = json.loads(out.stdout)
    return wall, rc, rss_kb // 1024


def tail_backlog(cmd: list[str], path: Path) -> float:
    """Seconds until a headless follower's status line says it has read every line of the file (it then
    follows the end), from its start."""
    with open(path, "rb") as f:
        total = sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 24), b""))
    t = time.perf_counter()
    proc = subprocess.Popen([*cmd, str(path)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            if any(s.get("lines", 0) >= total for s in doc.get("sources", ())):
                return time.perf_counter() - t
        proc.wait()
        # it ended by itself: the run ended in its backlog (the console log's traceback), all of it read
        return time.perf_counter() - t if proc.returncode in (0, 1, 2) else math.nan
    finally:
        proc.terminate()
        proc.wait()


SHAPES: dict[str, tuple[str, Callable[[Path, int], None]]] = {
    "console": ("hf_console.log", make_console),
    "progress": ("slurm_progress.out", make_progress),
    "jsonl": ("metrics.jsonl", make_jsonl),
    "flatjsonl": ("flat.jsonl", make_flat_jsonl),
    "table": ("table.log", make_table),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--dir", default="/tmp/trainwatch-bench")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    ap.add_argument("--only", nargs="+", choices=tuple(SHAPES), help="measure these shapes only")
    args = ap.parse_args()
    d = Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    size = args.size_mb << 20
    files = {kind: d / name for kind, (name, _) in SHAPES.items() if not args.only or kind in args.only}
    for kind, path in files.items():
        if not path.exists() or path.stat().st_size < size * 0.95:
            t = time.perf_counter()
            SHAPES[kind][1](path, size)
            print(f"generated {path} ({path.stat().st_size / 2**20:.0f} MB) in {time.perf_counter() - t:.0f}s")
    tw = [sys.executable, "-m", "trainwatch"]
    for kind, path in files.items():
        mb = path.stat().st_size / 2**20
        subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL)  # warm the page cache for both
        g_wall, _, _ = run_measured(["grep", "-c", "loss", str(path)])
        t_wall, code, peak = run_measured([*tw, "check", str(path)])
        print(f"{kind:9} {mb:7.0f} MB | grep -c loss {g_wall:6.2f}s ({mb / g_wall:7.0f} MB/s) | "
              f"trainwatch check {t_wall:6.2f}s ({mb / t_wall:6.0f} MB/s, exit {code}) | "
              f"ratio {t_wall / g_wall:5.1f}x grep | peak RSS {peak} MB")
        l_wall = tail_backlog([*tw, "tail", "--headless", "--no-gpu", "--json", "--status-every", "0.2"], path)
        print(f"{'':9} {'':7}    | tail --headless through the backlog {l_wall:6.2f}s "
              f"({l_wall / t_wall:4.2f}x check)")
    if not args.keep:
        shutil.rmtree(d, ignore_errors=True)
    os.sync()


if __name__ == "__main__":
    main()
