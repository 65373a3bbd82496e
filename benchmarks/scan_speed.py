"""How fast is the scanner alone, native next to the pure-Python reference, and next to `grep -c loss`?

Generates a Hugging Face Trainer console log (tqdm redraws, dicts) and a JSON-lines log with the
generators of check_speed.py, then, in the same run, times `grep -c loss` and each scanner reading the
file in 8 MiB blocks (feed + finish, with the error-signature keywords of data/signatures.yaml). Each
scanner runs in its own process, so its peak RSS is its own; the time printed is the scanning loop's.

    python benchmarks/scan_speed.py [--size-mb 200] [--dir /tmp/twscan] [--keep] [--scanners native,reference]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_speed import make_console, make_jsonl, run_measured

BLOCK = 8 << 20


def scan_file(which: str, path: str) -> None:
    """Child mode: scan `path` with one scanner and print seconds, lines, values and key count as JSON."""
    from trainwatch.adapters.signatures import signature_keywords

    if which == "native":
        from trainwatch.scan.native import Scanner
    else:
        from trainwatch.scan.reference import Scanner  # type: ignore[assignment]
    scanner = Scanner(signature_keywords())
    lines = values = 0
    t = time.perf_counter()
    with open(path, "rb") as f:
        while block := f.read(BLOCK):
            c = scanner.feed(block)
            lines += len(c)
            values += c.ent_value.size + c.kv_value.size
        c = scanner.finish()
        lines += len(c)
    print(json.dumps({"seconds": time.perf_counter() - t, "lines": lines, "values": values,
                      "keys": len(scanner.keys)}))


def measure(which: str, path: Path) -> tuple[dict[str, float], int]:
    """The child's own figures and its peak RSS in MB."""
    wrapper = ("import resource,subprocess,sys,json;"
               "out=subprocess.run(sys.argv[1:],stdout=subprocess.PIPE,check=True).stdout;"
               "print(json.dumps([json.loads(out),resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))")
    cmd = [sys.executable, __file__, "--child", which, str(path)]
    out = subprocess.run([sys.executable, "-c", wrapper, *cmd], capture_output=True, text=True, check=True)
    figures, rss_kb = json.loads(out.stdout)
    return figures, rss_kb // 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--dir", default="/tmp/trainwatch-scan-bench")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    ap.add_argument("--scanners", default="native,reference")
    ap.add_argument("--child", nargs=2, metavar=("SCANNER", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        scan_file(*args.child)
        return
    d = Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    size = args.size_mb << 20
    files = {"console": (d / "hf_console.log", make_console), "jsonl": (d / "metrics.jsonl", make_jsonl)}
    for path, make in files.values():
        if not path.exists() or path.stat().st_size < size * 0.95:
            make(path, size)
    for kind, (path, _) in files.items():
        mb = path.stat().st_size / 2**20
        subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL)  # warm the page cache for every reader
        g_wall, _, _ = run_measured(["grep", "-c", "loss", str(path)])
        print(f"{kind:8} {mb:5.0f} MB | grep -c loss {g_wall:6.2f}s ({mb / g_wall:6.0f} MB/s)")
        for which in args.scanners.split(","):
            figures, peak = measure(which, path)
            s = figures["seconds"]
            print(f"{'':8} {'':8} | {which:9} scan {s:6.2f}s ({mb / s:6.0f} MB/s, {s / g_wall:5.1f}x grep) | "
                  f"{figures['lines']:,} lines, {figures['values']:,} values | peak RSS {peak} MB")
    if not args.keep:
        shutil.rmtree(d, ignore_errors=True)
    os.sync()


if __name__ == "__main__":
    main()
