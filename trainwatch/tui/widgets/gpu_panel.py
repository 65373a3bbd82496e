"""Per-GPU utilisation, memory, temperature and power with sparklines; says so plainly when there is none."""

from __future__ import annotations

import re
from typing import Any

from textual.content import Content
from textual.widgets import Static

from trainwatch.model import GPU_SOURCE
from trainwatch.tui.charts import fmt, sparkline
from trainwatch.view.snapshot import MetricView


class GpuPanel(Static):
    DEFAULT_CSS = """
    GpuPanel { height: auto; max-height: 12; padding: 0 1; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(markup=False, **kwargs)  # type: ignore[arg-type]
        self.border_title = "GPUs"
        self._shown: object = None

    def show(self, devices: list[dict[str, Any]], metrics: list[MetricView], info: list[str]) -> None:
        gpu = {m.name: m for m in metrics if m.source == GPU_SOURCE or m.name.startswith("gpu")}
        key = (tuple(sorted(gpu.items())), tuple(tuple(sorted(d.items())) for d in devices), tuple(info),
               self.content_size.width)
        if key == self._shown:
            return
        self._shown = key
        self.update(render_gpus(devices, gpu, info, self.content_size.width or 80))


_KEY = re.compile(r"gpu(\d+)(?:-mig\d+)?(?:@(.+))?")  # gpu0, gpu0-mig1, gpu0@node1: a device's series prefix


def _dev_key(d: dict[str, Any], i: int) -> str:
    key = d.get("key")
    if isinstance(key, str) and key:
        return key
    v = d.get("index", i)
    return f"gpu{int(v) if isinstance(v, (int, float)) else i}"


def _order(key: str) -> tuple[str, int, str]:
    """This machine's GPUs first, then each node's, by index."""
    m = _KEY.fullmatch(key)
    return (m.group(2) or "", int(m.group(1)), key) if m else ("~", 0, key)


def render_gpus(devices: list[dict[str, Any]], gpu: dict[str, MetricView], info: list[str], width: int) -> Content:
    keys = sorted({_dev_key(d, i) for i, d in enumerate(devices)}
                  | {n.split("/")[0] for n in gpu if "/" in n and _KEY.fullmatch(n.split("/")[0])}, key=_order)
    if not keys:
        why = next((line for line in info if "gpu" in line.lower() or "nvml" in line.lower()), "")
        return Content.styled("No GPU telemetry available" + (f": {why}" if why else "."), "$warning")
    by_key = {_dev_key(d, i): d for i, d in enumerate(devices)}
    spark_w = max(4, min(20, (width - 60) // 2))
    rows = []
    for k in keys:
        d = by_key.get(k, {})

        def last(key: str, k: str = k, d: dict[str, Any] = d) -> float | None:
            v = d.get(key)
            if isinstance(v, (int, float)):
                return float(v)
            m = gpu.get(f"{k}/{key}")
            return m.last if m is not None else None

        def spark(key: str, k: str = k) -> Content:
            m = gpu.get(f"{k}/{key}")
            cells = sparkline(m.spark, spark_w) if m is not None else []
            return Content.assemble(*[(c, "$error" if bad else "$primary") for c, bad in cells])

        util, used, total = last("util"), last("mem_used"), last("mem_total")
        temp, power, limit = last("temp"), last("power"), last("power_limit")
        mem = f"{fmt(used)}/{fmt(total)}" if total else fmt(used)
        pw = f"{fmt(power)}/{fmt(limit)}W" if limit else f"{fmt(power)}W"
        name = str(d.get("name", ""))[:18]
        rows.append(Content.assemble((f"{k} ", "bold"), (f"{name:<18} " if name else ""),
                                     f"util {fmt(util):>5}% ", spark("util"), f" mem {mem} ", spark("mem_used"),
                                     f" {fmt(temp)}°C {pw}"))
    return Content("\n").join(rows)
