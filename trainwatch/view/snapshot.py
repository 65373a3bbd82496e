"""A copy of the engine state the screen needs, taken briefly under the watcher's lock.

Widgets render only from a Snapshot, so the engine thread is never blocked by drawing and widgets
never see half-updated state. No Textual import here.
"""

from __future__ import annotations

import bisect
import fnmatch
import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import PurePath
from typing import Any

from trainwatch.model import GPU_SOURCE, Alert, AlertState, Severity
from trainwatch.names import rank_of
from trainwatch.store import Series
from trainwatch.view.model import WatchModel
from trainwatch.view.reading import EngineReading

SPARK_POINTS = 120
LOG_LINES = 1000  # the log pane scrolls and searches these; an alert's line is usually among them
# Cards are ordered by the first pattern a metric name matches; unmatched names follow, GPU series last.
IMPORTANCE = ("loss", "eval_loss", "grad_norm", "lr", "tokens_per_sec", "samples_per_sec", "mfu", "tflops",
              "step_time_ms", "loss_scale", "reward", "reward_std", "rewards/*", "kl", "entropy",
              "frac_reward_zero_std", "completions/*", "clip_ratio*", "perplexity", "epoch", "num_tokens")
# The small charts beside the main one on a wide terminal: the preset's key metrics, those that exist.
GRID_METRICS: dict[str, tuple[str, ...]] = {
    "grpo": ("reward", "kl", "entropy", "loss", "grad_norm", "completions/mean_length"),
    "ebft": ("reward", "kl", "entropy", "loss", "grad_norm", "lr"),
}
DEFAULT_GRID = ("loss", "eval_loss", "grad_norm", "lr", "learning_rate", "tokens_per_sec", "samples_per_sec",
                "mfu", "step_time_ms")
GRID_SIZE = 6
SMALL_POINTS = 300  # a small chart draws the main chart's recent window (chart.RECENT_WINDOW)
STALL_RULES = ("hang.stall", "hang.stopped", "hang.collective")
WAITING_FACT = "waiting"  # set by the live watcher on a source it knows of but does not read yet


@dataclass(frozen=True)
class MetricView:
    name: str
    source: str
    label: str
    last: float | None
    minimum: float | None
    maximum: float | None
    count: int
    nan: int
    inf: int
    spark: tuple[float, ...]
    severity: Severity | None  # worst live alert about this metric
    baseline: float | None = None  # the baseline run's value at the same step (`tail --baseline`)

    @property
    def key(self) -> tuple[str, str]:
        return (self.source, self.name)


@dataclass(frozen=True)
class AlertView:
    fingerprint: str  # what the app's acknowledgements are keyed by
    rule: str
    severity: Severity
    title: str
    message: str
    state: AlertState
    source: str
    subject: str
    step: int | None
    line: int
    count: int
    evidence: dict[str, Any]
    fixes: tuple[str, ...]
    acknowledged: bool  # by the user, in this app (the engine's alert knows nothing of it)
    inhibited: bool  # firing, but held quiet by inhibition: another firing alert explains it
    told: bool = True  # False: inhibition kept it quiet for as long as it fired
    stopped: str = ""  # resolved without recovering (its metric went NaN, the run ended): why
    once: bool = False  # a one-time judgement (Rule.once): once it no longer holds it has ended

    @property
    def held(self) -> bool:
        """Held back by inhibition: quiet now, or quiet for as long as it fired."""
        return self.inhibited or not self.told

    @property
    def live(self) -> bool:
        """Still news: firing, not acknowledged, not held quiet by its cause (listed first)."""
        return self.state is AlertState.FIRING and not self.acknowledged and not self.inhibited

    @property
    def standing(self) -> bool:
        """Counts towards the badge and the cards: firing and not held quiet by its cause, acknowledged or
        not. Acknowledging says the user has seen it; the run is no healthier for that."""
        return self.state is AlertState.FIRING and not self.inhibited


@dataclass(frozen=True)
class SourceView:
    name: str
    format: str
    step: int | None
    total: int | None
    ended: bool
    phase: str
    waiting: bool = False  # named, not read yet (its format is not recognised yet): no evidence either way
    read: bool = True  # something in it was understood (a metric or an event)
    progress_at: float | None = None  # the watcher's clock when its step last moved on (None: never)


