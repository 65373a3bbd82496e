"""Rules on GPU telemetry (series gpu0/util, gpu0/mem_used, ... from source "gpu"), alone or with the log.

hang.stopped and hang.collective need both: the log silent for long, and the GPUs idle (the process
died or its loader is deadlocked) or busy at low power (ranks spinning inside a collective).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from trainwatch.model import GPU_SOURCE, Event, EventKind, Finding
from trainwatch.rules.base import Rule, RuleContext, SourceState, median
from trainwatch.rules.params import SilenceParams
from trainwatch.rules.registry import register
from trainwatch.rules.stall import StepClock
from trainwatch.rulespec import RuleSpec
from trainwatch.sources.gpu import throttle_names
from trainwatch.store import MetricStore, Point, Series
from trainwatch.timefmt import span


def gpu_keys(store: MetricStore, field: str = "util") -> list[str]:
    """Device keys (gpu0, gpu1, gpu0-mig1...) that report `field`."""
    suffix = "/" + field
    return sorted(s.name[: -len(suffix)] for s in store if s.source == GPU_SOURCE and s.name.endswith(suffix))


def window(store: MetricStore, key: str, field: str, now: float, seconds: float) -> list[float]:
    s = store.get(f"{key}/{field}", GPU_SOURCE)
    if s is None:
        return []
    out = []
    for p in reversed(s.recent):
        if p.time is not None and now - p.time > seconds:
            break
        out.append(p.value)
    return out


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def _device(series: Series) -> str:
    return series.name.split("/", 1)[0]


@dataclass(frozen=True)
class GpuSilenceParams(SilenceParams):
    """The stall warning's limits, and the GPU readings that count: this many seconds' worth, at least
    this many of them."""

    window_s: float
    min_readings: int


class _StallCorrelation(Rule):
    """A log source silent past the stall warning level, judged together with the GPUs."""

    p: GpuSilenceParams

    events = (EventKind.EVAL_START, EventKind.CHECKPOINT, EventKind.TRACEBACK)
    ticks = True

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self.steps = StepClock()

    def on_event(self, ctx: RuleContext, event: Event) -> Finding | None:
        self.steps.event(ctx, event)
        return None

    def on_tick(self, ctx: RuleContext) -> Iterable[tuple[str, str, Finding | None]]:
        self.steps.observe(ctx)
        keys = gpu_keys(ctx.store)
        out: list[tuple[str, str, Finding | None]] = []
        for name, st in ctx.sources.items():
            if name == GPU_SOURCE:
                continue
            silence = self._silence(ctx, name, st)
            finding = None
            if silence is not None and keys:
                finding = self.judge(ctx, keys, silence, st)
            out.append((name, self.spec.id, finding))
        return out

    def _silence(self, ctx: RuleContext, name: str, st: SourceState) -> float | None:
        if st.ended or st.last_progress_at is None or st.phase != "train" or self.steps.crashed(name):
            return None
        p = self.p
        typical = self.steps.typical(name)
        if typical is None or self.steps.samples(name) < p.min_intervals:
            limit = p.unlearned_warn_s
        else:
            limit = max(p.warn_factor * typical, p.warn_floor_s)
        silence = ctx.now - st.last_progress_at
        return silence if silence >= limit else None

    def judge(self, ctx: RuleContext, keys: list[str], silence: float, st: SourceState) -> Finding | None:
        raise NotImplementedError


@dataclass(frozen=True)
class GpuStoppedParams(GpuSilenceParams):
    """Parameters of hang.stopped; their meaning and defaults are in presets/base-live.yaml."""

    util_idle: float


@register("hang.stopped")
class GpuStopped(_StallCorrelation):
    id = "hang.stopped"
    params = GpuStoppedParams
    p: GpuStoppedParams

    def judge(self, ctx: RuleContext, keys: list[str], silence: float, st: SourceState) -> Finding | None:
        means = {}
        for k in keys:
            w = window(ctx.store, k, "util", ctx.now, self.p.window_s)
            if len(w) < self.p.min_readings:
                return None
            means[k] = _mean(w)
        if not all(m <= self.p.util_idle for m in means.values()):
            return None
        shown = ", ".join(f"{k} {m:.0f}%" for k, m in means.items())
        return Finding(message=f"no new step for {span(silence)} after step {st.step} and the GPUs are idle "
                               f"({shown}): the process may have died or its data loader is stuck",
                       step=st.step, line=st.lines,
                       evidence={"silence_s": round(silence, 1), "util": means, "last_line": st.last_line[:300]})


@dataclass(frozen=True)
class GpuCollectiveParams(GpuSilenceParams):
    """Parameters of hang.collective; their meaning and defaults are in presets/base-live.yaml."""

    util_busy: float
    power_frac: float


@register("hang.collective")
class GpuCollective(_StallCorrelation):
    id = "hang.collective"
    params = GpuCollectiveParams
    p: GpuCollectiveParams

    def judge(self, ctx: RuleContext, keys: list[str], silence: float, st: SourceState) -> Finding | None:
        shown = []
        evidence: dict[str, dict[str, float]] = {}
        for k in keys:
            util = window(ctx.store, k, "util", ctx.now, self.p.window_s)
            power = window(ctx.store, k, "power", ctx.now, self.p.window_s)
            limit_s = ctx.store.get(f"{k}/power_limit", GPU_SOURCE)
            if len(util) < self.p.min_readings or not power or limit_s is None or not limit_s.recent:
                return None
            limit = limit_s.recent[-1].value
            u, pw = _mean(util), _mean(power)
            if limit <= 0 or u < self.p.util_busy or pw > self.p.power_frac * limit:
                return None
            shown.append(f"{k} {u:.0f}% at {pw:.0f}/{limit:.0f} W")
            evidence[k] = {"util": u, "power": pw, "power_limit": limit}
        return Finding(message=f"no new step for {span(silence)} after step {st.step} while the GPUs look busy "
                               f"at low power ({'; '.join(shown)}): ranks are likely waiting in a collective",
                       step=st.step, line=st.lines,
                       evidence={"silence_s": round(silence, 1), "gpus": evidence, "last_line": st.last_line[:300]})


@dataclass(frozen=True)
class NearOomParams:
    """Parameters of oom.near; their meaning and defaults are in presets/base-live.yaml."""

    near_frac: float


@register("oom.near")
class NearOom(Rule):
    id = "oom.near"
    params = NearOomParams
    p: NearOomParams
    watches = ("gpu*/mem_used",)

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        key = _device(series)
        total = ctx.store.get(f"{key}/mem_total", GPU_SOURCE)
        if total is None or not total.recent or total.recent[-1].value <= 0:
            return None
        t = total.recent[-1].value
        frac = point.value / t
        if frac <= self.p.near_frac:
            return None
        return Finding(message=f"{key} memory {point.value / 1024:.1f} of {t / 1024:.1f} GiB used ({frac:.0%})",
                       subject=key, evidence={"gpu": key, "used_mib": point.value, "total_mib": t, "fraction": frac})


@dataclass(frozen=True)
class MemoryCreepParams:
    """Parameters of oom.creep; their meaning and defaults are in presets/base-live.yaml."""

    min_readings: int
    min_span_s: float
    segments: int
    min_rise_frac: float
    every: int


@register("oom.creep")
class MemoryCreep(Rule):
    id = "oom.creep"
    params = MemoryCreepParams
    p: MemoryCreepParams
    watches = ("gpu*/mem_used",)

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self._seen: dict[str, int] = {}
        self._last: dict[str, Finding | None] = {}

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        key = _device(series)
        n = self._seen.get(key, 0) + 1
        self._seen[key] = n
        if n % max(1, self.p.every) and key in self._last:
            return self._last[key]  # between judgements the verdict stands
        self._last[key] = verdict = self._judge(ctx, series, key)
        return verdict

    def _judge(self, ctx: RuleContext, series: Series, key: str) -> Finding | None:
        pts = list(series.recent)
        if len(pts) < self.p.min_readings:
            return None
        t0, t1 = pts[0].time, pts[-1].time
        if t0 is None or t1 is None or t1 - t0 < self.p.min_span_s:
            return None
        parts = max(2, self.p.segments)
        size = len(pts) // parts
        lows = [min(p.value for p in pts[i * size:(i + 1) * size]) for i in range(parts)]
        if any(b < a for a, b in zip(lows, lows[1:])):
            return None
        total = ctx.store.get(f"{key}/mem_total", GPU_SOURCE)
        cap = total.recent[-1].value if total is not None and total.recent else max(p.value for p in pts)
        rise = lows[-1] - lows[0]
        if cap <= 0 or rise < self.p.min_rise_frac * cap:
            return None
        return Finding(message=f"{key} memory rose {rise / 1024:.1f} GiB over {span(t1 - t0)} without falling back "
                               f"(the lowest reading of each stretch {lows[0] / 1024:.1f} -> {lows[-1] / 1024:.1f} "
                               f"of {cap / 1024:.1f} GiB)",
                       subject=key, evidence={"gpu": key, "from_mib": lows[0], "to_mib": lows[-1],
                                              "total_mib": cap, "span_s": t1 - t0})


@dataclass(frozen=True)
class StarvedParams:
    """Parameters of speed.starved; their meaning and defaults are in presets/base-live.yaml."""

    window: int
    active_factor: float
    active_floor_s: float
    active_s: float
    low_util: float
    sawtooth_low: float
    sawtooth_high: float
    sawtooth_frac: float


@register("speed.starved")
class Starved(Rule):
    """Low or saw-tooth utilisation, judged only over readings taken while training steps advance.

    A reading counts when some log has logged a step within a few of its step intervals (within
    `active_s` while the interval is not learned yet). Readings before the first step (loading the
    model, compiling) and during a stall are left out: idle there is not a starved input pipeline,
    and the stall rules speak for a stall.
    """

    id = "speed.starved"
    params = StarvedParams
    p: StarvedParams
    watches = ("gpu*/util",)

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self._readings: dict[str, deque[float]] = {}  # device -> utilisation read while steps advanced
        self._steps: dict[str, tuple[float, deque[float]]] = {}  # source -> (last progress, step gaps)

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        n = self.p.window
        key = _device(series)
        now = point.time if point.time is not None else ctx.now
        if not self._log_advancing(ctx, now):
            return None
        q = self._readings.get(key)
        if q is None:
            q = self._readings[key] = deque(maxlen=n)
        q.append(point.value)
        if len(q) < n:
            return None
        values = list(q)
        mean = _mean(values)
        low = sum(v <= self.p.sawtooth_low for v in values) / n
        high = sum(v >= self.p.sawtooth_high for v in values) / n
        frac = self.p.sawtooth_frac
        if mean < self.p.low_util:
            how = f"mean utilisation {mean:.0f}%"
        elif low >= frac and high >= frac:
            how = f"saw-tooth utilisation (idle {low:.0%} of the time, busy {high:.0%}, mean {mean:.0f}%)"
        else:
            return None
        return Finding(message=f"{key}: {how} over the last {n} readings taken while training advanced: "
                               "the GPU waits for data", subject=key,
                       evidence={"gpu": key, "mean_util": mean, "idle_frac": low, "busy_frac": high})

    def _log_advancing(self, ctx: RuleContext, now: float) -> bool:
        """Whether a training log logged a step recently, measured in its own step intervals."""
        advancing = False
        for name, st in ctx.sources.items():
            if name == GPU_SOURCE or st.ended or st.last_progress_at is None or st.phase != "train":
                continue
            last, gaps = self._learn(name, st.last_progress_at)
            if len(gaps) >= 2:
                allowed = max(self.p.active_factor * median(list(gaps)), self.p.active_floor_s)
            else:
                allowed = self.p.active_s
            if now - last <= allowed:
                advancing = True
        return advancing

    def _learn(self, source: str, progress: float) -> tuple[float, deque[float]]:
        known = self._steps.get(source)
        if known is None:
            known = self._steps[source] = (progress, deque(maxlen=64))
        elif progress != known[0]:
            if progress > known[0]:
                known[1].append(progress - known[0])
            known = self._steps[source] = (progress, known[1])
        return known


@dataclass(frozen=True)
class ThrottleParams:
    """Parameters of gpu.throttle; their meaning and defaults are in presets/base-live.yaml."""

    reasons: tuple[str, ...]


@register("gpu.throttle")
class Throttle(Rule):
    id = "gpu.throttle"
    params = ThrottleParams
    p: ThrottleParams
    watches = ("gpu*/throttle",)

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        bad = set(self.p.reasons)
        active = [r for r in throttle_names(point.value) if r in bad]
        if not active:
            return None
        key = _device(series)
        temp = ctx.store.get(f"{key}/temp", GPU_SOURCE)
        clock = ctx.store.get(f"{key}/sm_clock", GPU_SOURCE)
        extra = []
        if temp is not None and temp.recent:
            extra.append(f"{temp.recent[-1].value:.0f} C")
        if clock is not None and clock.recent:
            extra.append(f"SM clock {clock.recent[-1].value:.0f} MHz")
        tail = f" ({', '.join(extra)})" if extra else ""
        return Finding(message=f"{key} throttled: {', '.join(active)}{tail}", subject=key,
                       evidence={"gpu": key, "reasons": active})


@register("gpu.ecc")
class Ecc(Rule):
    id = "gpu.ecc"
    watches = ("gpu*/ecc_uncorrected", "gpu*/retired_pages")

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self._first: dict[str, float] = {}

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        key, what = series.name.split("/", 1)
        first = self._first.setdefault(series.name, point.value)
        if what == "ecc_uncorrected":
            if point.value <= 0:
                return None
            msg = f"{key}: {point.value:.0f} uncorrected ECC errors since the driver loaded"
        else:
            if point.value <= first:
                return None
            msg = f"{key}: {point.value - first:.0f} memory pages retired during the run"
        return Finding(message=msg, subject=f"{key}/{what}", evidence={"gpu": key, what: point.value})


@register("gpu.lost")
class GpuLost(Rule):
    id = "gpu.lost"
    signature = "gpu.lost"

    def on_event(self, ctx: RuleContext, event: Event) -> Finding | None:
        if event.signature != self.signature:
            return None
        gpu = str(event.fields.get("gpu", "gpu"))
        return Finding(message=event.text or f"{gpu} is lost", subject=gpu, evidence=dict(event.fields))
