"""speed.mfu: model FLOPs utilisation, when the model size (--params) and the GPU's peak are known.

MFU = 6 x params x tokens/s / (GPUs x peak). tokens/s is taken as the whole job's throughput; the
GPU count is the run's world size when a banner gave it, else the GPUs NVML sees. Peaks come from
data/gpu_peaks.yaml (dense bf16), matched against the device name NVML reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

from trainwatch import yamltext
from trainwatch.model import GPU_SOURCE, Finding
from trainwatch.rules.base import Rule, RuleContext
from trainwatch.rules.registry import register
from trainwatch.store import Point, Series


@lru_cache(maxsize=1)
def peak_table() -> list[tuple[str, float]]:
    text = resources.files("trainwatch").joinpath("data/gpu_peaks.yaml").read_text(encoding="utf-8")
    table = yamltext.load(text)["peaks_tflops"]
    return sorted(((str(k).lower(), float(v) * 1e12) for k, v in table.items()), key=lambda kv: -len(kv[0]))


def peak_flops(gpu_name: str) -> float | None:
    """The dense bf16 peak of a GPU by its NVML name, or None when the table does not know it."""
    low = gpu_name.lower()
    for key, flops in peak_table():
        if key in low:
            return flops
    return None


@dataclass(frozen=True)
class MfuParams:
    """Parameters of speed.mfu; their meaning and defaults are in presets/base-live.yaml."""

    mfu_below: float


@register("speed.mfu")
class Mfu(Rule):
    id = "speed.mfu"
    params = MfuParams
    p: MfuParams
    watches = ("tokens_per_sec",)

    def gate(self, ctx: RuleContext, series: Series, step: np.ndarray, value: np.ndarray) -> np.ndarray | None:
        """No row can be judged without the model size and a GPU's name (check on a log alone has neither)."""
        st = ctx.sources.get(series.source)
        gpu = ctx.sources.get(GPU_SOURCE)
        if st is None or gpu is None or not isinstance(st.facts.get("params"), (int, float)) \
                or not gpu.facts.get("gpu_names"):
            return np.zeros(len(value), dtype=bool)
        return None

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        st = ctx.sources.get(series.source)
        gpu = ctx.sources.get(GPU_SOURCE)
        if st is None or gpu is None or point.value <= 0:
            return None
        params = st.facts.get("params")
        names = gpu.facts.get("gpu_names") or []
        if not isinstance(params, (int, float)) or params <= 0 or not names:
            return None
        peak = peak_flops(str(names[0]))
        if peak is None:
            return None
        world = st.facts.get("world_size")
        n = int(world) if isinstance(world, int) and world > 0 else len(names)
        mfu = 6.0 * float(params) * point.value / (n * peak)
        if mfu > 1.2 or mfu >= self.p.mfu_below:
            return None  # above 1.2 the throughput is not what we assumed (per GPU, or not tokens)
        return Finding(message=f"MFU {mfu:.1%} ({point.value:,.0f} tokens/s, {float(params) / 1e9:.2g}B params, "
                               f"{n} x {names[0]} at {peak / 1e12:.0f} TFLOP/s bf16)",
                       subject="mfu", evidence={"mfu": mfu, "tokens_per_sec": point.value, "params": params,
                                                "gpus": n, "gpu": names[0], "peak_tflops": peak / 1e12})
