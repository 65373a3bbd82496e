"""One optimisation blow-up, one finding: the spikes, the divergence and the NaN it leads to are its chain.

A blow-up trips several rules a step or two apart: the grad-norm spikes, the loss spikes, the loss is
diverging, then both go NaN. Each is right on its own, but listed side by side they bury the moment
the run broke under its echoes. As crash echoes fold into the first error (rules/crash.py), the links
of the chain fold into one root here: the first critical link (a divergence, or a NaN a blow-up
caused) is dated where the chain began and says so in one line; the other links become info echoes
that name it. Folding runs over the book's alerts whenever they are read (a report, the dashboard),
so it always sees the whole chain as far as the log has gone, and folding again changes nothing.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from trainwatch.alerts import AlertChange
from trainwatch.model import Alert, AlertState, Severity
from trainwatch.rules.stats import fmt
from trainwatch.runconfig.fit import Given
from trainwatch.store import RECENT_POINTS, MetricStore

NONFINITE = ("loss.nonfinite", "grad.nonfinite")
CHAIN = frozenset({"grad.spike", "loss.spike", "loss.diverging", "loss.nonfinite", "grad.nonfinite"})
"""The rules a blow-up trips on its way: each is a link of the same incident when they meet in time."""


OVERFITTING = ("quality.not_learning", "loss.overfit", "quality.overfit")
"""The rules one overfitting incident trips, in the order they are its root: a task metric that never left
0 (the model learnt nothing it sees: a rising eval loss and a "best" at chance are that, told again), then
the eval loss and the task metric, whichever showed it first."""


def fold(alerts: Iterable[Alert], store: MetricStore) -> None:
    """Marks each blow-up's root (`incident`: its one-line story) and its echoes (`echo_of`, info); and
    each overfitting incident's (`fold_overfitting`)."""
    alerts = list(alerts)
    _fold_blowups(alerts, store)
    fold_overfitting(alerts)


def fold_overfitting(alerts: list[Alert]) -> None:
    """One run overfitting trips the eval-loss rule and the task-metric rules: told side by side, one
    incident reads as two or three warnings with fixes split between them. The root (`OVERFITTING`'s
    order, then the earliest, then the first found) says the others' evidence in its story and gives
    their fixes (but a model that learnt nothing is not told to keep its best checkpoint); the others become
    info echoes that name it. Judged afresh each time: a fold that a
    later finding or a withdrawal changes is undone first."""
    by_source: dict[str, list[Alert]] = {}
    for a in alerts:
        if a.rule not in OVERFITTING:
            continue
        if a.echo_of and a.echo_of.split(" at step ")[0] in OVERFITTING:  # this fold's own: undone, judged again
            a.echo_of = ""
            a.finding.evidence.pop("root_cause", None)
            if a.own_severity is not None:
                a.severity, a.own_severity = a.own_severity, None
        if a.incident and not a.echo_of:
            a.incident = ""
        if a.retracted or a.echo_of or a.severity <= Severity.INFO or not a.told or a.first_step is None:
            continue  # (an info: the eval loss rising as calibration, a metric judged on too few evaluations)
        by_source.setdefault(a.source, []).append(a)
    for found in by_source.values():
        if len(found) < 2:
            continue
        found.sort(key=lambda a: (a.rule != OVERFITTING[0], a.first_step,
                                  a.found_step if a.found_step is not None else a.first_step,
                                  OVERFITTING.index(a.rule)))
        root, echoes = found[0], found[1:]
        root.incident = _overfit_story(root, echoes)
        if root.rule != OVERFITTING[0]:  # (a model that learnt nothing has no best checkpoint to keep)
            # the task metric's fixes first: it is what the run is for (keep the checkpoint it rates best)
            both = sorted(found, key=lambda a: a.rule != "quality.overfit")
            root.fixes = _fixes_once(tuple(f for a in both for f in a.fixes))
        for a in echoes:
            a.echo_of = f"{root.rule} at step {root.first_step}"
            a.own_severity, a.severity = a.severity, Severity.INFO
            a.finding.evidence["root_cause"] = a.echo_of


