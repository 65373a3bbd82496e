"""Loss-value rules: NaN diagnosis, spikes, leaks and the final level. The trend rules have their own
modules: divergence.py, plateau.py (plateaus and flat curves) and overfit.py.

The spike and leak rules use medians over windows of logged points, need a minimum history, and skip
NaN/Inf (which loss.nonfinite and grad.nonfinite judge instead).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trainwatch.model import Finding
from trainwatch.rules.array import ArrayRule, Window
from trainwatch.rules.base import Rule, RuleContext, SourceState, median
from trainwatch.rules.registry import register
from trainwatch.rules.rolling import RowTail, before_counts, before_values, restarts, scan_reach, spike_medians
from trainwatch.rules.stats import Episodes, diff_sigma, fmt, head_values, last_finite, mad_sigma
from trainwatch.rulespec import RuleSpec
from trainwatch.store import RECENT_POINTS, SCAN_MIN, Point, Series

BLOWUP_FIXES = (
    "Optimisation blow-up: lower the peak LR 2-5x and warm up over 5-10% of the steps",
    "Clip the global grad-norm at 1.0 (max_grad_norm: 1.0)",
    "With fp16, switch to bf16 or fix the dynamic loss scaler",
)
SAMPLE_FIXES = (
    "Bad sample or layer numerics: inspect the batch of the failing step "
    "(empty sequence, inf/NaN input, label out of range)",
    "Guard custom ops: epsilon in log/divide/sqrt, a stable softmax or log-softmax",
)


def _int(facts: dict[str, Any], *keys: str) -> int | None:
    for k in keys:
        v = facts.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
            return int(v)
    return None


@dataclass(frozen=True)
class LossNonFiniteParams:
    """Parameters of loss.nonfinite; their meaning and defaults are in presets/base.yaml."""

    lookback: int
    baseline: int
    spike_ratio: float


@register("loss.nonfinite")
class LossNonFinite(ArrayRule):
    """Train or eval loss is NaN/Inf; the grad-norm just before says blow-up or bad sample."""

    id = "loss.nonfinite"
    params = LossNonFiniteParams
    p: LossNonFiniteParams
    watches = ("loss", "eval_loss")

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        # source -> the first step its loss was non-finite at (a restart to an earlier step starts again),
        # before the rows being judged and after them
        self._first_bad: dict[str, int] = {}
        self._first_bad_before: dict[str, int | None] = {}
        # source -> (first bad step, cause, fixes, evidence): the grad-norm before a step never changes
        self._diagnosed: dict[str, tuple[int, str, tuple[str, ...], dict[str, Any]]] = {}

    def condition(self, ctx: RuleContext, w: Window) -> np.ndarray:
        bad = ~np.isfinite(w.new)
        prior = self._first_bad.get(w.source)
        self._first_bad_before[w.source] = prior
        if bad.any():
            low = int(w.step[w.start:][bad].min())
            self._first_bad[w.source] = low if prior is None else min(prior, low)
        return bad

    def finding(self, ctx: RuleContext, w: Window, row: int) -> Finding:
        v = float(w.value[row])
        step = int(w.step[row])
        word = "NaN" if v != v else "Inf"
        ev: dict[str, Any] = {"metric": w.name, "value": v, "step": step,
                              "nan_count": w.nan_count(row), "inf_count": w.inf_count(row)}
        seen = w.value[w.start:row + 1]
        bad_steps = w.step[w.start:row + 1][~np.isfinite(seen)]
        prior = self._first_bad_before.get(w.source)
        first_bad = int(bad_steps.min()) if prior is None else min(prior, int(bad_steps.min()))
        known = self._diagnosed.get(w.source)
        if known is not None and known[0] == first_bad:
            cause, fixes = known[1], known[2]
            ev.update(known[3])
        else:
            diag: dict[str, Any] = {}
            cause, fixes = self._diagnose(ctx, w.source, first_bad, int(w.line[row]), diag)
            ev.update(diag)
            if diag.get("diagnosis") != "unknown":
                self._diagnosed[w.source] = (first_bad, cause, fixes, diag)
        msg = f"{w.name} is {word} at step {step}"
        if cause:
            msg += f": {cause}"
        rng = self._samples(ctx, w.source, step)
        if rng is not None:
            ev["samples"] = list(rng)
            msg += f"; samples {rng[0]}-{rng[1]}"
        return Finding(message=msg, evidence=ev, extra_fixes=fixes)

    def _diagnose(self, ctx: RuleContext, source: str, step: int, line: int,
                  ev: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
        """The cause of a non-finite loss first seen at `step`, judged on `line`: from the grad-norm as
        it was when that line was logged (the round being judged has stored later rows already)."""
        g = ctx.series("grad_norm", source)
        held = _grad_before(g, step, line, self.p.lookback, self.p.baseline) if g is not None else None
        if held is None:  # no grad-norm logged yet at that line
            ev["diagnosis"] = "unknown"
            return "", ()
        look, base = held
        ev["grad_norm_before"] = [p.value for p in look]
        bad = [p for p in look if not math.isfinite(p.value)]
        if bad:
            ev["diagnosis"] = "blow-up"
            return (f"optimisation blow-up (grad_norm was {fmt(bad[0].value)} at step {bad[0].step})",
                    BLOWUP_FIXES)
        if not look:
            ev["diagnosis"] = "unknown"
            return "", ()
        ref = median([p.value for p in base]) if base else None
        peak = max(look, key=lambda p: p.value)
        ev["grad_norm_baseline"] = ref
        if ref is not None and ref > 0 and peak.value > self.p.spike_ratio * ref:
            ev["diagnosis"] = "blow-up"
            ev["grad_norm_baseline_stat"] = f"median of {len(base)} points"
            return (f"optimisation blow-up (grad_norm spiked to {fmt(peak.value)} at step {peak.step}, "
                    f"{peak.value / ref:.1f}x its median {fmt(ref)} of the {len(base)} points before)", BLOWUP_FIXES)
        if ref is None:
            ev["diagnosis"] = "unknown"
            return "", ()
        ev["diagnosis"] = "bad sample or numerics"
        ev["grad_norm_peak"], ev["grad_norm_peak_step"] = peak.value, peak.step
        ev["grad_norm_baseline_stat"] = f"median of {len(base)} points"
        return (f"grad_norm stayed flat (at most {fmt(peak.value)}, at step {peak.step}, over the last "
                f"{len(look)} points before it, against the median {fmt(ref)} of the {len(base)} before those): "
                "a bad sample or layer numerics", SAMPLE_FIXES)

    @staticmethod
    def _samples(ctx: RuleContext, source: str, step: int) -> tuple[int, int] | None:
        state = ctx.sources.get(source)
        facts = state.facts if state else {}
        micro = _int(facts, "batch_size", "micro_batch_size", "per_device_train_batch_size")
        accum = _int(facts, "grad_accum", "gradient_accumulation_steps")
        if micro is None or accum is None:
            return None
        world = _int(facts, "world_size") or 1
        per_step = micro * accum * world
        start = step * per_step
        return start, start + per_step - 1


def _grad_before(g: Series, step: int, line: int, look_n: int,
                 base_n: int) -> tuple[list[Point], list[Point]] | None:
    """The last `look_n` grad-norm points logged before `step` (NaN/Inf included), and the `base_n` finite
    ones before those, among the recent points as they were when `line` was logged (None when none was
    logged by then: the series was made later in the round being judged). The same step's grad-norm is
    a consequence, so it is left out; points at or after `step` (logged since, in a batch) are passed
    over. Bounded scan: at most max(SCAN_MIN, 8 * (look_n + base_n)) points before `step`."""
    steps, values = g.upto_line(line)
    if not len(steps):
        return None
    before = np.flatnonzero(steps < step)[::-1][:max(SCAN_MIN, 8 * (look_n + base_n))]  # newest first
    look = before[:look_n]
    rest = before[look_n:]
    base = rest[np.isfinite(values[rest])][:base_n]

    def points(rows: np.ndarray) -> list[Point]:
        return [Point(int(steps[i]), float(values[i]), None, 0) for i in rows[::-1].tolist()]

    return points(look), points(base)


def _beyond_log_noise(v: float, med: float, prev: list[float], k: float) -> bool:
    """Whether `v` stands out from `prev` on a log scale. A loss trained down near 0 scatters by factors,
    not by amounts (0.003 on one batch, 0.4 on the next): there a 50x batch is its usual spread, while
    on a loss of 2 with 10% noise the same test asks for no more than the ratio test already does."""
    logs = [math.log(x) for x in prev if x > 0]
    if len(logs) < len(prev) or v <= 0:
        return True  # zero or negative losses have no log scale: the linear tests decide alone
    sigma = mad_sigma(logs)
    return math.log(v / med) >= k * sigma


@dataclass
class _Run:
    """Where one source's loss run last (re)started, carried from one batch of rows to the next."""

    last_step: int  # the step of the last row seen: a lower one starts a new run
    finite_before: int  # the series' finite points before the run's first row
    head: list[float] = field(default_factory=list)  # the run's first finite values (a few)


