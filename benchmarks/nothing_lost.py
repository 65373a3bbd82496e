"""Nothing lost, nothing repeated: what rotation and restarts cost, measured with real processes.

Rotation: one writer process writes numbered lines (`Step N: loss=..., lr=...`, a NaN every 100th
step) while this script rotates the file the ways logrotate does. `trainwatch stream` (the follower that
`tail user@host:PATH` runs on the node) counts the lines that came through, and `trainwatch tail
--headless --json` the NaN alerts, for each mode:

- create: rename, a new empty file, the writer reopens at once (a postrotate reload);
- create, late reopen: the same, but the writer writes on into the renamed file for a second first;
- copytruncate: the file is copied and truncated in place, the writer never reopens. Lines a reader
  had not read when the truncate came are in the copy only; the follower finds the copy by its bytes
  and reads them there. Lines written between the copy and the truncate are lost to everyone.

Restarts: a writer writes on while `tail --headless --alert-log A --on-alert CMD` is killed (SIGTERM and
SIGKILL in turn) and started again, CYCLES times, at moments that know nothing of what it has read; a
last run reads to the end. Each NaN must reach the alert log once as firing and once as resolved, and the
hook once, whichever run saw it.

    PYTHONPATH=$PWD python benchmarks/nothing_lost.py [--rotations 5] [--cycles 25] [--rate 400]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

NAN_EVERY = 100
TIMEOUT = 90.0

WRITER = r"""
import signal, sys, time
path, rate, seconds, late = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
reopen_at = [None]
def on_usr1(*_):
    reopen_at[0] = time.monotonic() + late
signal.signal(signal.SIGUSR1, on_usr1)
f = open(path, "a", buffering=1)
step, start = 0, time.monotonic()
while time.monotonic() - start < seconds or step % NAN_EVERY < 50:  # the last NaN resolves (20 rows)
    step += 1
    loss = "nan" if step % NAN_EVERY == 0 else f"{2.5 - step * 1e-5:.5f}"
    f.write(f"Step {step}: loss={loss}, lr=1e-4\n")
    if reopen_at[0] is not None and time.monotonic() >= reopen_at[0]:
        f.close()
        f = open(path, "a", buffering=1)
        reopen_at[0] = None
    time.sleep(max(0.0, start + step / rate - time.monotonic()))
print(step, flush=True)
""".replace("NAN_EVERY", str(NAN_EVERY))

HOOK = "import sys\nwith open(sys.argv[1], 'a') as f:\n    f.write(sys.stdin.read().replace('\\n', ' ') + '\\n')\n"


def trainwatch(*args: str, **kw: object) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "trainwatch", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True, **kw)  # type: ignore


class Lines:
    """Reads a child's stdout on a thread: JSON documents kept, the newest status line remembered."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.docs: list[dict] = []  # type: ignore[type-arg]
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self.thread.start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("{"):
                try:
                    doc = json.loads(line)
                except ValueError:
                    continue
                with self.lock:
                    self.docs.append(doc)

    def wait_for(self, predicate, limit: float = TIMEOUT) -> bool:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            with self.lock:
                if predicate(self.docs):
                    return True
            time.sleep(0.1)
        return False


def stop(proc: subprocess.Popen[str], sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        proc.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def step_of(text: str) -> int | None:
    if text.startswith("Step ") and ":" in text:
        try:
            return int(text[5:text.index(":")])
        except ValueError:
            return None
    return None


def nan_steps(docs: list[dict]) -> Counter[int]:  # type: ignore[type-arg]
    """Firing loss.nonfinite alerts printed by tail --json, by the step each began at."""
    return Counter(d.get("step") for d in docs
                   if d.get("id") == "loss.nonfinite" and d.get("state") == "firing")


def rotation(mode: str, folder: Path, rotations: int, rate: float, every: float) -> dict[str, object]:
    log = folder / "train.log"
    log.touch()
    seconds = every * (rotations + 1)
    late = 1.0 if mode == "create, late reopen" else 0.0
    stream = trainwatch("stream", "--no-gpu", "--interval", "0.1", str(log))
    tail = trainwatch("tail", "--headless", "--json", "--no-gpu", "--daemon", "--status-every", "0.5", str(log))
    got_stream, got_tail = Lines(stream), Lines(tail)
    # both follow the file: the stream's first message is flushed after its first read, tail's first status
    # line is printed once it follows
    got_stream.wait_for(lambda docs: bool(docs))
    got_tail.wait_for(lambda docs: any(d.get("type") == "status" for d in docs))
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(log), str(rate), str(seconds), str(late)],
                              stdout=subprocess.PIPE, text=True)
    for r in range(rotations):
        time.sleep(every)
        if mode == "copytruncate":
            shutil.copyfile(log, folder / f"train.log.{r + 1}")
            os.truncate(log, 0)
        else:
            log.rename(folder / f"train.log.{r + 1}")
            log.touch()
            writer.send_signal(signal.SIGUSR1)
    out, _ = writer.communicate(timeout=seconds + TIMEOUT)
    written = int(out.strip())
    nans = written // NAN_EVERY

    def seen(docs: list[dict]) -> Counter[int]:  # type: ignore[type-arg]
        return Counter(s for s in (step_of(d.get("line", "")) for d in docs if not d.get("partial"))
                       if s is not None)

    got_stream.wait_for(lambda docs: written in seen(docs), limit=30.0)
    time.sleep(1.0)
    got_tail.wait_for(lambda docs: nan_steps(docs).keys() >= {n * NAN_EVERY for n in range(1, nans + 1)},
                      limit=30.0)
    stop(stream)
    stop(tail)  # SIGTERM: what was written is read first
    lines = seen(got_stream.docs)
    alerts = nan_steps(got_tail.docs)
    return {"mode": mode, "written": written, "lost": sum(1 for s in range(1, written + 1) if s not in lines),
            "repeated": sum(n - 1 for n in lines.values() if n > 1),
            "nans": nans, "nan_lost": sum(1 for n in range(1, nans + 1) if n * NAN_EVERY not in alerts),
            "nan_repeated": sum(n - 1 for n in alerts.values() if n > 1)}