@dataclass(frozen=True)
class ChartSeries:
    """The selected metric's points: recent ones, the whole run in buckets, eval points, alert steps."""

    name: str
    recent: tuple[tuple[int, float], ...]
    buckets: tuple[tuple[int, int, float, float, float, int], ...]  # first, last, min, max, mean, nonfinite
    eval_points: tuple[tuple[int, float], ...]
    alert_steps: tuple[int, ...]
    rank: str = ""  # "rank0" when the run is followed as one file per rank, else ""
    ranks: tuple[tuple[str, tuple[tuple[int, float], ...]], ...] = ()  # the other ranks' recent points
    # The other ranks' whole runs in buckets (as `buckets`), in the order of `ranks`: the 'w' view.
    rank_buckets: tuple[tuple[str, tuple[tuple[int, int, float, float, float, int], ...]], ...] = ()
    baseline: tuple[tuple[int, float], ...] = ()  # the same metric in the baseline run (`tail --baseline`)
    baseline_label: str = ""


@dataclass(frozen=True)
class Baseline:
    """A finished run drawn beside the live one (`tail --baseline`): per metric, its whole run as (step,
    value) points, one per bucket of its history. Read once, before the dashboard starts, and never
    judged with the live run: its alerts are not the live run's."""

    label: str
    curves: Mapping[str, tuple[tuple[int, float], ...]]


@dataclass
class Snapshot:
    preset: str
    sources: list[SourceView]
    metrics: list[MetricView]
    alerts: list[AlertView]
    gpus: list[dict[str, Any]]
    info_lines: list[str]
    log_source: str
    log_lines: list[tuple[int, str]]
    chart: ChartSeries | None
    finished: bool = False
    times: tuple[float | None, float | None] = (None, None)  # first and last timestamp the log printed
    grid: tuple[ChartSeries, ...] = ()  # the small charts' series, when asked for (a wide terminal)

    @property
    def following(self) -> bool:
        """Something was understood from some log: a path that is missing, binary or not recognised yet,
        or a log of which nothing was understood (a wrong --format), is no evidence of health."""
        return any(s.read and not s.waiting for s in self.sources)

    @property
    def badge(self) -> str:
        """The worst standing severity; ` ACK` when every alert behind it was acknowledged: acknowledging
        never turns the badge green while the alert still fires."""
        standing = [a for a in self.alerts if a.standing and a.severity > Severity.INFO]
        if not standing and not self.following:
            return "UNKNOWN"  # nothing read is no evidence of health
        behind = [a for a in standing if a.severity is Severity.CRITICAL and a.rule not in STALL_RULES]
        word = "CRITICAL"
        if not behind:
            behind, word = [a for a in standing if a.rule in STALL_RULES], "STALLED"
        if not behind:
            behind, word = standing, "WARNING"
        if not behind:
            return "OK"
        return f"{word} ACK" if all(a.acknowledged for a in behind) else word

    @property
    def step(self) -> int | None:
        steps = [s.step for s in self.sources if s.step is not None]
        return max(steps) if steps else None

    @property
    def total(self) -> int | None:
        totals = [s.total for s in self.sources if s.total]
        return max(totals) if totals else None


def version(model: WatchModel, log_source: str) -> tuple[int, ...]:
    """A cheap fingerprint of everything drawn: when it has not changed, nothing is redrawn."""
    with model.lock:
        eng = EngineReading(model.engine)
        samples = sum(s.count for s in eng.series())
        events = sum(s.events for s in eng.sources())
        last = model.recent_lines(log_source, 1) if log_source else []
        return (samples, events, eng.changes, last[0][0] if last else -1, len(model.info_lines))


class ViewCache:
    """Views kept between snapshots, keyed by what they were built from (a series' `count`, ...).

    A series that got no new point since the last snapshot keeps the very same MetricView object,
    so copying is skipped and widgets can tell "unchanged" with `is`.
    """

    def __init__(self) -> None:
        self.metrics: dict[tuple[str, str], tuple[tuple[Any, ...], MetricView]] = {}
        self.chart: tuple[tuple[Any, ...], ChartSeries] | None = None
        self.grid: dict[tuple[str, str], tuple[tuple[Any, ...], ChartSeries]] = {}