_OVERFIT_HEAD = {"quality.not_learning": "the train loss falls but nothing generalises",
                 "loss.overfit": "overfitting, which the task metric shows too",
                 "quality.overfit": "overfitting, which the eval loss shows too"}


def _overfit_story(root: Alert, echoes: list[Alert]) -> str:
    """'overfitting, which the task metric shows too: mAP50-95 best at step 2 (0.5383), 0.4957 at step
    102': each echo's evidence in a clause, every value the one logged at the step it is next to."""
    clauses = [c for c in (_overfit_clause(a) for a in echoes) if c]
    head = _OVERFIT_HEAD[root.rule]
    return f"{head}: {'; '.join(clauses)}" if clauses else head


def _overfit_clause(a: Alert) -> str:
    ev = a.finding.evidence
    best, at = ev.get("value"), ev.get("step")
    if not isinstance(best, (int, float)) or not isinstance(at, int):
        return ""
    last, last_at = a.last_value, a.last_step
    if a.rule == "loss.overfit":
        later = ev.get("later_evals") or []
        if (last is None or last_at is None or last_at == at) and later:
            last_at, last = later[-1][0], later[-1][1]
        said = f"eval_loss lowest at step {at} ({fmt(best)})"
    else:
        last, last_at = ev.get("last_value", last), ev.get("last_step", last_at)
        said = f"{a.finding.subject or 'the task metric'} best at step {at} ({fmt(best)})"
    if isinstance(last, (int, float)) and isinstance(last_at, int) and last_at != at and math.isfinite(last):
        said += f", {fmt(float(last))} at step {last_at}"
    return f"{said} ({a.rule})"


def _fixes_once(fixes: tuple[str, ...]) -> tuple[str, ...]:
    """The incident's fixes, each once (the same words or what an earlier one covers: runconfig.fit.Given)."""
    given = Given()
    return tuple(f for f in fixes if given.new(f))


def _fold_blowups(alerts: list[Alert], store: MetricStore) -> None:
    """Marks each blow-up's root (`incident`: its one-line story) and its echoes (`echo_of`, info)."""
    by_source: dict[str, list[Alert]] = {}
    for a in alerts:
        if a.rule in CHAIN and not a.retracted and a.first_step is not None:
            by_source.setdefault(a.source, []).append(a)
    for source, links in by_source.items():
        links.sort(key=lambda a: (a.first_step, a.first_line))
        folded: set[str] = set()
        # at one step the train loss's NaN is the root, not the eval's or the grad norm's told beside it
        for root in sorted((a for a in links if _anchor(a)), key=lambda a: (a.first_step, a.finding.subject != "loss",
                                                                          a.first_line)):
            if root.fingerprint in folded or root.echo_of:
                continue
            others = [a for a in links if a is not root and a.fingerprint not in folded]
            blowup = _blowup(root)
            chain = _chain(root, others, store) if blowup else _alongside(root, others, store)
            if not chain:
                continue  # a divergence or a NaN alone is its own finding, told by its rule
            folded.add(root.fingerprint)
            folded.update(a.fingerprint for a in chain)
            start = min(a.first_step for a in [root, *chain] if a.first_step is not None)
            root.first_step = start  # its first episode keeps the rule's own start: membership is judged by it
            root.incident = _story(source, start, chain + [root], store) if blowup else \
                _nan_story(start, chain + [root])
            for a in chain:
                a.echo_of = f"{root.rule} at step {start}"
                a.severity = Severity.INFO
                a.finding.evidence["root_cause"] = a.echo_of


def ordered(alerts: Iterable[Alert], restarts: Mapping[str, Sequence[int]] | None = None) -> list[Alert]:
    """Causes first (most severe, then earliest), each followed by its echoes in the order they began.
    Earliest is by the time in the log: the attempt (`restarts`: per source, the lines where its step
    counter went back), then the step; a step 0 of the third attempt comes after step 3400 of the second."""
    found = list(alerts)
    starts = restarts or {}

    def key(a: Alert) -> tuple[int, int, float, int]:
        return _key(a, starts.get(a.source, ()))
    roots = sorted((a for a in found if not a.echo_of), key=key)
    echoes = sorted((a for a in found if a.echo_of), key=key)
    out: list[Alert] = []
    for r in roots:
        out.append(r)
        if r.incident:
            here = f"{r.rule} at step {r.first_step}"
            out += [e for e in echoes if e.echo_of == here and e.source == r.source]
    seen = {id(a) for a in out}
    return out + [e for e in echoes if id(e) not in seen]