def restarts(folder: Path, cycles: int, rate: float, seed: int) -> dict[str, object]:
    rng = random.Random(seed)
    log, alerts, hooked = folder / "train.log", folder / "alerts.jsonl", folder / "hooked.jsonl"
    (folder / "hook.py").write_text(HOOK)
    log.touch()
    args = ("tail", "--headless", "--json", "--no-gpu", "--daemon", "--status-every", "0.2", "--alert-log",
            str(alerts), "--on-alert", f"{sys.executable} {folder / 'hook.py'} {hooked}", str(log))
    seconds = cycles * 4.0 + 5.0
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(log), str(rate), str(seconds), "0"],
                              stdout=subprocess.PIPE, text=True)
    kills = Counter()
    for c in range(cycles):
        proc = trainwatch(*args, cwd=folder)
        Lines(proc).wait_for(lambda docs: any(d.get("type") == "status" for d in docs), limit=TIMEOUT)
        time.sleep(rng.uniform(0.2, 2.0))  # it reads and delivers for a while
        sig = signal.SIGKILL if c % 2 else signal.SIGTERM
        kills[signal.Signals(sig).name] += 1
        stop(proc, sig)
        time.sleep(rng.uniform(0.2, 1.0))  # down: the writer goes on
    out, _ = writer.communicate(timeout=seconds + TIMEOUT)
    written = int(out.strip())
    last = trainwatch(*args, cwd=folder)
    Lines(last).wait_for(lambda docs: any(d.get("type") == "status" and d["sources"] and
                                          d["sources"][0]["lines"] >= written for d in docs))
    stop(last)
    nans = {n * NAN_EVERY for n in range(1, written // NAN_EVERY + 1)}

    def tally(path: Path, states: tuple[str, ...]) -> tuple[int, int]:
        got: Counter[tuple[str, int]] = Counter()
        if path.exists():
            for r in map(json.loads, path.read_text().splitlines()):
                if r.get("id") != "loss.nonfinite":
                    continue
                got[(r["state"], r["step"])] += 1  # the record's own episode
        want = {(st, n) for st in states for n in nans}
        lost = want - set(got)
        repeated = {k: n - 1 for k, n in got.items() if n > 1}
        if lost or repeated:
            print(f"  {path.name}: lost {sorted(lost)}, repeated {sorted(repeated.items())}")
        return len(lost), sum(repeated.values())

    log_lost, log_repeated = tally(alerts, ("firing", "resolved"))
    hook_lost, hook_repeated = tally(hooked, ("firing",))
    return {"cycles": cycles, "kills": dict(kills), "written": written, "nans": len(nans),
            "log_lost": log_lost, "log_repeated": log_repeated, "hook_lost": hook_lost,
            "hook_repeated": hook_repeated}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rotations", type=int, default=5, help="rotations per mode")
    ap.add_argument("--every", type=float, default=2.0, help="seconds between rotations")
    ap.add_argument("--rate", type=float, default=400.0, help="lines per second written")
    ap.add_argument("--cycles", type=int, default=25, help="kill-and-restart cycles")
    ap.add_argument("--seed", type=int, default=27)
    ap.add_argument("--skip-rotation", action="store_true")
    ap.add_argument("--skip-restarts", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        if not args.skip_rotation:
            print(f"rotation: {args.rotations} rotations, {args.every:g} s apart, {args.rate:g} lines/s; lines "
                  f"counted by `trainwatch stream`, NaN alerts by `trainwatch tail --headless`")
            print(f"{'mode':22} {'written':>8} {'lost':>6} {'twice':>6} "
                  f"{'NaNs':>5} {'missed':>7} {'twice':>6}")
            for i, mode in enumerate(("create", "create, late reopen", "copytruncate")):
                folder = Path(d, f"rot{i}")
                folder.mkdir()
                r = rotation(mode, folder, args.rotations, args.rate, args.every)
                print(f"{mode:22} {r['written']:>8} {r['lost']:>6} {r['repeated']:>6} "
                      f"{r['nans']:>5} {r['nan_lost']:>7} {r['nan_repeated']:>6}", flush=True)
        if not args.skip_restarts:
            folder = Path(d, "restarts")
            folder.mkdir()
            r = restarts(folder, args.cycles, args.rate / 4, args.seed)
            print(f"restarts: {r['cycles']} kill-and-restart cycles ({r['kills']}) of tail --alert-log --on-alert "
                  f"while {r['written']} lines were written ({r['nans']} NaNs)")
            print(f"  alert log: {r['log_lost']} of {2 * r['nans']} changes lost, {r['log_repeated']} repeated "
                  f"({r['log_repeated'] / r['cycles']:.2f} per restart)")
            print(f"  hook:      {r['hook_lost']} of {r['nans']} runs lost, {r['hook_repeated']} repeated "
                  f"({r['hook_repeated'] / r['cycles']:.2f} per restart)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