def take(model: WatchModel, *, selected: tuple[str, str] | None, log_source: str | None,
         cache: ViewCache | None = None, acknowledged: frozenset[str] = frozenset(),
         grid: bool = False, baseline: Baseline | None = None) -> Snapshot:
    """Copies what the screen shows. Holds the lock only for the copying; the grid's series only if
    asked. `acknowledged`: the fingerprints the user acknowledged, the app's own state; `baseline`: a
    finished run whose curve of the selected metric is drawn beside it."""
    cache = cache if cache is not None else ViewCache()
    with model.lock:
        eng = EngineReading(model.engine)
        eng.fold_incidents()  # a blow-up's spikes and NaN are echoes of its root, as the report says
        standing = {(a.source, a.echo_of) for a in eng.alerts() if a.echo_of and a.state is AlertState.FIRING}
        alerts = [_alert_view(a, eng.inhibited(a), a.fingerprint in acknowledged,
                              (a.source, f"{a.rule} at step {a.first_step}") in standing) for a in eng.alerts()]
        series = eng.series()
        # as `tail`'s exit code counts it: a source says something once a metric or an event came of it
        read = {s.source for s in series if s.count} | {s.name for s in eng.sources() if s.events}
        sources = [SourceView(s.name, s.format, s.step, s.total_steps, s.ended, s.phase,
                              bool(s.facts.get(WAITING_FACT)), s.name in read, s.last_progress_at)
                   for s in eng.sources()]
        multi = len({s.source for s in series if s.source != GPU_SOURCE}) > 1
        metrics = [_metric_view_cached(s, alerts, multi, cache, baseline) for s in series]
        chosen = selected
        if chosen is None or eng.series_of(chosen[1], chosen[0]) is None:
            chosen = None
        chart = None
        small: tuple[ChartSeries, ...] = ()
        if metrics:
            metrics.sort(key=_order)
            key = chosen or metrics[0].key
            s = eng.series_of(key[1], key[0])
            if s is not None:
                known = {m.name for m in metrics}
                ev = eng.series_of("eval_loss", s.source) if s.name == "loss" else None
                steps = _alert_steps(s, alerts, known)
                peers = _peers(eng, s)
                ckey = (s.source, s.name, s.count, ev.count if ev else -1, steps,
                        tuple((p.source, p.count) for p in peers))
                if cache.chart is not None and cache.chart[0] == ckey:
                    chart = cache.chart[1]
                else:
                    chart = _chart(s, ev, steps)
                    if baseline is not None and baseline.curves.get(s.name):
                        chart = replace(chart, baseline=baseline.curves[s.name], baseline_label=baseline.label)
                    if peers:
                        chart = replace(chart, rank=_rank_label(s.source), ranks=tuple(
                            (_rank_label(p.source), tuple((q.step, q.value) for q in p.recent)) for p in peers),
                            rank_buckets=tuple((_rank_label(p.source), _buckets(p)) for p in peers))
                    cache.chart = (ckey, chart)
            if grid:
                src_of = key[0] if key[0] != GPU_SOURCE else metrics[0].source  # GPU series have no key metrics
                small = _grid(eng, src_of, alerts, {m.name for m in metrics}, cache, main=key)
        names = [s.name for s in sources if s.name != GPU_SOURCE]
        src = log_source if log_source in names else (names[0] if names else "")
        lines = model.recent_lines(src, LOG_LINES) if src else []
        times = _times(series)
        return Snapshot(preset=eng.preset, sources=[s for s in sources if s.name != GPU_SOURCE],
                        metrics=metrics, alerts=_alert_order(alerts), gpus=model.gpu_devices(),
                        info_lines=list(model.info_lines), log_source=src, log_lines=lines, chart=chart,
                        finished=model.finished.is_set(), times=times, grid=small)


def _alert_view(a: Alert, inhibited: bool, acknowledged: bool, standing: bool = False) -> AlertView:
    """`standing`: the alert is the root of an incident whose chain still fires (its loss went NaN after
    the divergence stopped being judged): the incident stands, so the root shows as firing."""
    f = a.finding
    state = AlertState.FIRING if a.incident and standing else a.state
    return AlertView(fingerprint=a.fingerprint, rule=a.rule, severity=a.severity, title=a.title,
                     message=f"{a.incident}. {f.message}" if a.incident else f.message,
                     state=state, source=f.source, subject=f.subject, step=a.first_step,
                     line=a.first_line, count=a.count, evidence=dict(f.evidence), fixes=tuple(a.fixes),
                     acknowledged=acknowledged, inhibited=inhibited, told=a.told,
                     stopped=a.stopped if a.state is AlertState.RESOLVED else "", once=a.once)