@dataclass(frozen=True)
class LossSpikeParams:
    """Parameters of loss.spike; their meaning and defaults are in presets/base.yaml."""

    window: int
    noise_window: int
    min_history: int
    ratio: float
    mad_k: float
    log_k: float
    early_history: int
    early_ratio: float
    min_jump: float


@register("loss.spike")
class LossSpike(ArrayRule):
    """Loss jumps well over its recent median, beyond the noise.

    The noise is the larger of the recent window's MAD and the point-to-point noise over a longer
    stretch: twenty points of a noisy per-step loss can happen to sit close together, and a normal
    high point after them is not a spike. Only the points since the run last (re)started count.

    Over arrays: the ratio to the trailing median of the finite points before each row is one
    vectorised test; the noise tests, the material check and the wording run only on the few rows
    where it holds (or too few points exist for a noise estimate)."""

    id = "loss.spike"
    params = LossSpikeParams
    p: LossSpikeParams
    watches = ("loss",)
    HEAD = 5  # first points of a run whose median says where it began

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self._reach = scan_reach(max(self.p.window, self.p.noise_window))
        self._recent: dict[str, RowTail] = {}  # source -> the rows its look-back reaches
        self._runs: dict[str, _Run] = {}
        self._episodes = Episodes()
        self._since: dict[str, int] = {}  # source -> finite samples since its last spike
        # source -> window row -> the finding of each spike in the rows last judged (what `finding` returns)
        self._told: dict[str, dict[int, Finding]] = {}

    def unrecovered(self, w: Window, row: int, evidence: dict[str, Any]) -> str | None:
        """A spike measured against the recent median stops holding once that median has risen to it: if
        the loss is still this rule's ratio over the level before the spike, it did not come back."""
        base = evidence.get("baseline")
        if not isinstance(base, (int, float)) or not base > 0:
            return None
        now, said = w.said_at(row)
        if now < self.p.ratio * base:
            return None
        return (f"{w.name} did not come back: {said} is {fmt(now / base)}x its recent median before the spike "
                f"({fmt(base)}); that median rose with it")

    def condition(self, ctx: RuleContext, w: Window) -> np.ndarray:
        src = w.source
        series = ctx.series(w.name, src)
        tail = self._recent.get(src)
        if tail is None:
            tail = self._recent[src] = RowTail(self._reach)
        _, v, s = tail.extend(series, w.step[w.start:], w.new)  # the look-back, then the new rows from s
        step = w.step[w.start:]
        fin = np.isfinite(v)
        # the series' finite points before each row, counted as the store counts them
        total = series.finite_count if series is not None else int(fin.sum())
        fin_before = total - np.cumsum(fin[::-1])[::-1]
        starts, run = self._run_starts(src, step, s)
        # the finite points of the run before each new row, as the row-at-a-time rule counted them
        began = np.where(starts >= 0, fin_before[np.maximum(starts, 0)], -1 if run is None else run.finite_before)
        earlier = fin_before[s:] - began
        want = np.zeros(len(v), dtype=np.int64)
        want[s:] = np.minimum(self.p.window, earlier)
        count = before_counts(fin, want)
        med = spike_medians(v, fin, count, s, self.p.ratio, self.p.min_history)
        vn, cn, mn, fn = v[s:], count[s:], med[s:], fin[s:]
        with np.errstate(invalid="ignore", over="ignore"):
            # a little slack: the rows it lets through are judged exactly below, one by one
            ratio = (cn >= self.p.min_history) & (mn > 0) & (vn >= self.p.ratio * mn * (1 - 1e-9))
        early = (cn >= max(self.p.early_history, 1)) & (cn < self.p.min_history)
        out = np.zeros(len(vn), dtype=bool)
        told = self._told[src] = {}
        # finite samples since the last spike: `calm` at row `mark`, the rest counted from fin_before
        calm, mark = self._since.get(src, 0), s
        for j in np.flatnonzero(fn & (ratio | early)):
            row = s + int(j)
            found = self._judge(v, row, int(step[j]), int(earlier[j]))
            if found is None or not self._material(self._head(v, s, row, int(starts[j]), run), found):
                continue
            out[j] = True
            since = calm + int(fin_before[row] - fin_before[mark])
            told[w.start + int(j)] = self._episode(src, found, float(v[row]), int(step[j]), since)
            calm, mark = -1, row  # the spike itself is not a calm sample
        if len(vn):
            self._since[src] = calm + total - int(fin_before[mark])
            self._carry(src, v, s, int(step[-1]), starts, run, fin_before)
        return out

    def finding(self, ctx: RuleContext, w: Window, row: int) -> Finding:
        return self._told[w.source][row]

    def _run_starts(self, src: str, step: np.ndarray, s: int) -> tuple[np.ndarray, _Run | None]:
        """Per new row, the row its run began at (the new rows begin at `s`), or -1 when it began
        before them (the carried run, returned too)."""
        run = self._runs.get(src)
        rows = np.flatnonzero(np.diff(restarts(step, None if run is None else run.last_step), prepend=0) > 0)
        if run is None and len(step):
            rows = np.concatenate(([0], rows))  # the source's first row starts its first run
        if not len(rows):
            return np.full(len(step), -1, dtype=np.int64), run
        at = np.searchsorted(rows, np.arange(len(step)), side="right") - 1
        return np.where(at >= 0, s + rows[np.maximum(at, 0)], -1), run

    def _head(self, v: np.ndarray, s: int, row: int, start: int, run: _Run | None) -> list[float]:
        """The first finite values of the run `row` is in, up to and including `row`."""
        head = [] if start >= 0 or run is None else run.head
        if len(head) >= self.HEAD:
            return head
        seen = v[start if start >= 0 else s:row + 1]
        return head + seen[np.isfinite(seen)][:self.HEAD - len(head)].tolist()

    def _carry(self, src: str, v: np.ndarray, s: int, last_step: int, starts: np.ndarray, run: _Run | None,
               fin_before: np.ndarray) -> None:
        """What the next batch needs: the run the last row is in."""
        start = int(starts[-1])
        head = self._head(v, s, len(v) - 1, start, run)
        if start >= 0:
            run = _Run(0, int(fin_before[start]))
        assert run is not None
        run.last_step, run.head = last_step, head
        self._runs[src] = run

    def _episode(self, src: str, found: Finding, v: float, step: int, since: int) -> Finding:
        """A blow-up that keeps jumping is one spike, the first one told: the episode stays open until
        more than keep_firing_for finite samples (`since` the last spike) pass without a new one."""
        if since > self.spec.keep_firing_for.steps:
            self._episodes.close(src)
        if self._episodes.is_open(src):
            return self._episodes.repeat(src, v, step)  # type: ignore[return-value]
        return self._episodes.open(src, found, v, step)

    def _material(self, head: list[float], found: Finding) -> bool:
        """A jump smaller than `min_jump` of where the run began is not a spike, whatever its ratio: a
        loss memorised down to 0.002 that shows 0.05 on one batch has not spiked."""
        start = abs(median(head)) if head else 0.0
        return found.evidence["value"] - found.evidence["baseline"] >= self.p.min_jump * start

    def _judge(self, values: np.ndarray, row: int, step: int, earlier: int) -> Finding | None:
        """The verdict at `row` of `values`, from the same numbers the row-at-a-time rule used."""
        v = float(values[row])
        prev = before_values(values, row, min(self.p.window, earlier))
        if len(prev) < self.p.min_history:
            return self._early(prev, v, step)
        med = median(prev)
        if med <= 0 or v < self.p.ratio * med:
            return None
        noise = mad_sigma(prev, med)
        longer = before_values(values, row, min(self.p.noise_window, earlier))
        if len(longer) > len(prev):
            noise = max(noise, diff_sigma(longer))
        if v - med < self.p.mad_k * noise:
            return None
        if not _beyond_log_noise(v, med, longer if len(longer) > len(prev) else prev, self.p.log_k):
            return None
        return Finding(message=f"loss {fmt(v)} at step {step} is {v / med:.1f}x its recent median {fmt(med)} "
                               f"(noise +-{fmt(noise)})",
                       step=step,
                       evidence={"value": v, "step": step, "baseline": med, "ratio": v / med, "noise": noise})

    def _early(self, prev: list[float], v: float, step: int) -> Finding | None:
        """Too few points for a noise estimate: only a jump far above every earlier point counts."""
        if len(prev) < self.p.early_history:
            return None
        top = max(prev)
        if min(prev) <= 0 or v < self.p.early_ratio * top:
            return None  # (a loss at or below 0, as RL losses are, has no scale for a ratio)
        med = median(prev)
        return Finding(message=f"loss {fmt(v)} at step {step} is {v / top:.1f}x the highest of the {len(prev)} "
                               f"points before it ({fmt(top)})",
                       step=step,
                       evidence={"value": v, "step": step, "baseline": med, "ratio": v / med, "max_before": top})