def root_first(changes: list[AlertChange]) -> list[AlertChange]:
    """The changes to tell, each incident's root before the echoes told with it: when one batch of lines
    holds a whole blow-up, its links fire before the root that needed more rows, yet the root is told first."""
    roots = {(c.alert.source, f"{c.alert.rule} at step {c.alert.first_step}"): i for i, c in enumerate(changes)
             if c.state is AlertState.FIRING and c.alert.incident}
    later: dict[int, list[AlertChange]] = {}
    out: list[AlertChange] = []
    for i, c in enumerate(changes):
        root = roots.get((c.alert.source, c.alert.echo_of), -1) if c.state is AlertState.FIRING else -1
        if root > i:
            later.setdefault(root, []).append(c)
            continue
        out.append(c)
        out += later.pop(i, [])
    return out


def _key(a: Alert, restarts: Sequence[int]) -> tuple[int, int, float, int]:
    """Severity, then the attempt the finding was found in, its step in it (none: before its first step),
    and its line."""
    attempt = bisect.bisect_right(restarts, a.first_line) if a.first_line > 0 else 0
    step = a.first_step if a.first_step is not None else -1
    return (-a.severity, attempt, step, a.first_line)


def _anchor(a: Alert) -> bool:
    """A link that says the run broke: a divergence, or a NaN loss (a blow-up's, or one with other causes
    that other metrics' NaN at the same step echo)."""
    if not a.told or (a.severity < Severity.CRITICAL and not a.incident):
        return False
    return a.rule in ("loss.diverging", "loss.nonfinite")


def _blowup(root: Alert) -> bool:
    """A root whose chain is an optimisation blow-up: a divergence, or a NaN a grad-norm spike led to."""
    return root.rule == "loss.diverging" or root.finding.evidence.get("diagnosis") == "blow-up"


def _alongside(root: Alert, others: list[Alert], store: MetricStore) -> list[Alert]:
    """The NaN of other metrics (grad_norm, eval_loss) that began with a NaN loss of another cause (a bad
    sample, numerics): between the logged points before and after its start, one incident."""
    start = root.first_step if root.first_step is not None else 0
    lo, hi = _step_before(store, root.source, start), _step_after(store, root.source, start)
    return [a for a in others if a.rule in NONFINITE and a.first_step is not None and lo <= a.first_step <= hi]


def _nan_story(start: int, chain: list[Alert]) -> str:
    """'loss went NaN at step 40, with grad_norm and eval_loss': which metrics, and where each began."""
    names = [n for n in dict.fromkeys(a.finding.subject or a.rule for a in chain) if n != "loss"]
    parts = _nonfinite_from(chain)
    with_ = f", with {' and '.join(names)}" if names else ""
    return f"loss went non-finite at step {start}{with_}: " + ", ".join(parts)


def _chain(root: Alert, others: list[Alert], store: MetricStore) -> list[Alert]:
    """The links of the root's incident: those that began within its episode, from the loss point logged
    before its start (a grad-norm spike comes with the jump, or a step before the NaN), and, link by link,
    those that began at the logged point before the earliest link found (a grad-norm spike, then a loss
    spike, then the NaN: one chain); until the root stopped holding (a divergence that recovered ends its
    incident; a NaN after that is another story)."""
    first = root.episodes[0] if root.episodes else None
    own = first.start_step if first is not None else root.first_step
    start = own if own is not None else 0
    end = math.inf
    if root.rule == "loss.diverging" and first is not None and first.resolved_at is not None:
        end = first.end_step if first.end_step is not None else math.inf
    chain: list[Alert] = []
    while True:
        lo = _step_before(store, root.source, start)
        more = [a for a in others if a not in chain and lo <= a.first_step <= _end(a, root, end, store)]  # type: ignore[operator]
        if not more:
            return chain
        chain += more
        start = min([start, *(a.first_step for a in more if a.first_step is not None)])