def _alert_order(alerts: list[AlertView]) -> list[AlertView]:
    """Unacknowledged firing first, then most severe, then newest."""
    return sorted(alerts, key=lambda a: (not a.live, -a.severity, -(a.step if a.step is not None else -1),
                                         -a.line))


def _about(a: AlertView, name: str) -> bool:
    return a.subject == name or a.evidence.get("metric") == name


def _worst(s: Series, alerts: list[AlertView]) -> Severity | None:
    worst: Severity | None = None
    for a in alerts:
        if a.standing and a.source == s.source and _about(a, s.name):
            worst = a.severity if worst is None else max(worst, a.severity)
    return worst


def _metric_view_cached(s: Series, alerts: list[AlertView], multi: bool, cache: ViewCache,
                        baseline: Baseline | None = None) -> MetricView:
    """The previous MetricView when the series has no new point and its alert state is the same."""
    worst = _worst(s, alerts)
    key = (s.count, worst, multi)
    hit = cache.metrics.get((s.source, s.name))
    if hit is not None and hit[0] == key:
        return hit[1]
    view = _metric_view(s, worst, multi)
    if baseline is not None and s.source != GPU_SOURCE and view.last is not None:
        newest = s.newest()
        base = baseline_at(baseline.curves.get(s.name, ()), newest[0]) if newest else None
        if base is not None:
            view = replace(view, baseline=base)
    cache.metrics[(s.source, s.name)] = (key, view)
    return view


def baseline_at(points: tuple[tuple[int, float], ...], step: int) -> float | None:
    """The baseline's value at `step`: that of the point whose history bucket holds it (points are
    (last step, mean) per bucket). None past its end, or where that bucket held no finite value."""
    at = bisect.bisect_left(points, step, key=lambda p: p[0])
    if at == len(points):
        return None
    value = points[at][1]
    return value if math.isfinite(value) else None


def _metric_view(s: Series, worst: Severity | None, multi: bool) -> MetricView:
    """A card's view. Its min and max are those of the sparkline's points, so the two cover the same
    window: a card never shows a max its curve does not reach."""
    newest = s.newest()
    spark = _last_values(s, SPARK_POINTS)
    shown = [v for v in spark if math.isfinite(v)]
    return MetricView(
        name=s.name, source=s.source,
        label=f"{s.name} [{_short(s.source)}]" if multi and s.source != GPU_SOURCE else s.name,
        last=newest[1] if newest else None, minimum=min(shown) if shown else None,
        maximum=max(shown) if shown else None, count=s.count, nan=s.nan_count, inf=s.inf_count,
        spark=spark, severity=worst)


def _last_values(s: Series, n: int) -> tuple[float, ...]:
    """The last n values, from the columns: no point objects for a spark line."""
    return tuple(s.values(n))


def _short(source: str) -> str:
    return source.rsplit("/", 1)[-1]


def _order(m: MetricView) -> tuple[int, int, str, str]:
    if m.source == GPU_SOURCE or m.name.startswith("gpu"):
        return (2, 0, m.name, m.source)
    for i, pat in enumerate(IMPORTANCE):
        if m.name == pat or (("*" in pat) and fnmatch.fnmatchcase(m.name, pat)):
            return (0, i, m.name, m.source)
    return (1, 0, m.name, m.source)


def _alert_steps(s: Series, alerts: list[AlertView], known: set[str]) -> tuple[int, ...]:
    """Alert markers: alerts about this metric, and on the loss chart also those about no metric (events)."""
    return tuple(sorted({a.step for a in alerts if a.step is not None and a.source == s.source
                         and (_about(a, s.name) or (s.name == "loss" and a.subject not in known
                                                   and a.evidence.get("metric") not in known))}))


