"""Does a change keep `trainwatch check --json` byte-identical? Runs two source trees on the same logs.

Every file of examples/logs and ../shared/corpus, plus generated JSON-lines logs that stress the
JSON-lines adapter's fast path (nested objects, lists, strings, duplicate keys, deep nesting, huge
steps), is checked by `python -m trainwatch check --json` with the `--before` tree first on the import
path, then with the `--after` tree, under the scanner named by TRAINWATCH_SCANNER (native|reference).
Only wall-clock fields (`*_at`) are dropped before comparing; the script exits 1 on any difference.

    python benchmarks/compare_check.py --before /tmp/main-clone [--after .] [--scanner native]

The corpus is ../shared/corpus beside the checkout, or where $TRAINWATCH_CORPUS says.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _nested_line(rng: random.Random, step: int) -> str:
    """One JSON-lines record with some of what real and odd writers print."""
    rec: dict[str, Any] = {"step": step, "loss": round(rng.uniform(0.5, 3), 4)}
    kind = rng.randrange(14)
    if kind == 0:
        rec["train"] = {"epoch": step / 100, "grad": {"norm": rng.uniform(0, 2)}}
    elif kind == 1:
        rec["eval"] = {"loss": 1.0, "acc": [0.1, 0.2]}
    elif kind == 2:
        rec["mode"] = rng.choice(["train", "val"])
        rec["iter"] = step % 7
        rec["epoch"] = step // 7
    elif kind == 3:
        rec["deep"] = json.loads("".join(f'{{"k{k}": {k}, "n": ' for k in range(9)) + "{}" + "}" * 9)
    elif kind == 4:
        rec["total_steps"] = 1000
    elif kind == 5:
        rec["lr"] = {}
    elif kind == 6:
        rec["train/x"] = 1.5
        rec["train"] = {"x": 2.5}
    elif kind == 7:
        rec["global_step"] = 2**60 + step
    elif kind == 8:
        rec["loss"] = {"a": 1}
    elif kind == 9:
        rec["tag"] = 'a"b}{['
        rec["m"] = {"s": "]\\"}
    elif kind == 10:
        rec["neg"] = -0.0
    line = json.dumps(rec)
    if kind == 11:
        line = line[:-1] + ', "train": {"a": 1}, "train": {"b": 2}}'  # a repeated object key
    elif kind == 12:
        line = line[:-1] + ', "z": {"a": 1}, "z": 3}'
    elif kind == 13:
        line = line[:-1] + ', "x": NaN, "y": -0, "w": 1e400}'
    return line


def generated(directory: Path) -> list[Path]:
    """A stress log of mixed records and a plain nested one (the shape of check_speed.py's log)."""
    rng = random.Random(9)
    mixed = directory / "mixed.jsonl"
    mixed.write_text("".join(_nested_line(rng, s) + "\n" for s in range(1, 3001)))
    plain = directory / "nested.jsonl"
    plain.write_text("".join(json.dumps({"step": s, "time": 1.7e9 + s, "loss": 2 - s / 5000,
                                         "train": {"epoch": s / 1e3, "grad": {"norm": 1 + (s % 13) / 10}}}) + "\n"
                             for s in range(1, 5001)))
    return [mixed, plain]


def _strip_clock(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip_clock(v) for k, v in obj.items() if not k.endswith("_at")}
    if isinstance(obj, list):
        return [_strip_clock(v) for v in obj]
    return obj


def check(tree: Path, path: Path, scanner: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(tree), TRAINWATCH_SCANNER=scanner)
    # run from the tree itself: `-m` puts the working directory first on the import path, ahead of PYTHONPATH
    out = subprocess.run([sys.executable, "-m", "trainwatch", "check", "--json", str(path)], env=env, cwd=tree,
                         capture_output=True, text=True, check=False)
    try:
        return json.dumps(_strip_clock(json.loads(out.stdout)), indent=1)
    except ValueError:
        return f"exit {out.returncode}\n{out.stdout}\n{out.stderr}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", type=Path, required=True)
    ap.add_argument("--after", type=Path, default=ROOT)
    ap.add_argument("--scanner", default=os.environ.get("TRAINWATCH_SCANNER", "native"))
    args = ap.parse_args()
    files = sorted(p for p in (ROOT / "examples" / "logs").iterdir() if p.is_file())
    corpus = Path(os.environ.get("TRAINWATCH_CORPUS") or ROOT.parent / "shared" / "corpus")
    if corpus.is_dir():
        files += sorted(p for p in corpus.iterdir() if p.is_file() and p.name != "README.md")
    with tempfile.TemporaryDirectory() as tmp:
        files += generated(Path(tmp))
        bad = 0
        for path in files:
            same = check(args.before, path, args.scanner) == check(args.after, path, args.scanner)
            bad += not same
            print(f"{'same' if same else 'DIFFERENT'}  {path.name}")
    print(f"{len(files) - bad}/{len(files)} identical ({args.scanner} scanner)")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