def _end(a: Alert, root: Alert, end: float, store: MetricStore) -> float:
    """The last step `a` may begin at: a NaN belongs to a recovered divergence when the loss went NaN
    where it stopped being judged."""
    return _step_after(store, root.source, end) if a.rule in NONFINITE and math.isfinite(end) else end


def _step_after(store: MetricStore, source: str, step: float) -> float:
    s = store.get("loss", source)
    if s is None or not math.isfinite(step):
        return step
    steps, _, _, _ = s.columns(RECENT_POINTS)
    later = steps[steps > step]
    return int(later[0]) if len(later) else step


def _step_before(store: MetricStore, source: str, step: int) -> int:
    s = store.get("loss", source)
    if s is None:
        return step
    steps, _, _, _ = s.columns(RECENT_POINTS)
    earlier = steps[steps < step]
    return int(earlier[-1]) if len(earlier) else step


def _story(source: str, start: int, chain: list[Alert], store: MetricStore) -> str:
    """'training blew up at step 25: grad_norm 1 -> 50, loss 1.204 -> 3.611 (steps 24 -> 25), NaN from
    step 30': each value is the one logged at the step named, none a median."""
    jumps = [j for j in (_jump(store, source, name, start) for name in ("grad_norm", "loss")) if j is not None]
    parts = [f"{name} {a} -> {b}" for name, a, b, _ in jumps]
    if jumps:
        befores = {j[3] for j in jumps}
        if len(befores) == 1:
            parts[-1] += f" (steps {befores.pop()} -> {start})"
        else:
            parts = [f"{p} (steps {j[3]} -> {start})" for p, j in zip(parts, jumps)]
    parts += _nonfinite_from(a for a in chain if a.rule in NONFINITE)
    head = f"training blew up at step {start}"
    return f"{head}: " + ", ".join(parts) if parts else head


def _nonfinite_from(bad: Iterable[Alert]) -> list[str]:
    """'NaN from step 30' when every metric of the chain went non-finite at one step, else 'grad_norm NaN
    from step 26, loss NaN from step 27' (and 'grad_norm Inf from step 12' when only one did): the step
    each rule's own first episode began, not the incident's start."""
    seen: list[tuple[int, str, str]] = []
    for a in bad:
        first = a.episodes[0].start_step if a.episodes and a.episodes[0].start_step is not None else a.first_step
        if first is None:
            continue
        v = a.finding.evidence.get("value")
        word = "Inf" if isinstance(v, float) and math.isinf(v) else "NaN"
        seen.append((first, a.finding.subject or a.rule, word))
    seen.sort()
    if not seen:
        return []
    if len(seen) > 1 and len({step for step, _, _ in seen}) == 1 and len({w for _, _, w in seen}) == 1:
        return [f"{seen[0][2]} from step {seen[0][0]}"]
    return [f"{name} {word} from step {step}" for step, name, word in seen]


def _jump(store: MetricStore, source: str, name: str, start: int) -> tuple[str, str, str, int] | None:
    """The values of `name` logged at the point before the start and at it, and that point's step, when
    it rose there or stopped being finite."""
    s = store.get(name, source)
    if s is None:
        return None
    steps, values, _, _ = s.columns(RECENT_POINTS)
    at = np.flatnonzero(steps == start)
    before = np.flatnonzero(steps < start)
    if not len(at) or not len(before):
        return None
    a, b = int(before[-1]), int(at[-1])
    if math.isfinite(values[a]) and math.isfinite(values[b]) and values[b] <= values[a]:
        return None  # it did not jump there: a grad-norm spike can lead while the loss still falls
    return name, _v(values[a]), _v(values[b]), int(steps[a])


def _v(x: float) -> str:
    x = float(x)
    if math.isfinite(x):
        return fmt(x)
    return "NaN" if x != x else "Inf"
