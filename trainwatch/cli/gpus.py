"""`trainwatch gpus`: one reading of every GPU as a table (like gpustat), or as JSON."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from trainwatch.cli import EXIT_UNKNOWN
from trainwatch.sources.gpu import GpuSampler, ReplayBackend, device_key, throttle_names
from trainwatch.sources.nvml import default_backend
from trainwatch.textsafe import plain


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("gpus", help="show every GPU once (NVML)", description="One reading of every visible GPU.")
    p.add_argument("--json", action="store_true", help="print a JSON list of readings")
    p.add_argument("--replay", metavar="TRACE", help="read from a recorded JSON-lines trace instead of NVML")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    notices: list[str] = []
    backend = ReplayBackend(args.replay) if args.replay else default_backend()
    sampler = GpuSampler(backend, notice=notices.append)
    if not sampler.open():
        if args.json:  # an error as --json errors are, with the readings' keys a reader expects
            error = plain(notices[-1]) if notices else "no GPU telemetry available"
            print(json.dumps({"gpus": [], "info": [plain(n) for n in notices], "error": error,
                              "exit_code": EXIT_UNKNOWN}))
        else:
            for n in notices:
                print(f"trainwatch: {plain(n)}", file=sys.stderr)
        return EXIT_UNKNOWN
    sampler.sample()
    devices = sampler.devices()
    sampler.stop()
    if args.json:
        print(json.dumps({"gpus": devices, "info": [plain(n) for n in notices]}))
    else:
        for line in table(devices):
            print(line)
        for n in notices:
            print(f"trainwatch: {plain(n)}", file=sys.stderr)
    return 2 if any(d.get("lost") for d in devices) else 0


def table(devices: list[dict[str, Any]]) -> list[str]:
    out = []
    for d in devices:
        key = device_key(d)
        name = plain(str(d.get("name", "GPU")))
        if d.get("lost"):
            out.append(f"[{key}] {name:<28} LOST: {plain(str(d.get('error', '')))}")
            continue
        cells = [f"[{key}] {name:<28}"]
        if "temp" in d:
            cells.append(f"{d['temp']:3.0f}C")
        if "util" in d:
            cells.append(f"{d['util']:3.0f} %")
        if "mem_used" in d and "mem_total" in d:
            cells.append(f"{d['mem_used']:6.0f} / {d['mem_total']:6.0f} MB")
        if "power" in d:
            limit = f" / {d['power_limit']:.0f}" if "power_limit" in d else ""
            cells.append(f"{d['power']:4.0f}{limit} W")
        if "sm_clock" in d:
            cells.append(f"{d['sm_clock']:.0f} MHz")
        reasons = [r for r in throttle_names(d.get("throttle")) if r not in ("gpu_idle", "app_clocks")]
        if reasons:
            cells.append("throttle: " + ",".join(reasons))
        if d.get("ecc_uncorrected"):
            cells.append(f"ECC {d['ecc_uncorrected']:.0f} uncorrected")
        out.append(" | ".join(cells))
    return out