def _chart(s: Series, ev: Series | None, steps: tuple[int, ...], recent: int | None = None) -> ChartSeries:
    """The chart's copy of a series; with `recent`, only that many last points and no whole-run buckets
    (the small charts draw the recent window only, so they copy no more)."""
    if recent is not None:
        pts = [(p.step, p.value) for p in islice(reversed(s.recent), recent)]
        pts.reverse()
        return ChartSeries(name=s.name, recent=tuple(pts), buckets=(), eval_points=(), alert_steps=steps)
    return ChartSeries(name=s.name, recent=tuple((p.step, p.value) for p in s.recent),
                       buckets=_buckets(s), eval_points=tuple((p.step, p.value) for p in ev.recent) if ev else (),
                       alert_steps=steps)


def _buckets(s: Series) -> tuple[tuple[int, int, float, float, float, int], ...]:
    """The whole run as the chart reads it: first and last step, min, max, mean (the last value when
    none was finite) and the count of non-finite values, per bucket."""
    return tuple((b.first_step, b.last_step, b.minimum, b.maximum, b.mean if b.finite else b.last, b.nonfinite)
                 for b in s.whole_run())


def _rank_label(source: str) -> str:
    return f"rank{rank_of(source)}"


def _peers(eng: EngineReading, s: Series) -> list[Series]:
    """The same metric in the other rank files of the same run (rankN.log beside this one), by rank.

    One run is one folder: rank0.log of another run elsewhere is not overlaid.
    """
    mine = rank_of(s.source)
    if mine is None:
        return []
    folder = PurePath(s.source).parent
    out: list[tuple[int, Series]] = []
    for src in eng.source_names():
        r = rank_of(src)
        if r is None or r == mine or src == s.source or PurePath(src).parent != folder:
            continue
        other = eng.series_of(s.name, src)
        if other is not None and other.count:
            out.append((r, other))
    return [o for _, o in sorted(out, key=lambda t: t[0])]


def _grid(eng: EngineReading, source: str, alerts: list[AlertView], known: set[str], cache: ViewCache,
          main: tuple[str, str] | None = None) -> tuple[ChartSeries, ...]:
    """The preset's key metrics of one source (the selected metric's), each copied only when it changed;
    never the metric the main chart already draws (`main`: its source and name).

    An unchanged series keeps its ChartSeries object, so its small chart is not redrawn.
    """
    out: list[ChartSeries] = []
    for name in GRID_METRICS.get(eng.preset, DEFAULT_GRID):
        if main == (source, name):
            continue
        s = eng.series_of(name, source)
        if s is None or not s.count:
            continue
        steps = _alert_steps(s, alerts, known)
        key = (s.count, steps)
        hit = cache.grid.get((source, name))
        if hit is None or hit[0] != key:
            hit = (key, _chart(s, None, steps, recent=SMALL_POINTS))
            cache.grid[(source, name)] = hit
        out.append(hit[1])
        if len(out) == GRID_SIZE:
            break
    return tuple(out)


def _times(series: list[Series]) -> tuple[float | None, float | None]:
    first = last = None
    for s in series:
        if s.source == GPU_SOURCE or not s.recent:
            continue
        t0, t1 = s.recent[0].time, s.recent[-1].time
        if t0 is not None and (first is None or t0 < first):
            first = t0
        if t1 is not None and (last is None or t1 > last):
            last = t1
    return first, last


@dataclass
class RateMeter:
    """Steps per second over a sliding window of the injected clock; None until two readings differ."""

    window_s: float = 60.0
    _readings: deque[tuple[float, int]] = field(default_factory=lambda: deque(maxlen=256))

    def add(self, now: float, step: int | None) -> None:
        if step is None:
            return
        if self._readings and self._readings[-1][1] == step:
            return
        self._readings.append((now, step))
        while len(self._readings) > 2 and now - self._readings[0][0] > self.window_s:
            self._readings.popleft()

    def rate(self) -> float | None:
        if len(self._readings) < 2:
            return None
        (t0, s0), (t1, s1) = self._readings[0], self._readings[-1]
        if t1 <= t0 or s1 <= s0:
            return None
        return (s1 - s0) / (t1 - t0)


def eta_seconds(step: int | None, total: int | None, rate: float | None) -> float | None:
    if step is None or not total or not rate or rate <= 0 or step >= total:
        return None
    return (total - step) / rate