def _finite_upto(series: Series, step: int, n: int, *, scan: int | None = None) -> list[float] | None:
    """The last n finite values logged at or before `step`, oldest first; None when a NaN/Inf sits
    among them (a train loss that is not finite says nothing about the eval). `scan` bounds the look back
    within the series' recent window. Read from the columns: no point objects for a long train loss."""
    steps, values, _, _ = series.columns(RECENT_POINTS if scan is None else min(scan, RECENT_POINTS))
    got = values[steps <= step][-max(n, 1):]
    if not np.isfinite(got).all():
        return None
    return got.tolist()


@dataclass(frozen=True)
class LossLeakParams:
    """Parameters of loss.leak; their meaning and defaults are in presets/base.yaml."""

    ratio: float
    train_window: int
    settled: float
    diverged: float


@register("loss.leak")
class LossLeak(Rule):
    """Eval loss far below the train loss: the eval set may leak into training.

    Only a finite, settled train loss that has not blown up counts: an eval far below a train loss that
    diverged says the training broke, not that the eval set leaked."""

    id = "loss.leak"
    params = LossLeakParams
    p: LossLeakParams
    watches = ("eval_loss",)

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self._episodes = Episodes()

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        """The first eval far below the train loss is told; later ones while it lasts only update
        last_value/last_step."""
        found = self._judge(ctx, series, point)
        if found is None:
            self._episodes.close(series.source)
            return None
        if self._episodes.is_open(series.source):
            return self._episodes.repeat(series.source, point.value, point.step)
        return self._episodes.open(series.source, found, point.value, point.step)

    def _judge(self, ctx: RuleContext, series: Series, point: Point) -> Finding | None:
        v = point.value
        train = ctx.series("loss", series.source)
        if not math.isfinite(v) or train is None:
            return None
        w = self.p.train_window
        vals = _finite_upto(train, point.step, 2 * w, scan=max(SCAN_MIN, 8 * w))
        if vals is None:
            return None
        recent = vals[-w:]
        if len(recent) < min(w, 3):
            return None
        t = median(recent)
        if t <= 0 or v >= self.p.ratio * t:
            return None
        earlier = vals[:-w]
        if len(earlier) < len(recent) or median(earlier) > t * (1 + self.p.settled):
            return None  # train loss still falling fast: its logged average lags the eval
        start = min(head_values(train, 5), default=math.nan)
        if not start > 0 or t > self.p.diverged * start:
            return None  # the train loss blew up above where it began: divergence, not a leak
        return Finding(message=(f"eval_loss {fmt(v)} at step {point.step} is {v / t:.0%} of the train loss, "
                                f"{fmt(t)} (the median of its last {len(recent)} points up to that step)"),
                       step=point.step, evidence={"value": v, "step": point.step, "baseline": t, "ratio": v / t,
                                                  "baseline_stat": f"median of the last {len(recent)} points"})


