"""Writes the small GPU traces the live tests replay (one JSON object per sample, 1 s apart).

Run once to regenerate: python tests/live/traces/make_traces.py. The numbers are invented but
shaped like real H100 readings: MiB, watts, MHz, degrees C, NVML throttle-reason bit masks.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
TOTAL = 81559.0


def gpu(i: int = 0, **kw: float) -> dict:
    base = {"index": i, "name": "NVIDIA H100 80GB HBM3", "util": 97.0, "mem_util": 60.0, "mem_used": 61000.0,
            "mem_total": TOTAL, "temp": 68.0, "power": 610.0, "power_limit": 700.0, "sm_clock": 1980.0,
            "throttle": 0, "ecc_corrected": 0.0, "ecc_uncorrected": 0.0, "retired_pages": 0.0}
    base.update(kw)
    return base


def write(name: str, frames: list[list[dict]]) -> None:
    with open(HERE / name, "w") as f:
        for frame in frames:
            f.write(json.dumps({"gpus": frame}) + "\n")


def main() -> None:
    write("healthy.jsonl", [[gpu(0, util=95.0 + i % 5, mem_used=61000.0 + (i % 4) * 300,
                                 throttle=4 if i % 10 == 0 else 0),
                             gpu(1, util=94.0 + i % 6, mem_used=60800.0 + (i % 4) * 300)] for i in range(90)])
    write("idle_stalled.jsonl", [[gpu(0, util=0.0, power=72.0, sm_clock=345.0, throttle=1)] for _ in range(30)])
    write("collective_hang.jsonl", [[gpu(0, util=100.0, power=128.0), gpu(1, util=100.0, power=131.0)]
                                    for _ in range(30)])
    write("memory_creep.jsonl", [[gpu(0, mem_used=40000.0 + i * 180 + (i % 5) * 250)] for i in range(120)])
    write("near_oom.jsonl", [[gpu(0, mem_used=79100.0 + (i % 3) * 100)] for i in range(20)])
    write("throttling.jsonl", [[gpu(0, temp=91.0, sm_clock=1095.0, throttle=0x40 | 0x20, power=480.0)]
                               for _ in range(20)])
    write("starved.jsonl", [[gpu(0, util=100.0 if i % 3 == 0 else 2.0, power=300.0)] for i in range(40)])
    # a healthy bf16 loop: idle while the model loads, then 99-100% once steps run (a real H200's shape)
    write("load_then_busy.jsonl", [[gpu(0, util=0.0 if i < 20 else 99.0 + i % 2, power=90.0 if i < 20 else 650.0)]
                                   for i in range(90)])
    # busy, idle through a 40 s stall (memory held), busy again
    write("busy_stall_busy.jsonl", [[gpu(0, util=0.0 if 30 <= i < 70 else 99.0 + i % 2)] for i in range(120)])
    write("gpu_lost.jsonl", [[gpu(0)] for _ in range(5)] +
          [[{"index": 0, "name": "NVIDIA H100 80GB HBM3", "lost": True, "error": "GPU is lost"}]] * 5)
    write("ecc_errors.jsonl", [[gpu(0, ecc_uncorrected=0.0 if i < 5 else 2.0, retired_pages=0.0 if i < 5 else 1.0)]
                               for i in range(10)])


if __name__ == "__main__":
    main()