@dataclass(frozen=True)
class LossLevelParams:
    """Parameters of loss.level; their meaning and defaults are in presets/base.yaml."""

    low: float
    high: float
    margin: float
    tail: int
    fixes_low: tuple[str, ...]
    fixes_high: tuple[str, ...]


LANGUAGE_TRAINERS = frozenset({"hf_console", "trainer_state", "megatron"})
"""Formats whose logs come from language-model trainers (the HF Trainer, Megatron)."""


def _language_model(state: SourceState | None) -> bool:
    """Whether the run is known to train a language model: its log says so, or, the log saying nothing
    either way, it is the HF Trainer's or Megatron's. A key-value log of unknown kind (a regression's
    summed costs, a detector's losses) has no usual final loss, so none is claimed."""
    if state is None:
        return True
    llm = state.facts.get("llm")
    return llm is True or (llm is None and state.format in LANGUAGE_TRAINERS)


@register("loss.level")
class LossLevel(Rule):
    """At the end of an SFT run, the final loss far outside the usual 0.5-2.0."""

    id = "loss.level"
    params = LossLevelParams
    p: LossLevelParams

    def on_end(self, ctx: RuleContext, source: str) -> list[Finding]:
        s = ctx.series("loss", source)
        state = ctx.sources.get(source)
        if s is None or not _language_model(state):
            return []  # the 0.5-2.0 range is a language model's; a detector's summed losses have none
        vals = last_finite(s, self.p.tail)
        if len(vals) < self.p.tail:
            return []
        final = median(vals)
        low, high, margin = self.p.low, self.p.high, self.p.margin
        if low / margin <= final <= high * margin:
            return []
        word = "below" if final < low else "above"
        # a loss far too high and one far too low have opposite causes: only the matching fixes are given
        fixes = self.p.fixes_low if final < low else self.p.fixes_high
        what = f"median of the last {len(vals)} finite points"
        ev: dict[str, Any] = {"value": final, "value_stat": what, "low": low, "high": high}
        msg = f"the {what}, {fmt(final)}, is far {word} the usual {low:g}-{high:g}"
        last = s.last
        if last is not None:
            ev.update(final=last.value, final_step=last.step)
            if math.isfinite(last.value):
                msg += f" (final loss {fmt(last.value)} at step {last.step})"
            else:
                good = _last_finite_point(s)
                msg += f" (final loss {_word(last.value)} at step {last.step}"
                if good is not None:
                    ev.update(last_finite=good.value, last_finite_step=good.step)
                    msg += f"; last finite {fmt(good.value)} at step {good.step}"
                msg += ")"
        return [Finding(message=msg, subject="loss", step=last.step if last else None, evidence=ev,
                        extra_fixes=fixes)]


def _word(v: float) -> str:
    return "NaN" if v != v else ("Inf" if v > 0 else "-Inf")


def _last_finite_point(series: Series) -> Point | None:
    """The newest finite point among the recent ones: what "last finite" names when the final loss is not."""
    steps, values, _, _ = series.columns(RECENT_POINTS)
    ok = np.flatnonzero(np.isfinite(values))
    if not len(ok):
        return None
    i = int(ok[-1])
    return Point(int(steps[i]), float(values[i]), None, 0)
