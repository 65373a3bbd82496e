"""The alert life cycle, Prometheus-style: inactive -> pending -> firing -> resolved.

Every rule's verdicts come here. An alert is keyed by a fingerprint (rule, source, subject), so it is
reported once while it keeps firing; `for` and `keep_firing_for` count logged steps or seconds; and
inhibit rules keep dependent alerts quiet while their cause fires, as Alertmanager does.

An alert that resolves and fires again is told to the sinks each time (the live view sees every
transition), but the book keeps one record per fingerprint: the first episode's alert, dated and
worded at its start, with every episode listed. That record is what a report shows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from trainwatch.config import Config, Duration, Inhibit, RuleSpec
from trainwatch.lifecycle import Cycle, Phase, Step, Transition, advance
from trainwatch.model import Alert, AlertState, Episode, Finding, told_state

MAX_ALERTS = 2000  # oldest resolved alerts are dropped past this, so memory stays bounded


def fingerprint(rule: str, source: str, subject: str) -> str:
    return hashlib.sha1(f"{rule}\x00{source}\x00{subject}".encode()).hexdigest()[:16]


Key = tuple[str, str, str]
"""(rule id, source, subject): one alert's identity."""

_AT_ONCE = Duration()
"""The `for` of a one-time judgement (an event, the end of a run): it fires on the row it is made."""


@dataclass
class _Track:
    """An alert the book records (pending, firing or resolved; a resolved one keeps its fingerprint for
    its next episode) and whether the sinks were told it fires."""

    alert: Alert
    notified: bool = False


@dataclass(frozen=True, slots=True)
class Held:
    """Rows the condition held on between two transitions: how many, and the latest one's step, value and
    time."""

    rows: int
    last_step: int | None
    last_value: float | None
    now: float


@dataclass(frozen=True)
class AlertChange:
    """A transition worth telling the sinks about."""

    alert: Alert
    state: AlertState  # FIRING (new) or RESOLVED

    @property
    def told_state(self) -> str:
        """`firing`, `resolved` (recovered), `stopped` (resolved without recovering: see Alert.stopped) or
        `ended` (a one-time judgement: see Rule.once)."""
        return told_state(self.alert, self.state)


FixFitter = Callable[[RuleSpec, Finding, tuple[str, ...]], tuple[str, ...]]
"""Fits an alert's fixes (the finding's own, then the rule's) to the run it is about."""


def _as_written(spec: RuleSpec, finding: Finding, fixes: tuple[str, ...]) -> tuple[str, ...]:
    return fixes


class AlertBook:
    """The one owner of per-alert state: each alert's life-cycle position (`Cycle`, moved only by
    trainwatch.lifecycle.advance) and its record (`_Track`: the alert the sinks and reports read).

    A row verdict (`judge`) runs the life cycle over an array of one row and records its transitions at
    once. Array rules plan a round first (`advance`, `restart`) and have the book record the transitions
    later (`enact`), in the order their rows were fed, so inhibition sees alerts fire in the log's order:
    between the two, an alert's cycle is ahead of its record."""

    def __init__(self, config: Config, fit: FixFitter = _as_written) -> None:
        self._fit = fit
        self._specs = config.rules
        self._inhibit: list[Inhibit] = config.inhibit
        self._tracks: dict[Key, _Track] = {}
        self._cycles: dict[Key, Cycle] = {}  # never trimmed: an idle cycle is a few numbers per key
        self.alerts: dict[str, Alert] = {}  # every alert that fired, by fingerprint, oldest first
        self.once: frozenset[str] = frozenset()  # ids of the rules that judge once (Rule.once)

    def judge(self, spec: RuleSpec, source: str, subject: str, finding: Finding | None, now: float,
              *, one_shot: bool = False, at_end: bool = False) -> list[AlertChange]:
        """Applies one verdict: `finding` when the condition holds, None when it does not. It is the life
        cycle over one row: `one_shot` fires on that row, whatever the rule's `for`; `at_end`: the verdict
        of a rule's judgement of the whole run, on no row of its own."""
        key = (spec.id, source, subject)
        cycle = self._cycles.get(key)
        if cycle is None:
            if finding is None:
                return []
            cycle = self._cycles[key] = Cycle()
        elif finding is None and cycle.phase is Phase.IDLE:
            return []
        steps = advance(cycle, np.array((finding is not None,)), np.array((now,)),
                        _AT_ONCE if one_shot else spec.for_, spec.keep_firing_for)
        if finding is not None and (not steps or steps[0].step is not Step.PENDING):
            track = self._tracks.get(key)
            if track is not None:
                # a judgement at the run's end of the point the rows already counted adds no row to the count
                again = at_end and track.alert.last_step is not None and track.alert.last_step == _last_step(finding)
                self._repeat(track.alert, finding, now, 0 if again else 1)
        out: list[AlertChange] = []
        for t in steps:
            out.extend(self._enact(key, spec, t.step, now, finding, ""))
        return out

    def tracks(self, rule: str, source: str, subject: str) -> bool:
        """Whether the book holds an alert of this rule, source and subject (pending, firing or resolved):
        a rule's gate may not skip rows whose verdict would move it."""
        return bool(self._tracks) and (rule, source, subject) in self._tracks

    def only_repeats(self, spec: RuleSpec, source: str, subject: str, finding: Finding) -> bool:
        """Whether judging this finding would only count one more row of an alert already firing: no
        alert's state, severity, finding or evidence would change, so no other alert's transition (nor
        inhibition) depends on whether it is applied before or after them."""
        track = self._tracks.get((spec.id, source, subject))
        if track is None or track.alert.state is not AlertState.FIRING or finding.amends:
            return False
        return finding.severity is None or not finding.severity > track.alert.severity

    def settled(self, spec: RuleSpec, source: str, subject: str) -> bool:
        """Whether a verdict that the condition does not hold would change nothing: the alert resolved
        already (it stays tracked so a next episode keeps its fingerprint)."""
        track = self._tracks.get((spec.id, source, subject))
        return track is None or track.alert.state is AlertState.RESOLVED

    # -- the array path: a round is planned (`advance`, `restart`), then recorded in feed order (`enact`) --

    def advance(self, spec: RuleSpec, source: str, subject: str, cond: np.ndarray,
                now: np.ndarray) -> list[Transition]:
        """The alert's life cycle moved over new rows (`cond`: whether the condition held at each); the
        transitions are recorded when `enact` is told them."""
        key = (spec.id, source, subject)
        cycle = self._cycles.get(key)
        if cycle is None:
            cycle = self._cycles[key] = Cycle()
        return advance(cycle, cond, now, spec.for_, spec.keep_firing_for)

    def restart(self, spec: RuleSpec, source: str, subject: str) -> None:
        """The rule withdrew its finding at the row the cycle has reached: the rows after it start afresh."""
        self._cycles[(spec.id, source, subject)] = Cycle()

    def enact(self, spec: RuleSpec, source: str, subject: str, step: Step | None, now: float, *,
              finding: Finding | None = None, held: Held | None = None, reason: str = "") -> list[AlertChange]:
        """Records one planned transition: first the rows the condition held on since the last one (`held`),
        then the transition (PENDING needs the `finding` made at its row; RETRACTED the `reason`; None:
        none, the rows held to the end of a round)."""
        key = (spec.id, source, subject)
        if held is not None and held.rows > 0:
            track = self._tracks.get(key)
            if track is not None:
                self._held(track.alert, held.rows, held.last_step, held.last_value, held.now)
        return self._enact(key, spec, step, now, finding, reason) if step is not None else []

    def finding_of(self, spec: RuleSpec, source: str, subject: str) -> Finding | None:
        """The finding of the alert tracked for (rule, source, subject), as made where its episode began."""
        track = self._tracks.get((spec.id, source, subject))
        return track.alert.finding if track is not None else None

    def active(self, spec: RuleSpec, source: str, subject: str) -> bool:
        """Whether the alert's cycle is pending or firing, as far as the rows advanced so far."""
        cycle = self._cycles.get((spec.id, source, subject))
        return cycle is not None and cycle.phase is not Phase.IDLE

    # -- internals ----------------------------------------------------------------------------------

    def _enact(self, key: Key, spec: RuleSpec, step: Step, now: float, finding: Finding | None,
               reason: str) -> list[AlertChange]:
        """The record follows one transition of the alert's cycle."""
        track = self._tracks.get(key)
        if step is Step.PENDING:
            assert finding is not None
            self._begin(key, spec, finding, now, track)
        elif track is None:
            pass
        elif step is Step.FIRING:
            if track.alert.state is AlertState.PENDING:
                return self._fire(track, now)
        elif step is Step.DROPPED:
            if track.alert.state is AlertState.PENDING:
                del self._tracks[key]
                self._held_again(spec, track.alert)
        elif step is Step.RESOLVED:
            if track.alert.state is AlertState.FIRING:
                return self._resolve(track, now)
        elif step is Step.RETRACTED:
            return self._retracted(key, track, reason, now)
        return []

    def _begin(self, key: Key, spec: RuleSpec, finding: Finding, now: float, old: _Track | None) -> _Track:
        fp = old.alert.fingerprint if old is not None else fingerprint(*key)
        alert = Alert(rule=spec.id, severity=finding.severity if finding.severity is not None else spec.severity,
                      family=spec.family, title=finding.title or spec.title, finding=finding,
                      fixes=self._fit(spec, finding, _fixes(spec, finding)),
                      state=AlertState.PENDING,
                      fingerprint=fp, first_step=_began(finding), first_line=finding.line, started_at=now,
                      once=spec.id in self.once,
                      last_seen_at=now, last_step=_last_step(finding), last_value=_last_value(finding))
        track = self._tracks[key] = _Track(alert)
        return track

    def _fire(self, track: _Track, now: float) -> list[AlertChange]:
        a = track.alert
        a.state = AlertState.FIRING
        a.started_at = now
        a.found_step = a.last_step
        self._episode_starts(a, now)
        self._trim()
        if not self._inhibited(a):
            self._tell(track)
            return [AlertChange(a, AlertState.FIRING)]
        return []

    def _tell(self, track: _Track) -> None:
        track.notified = True
        track.alert.told = True
        record = self.alerts.get(track.alert.fingerprint)
        if record is not None:
            record.told = True  # the report's record of this fingerprint, when a later episode is told

    def _repeat(self, a: Alert, finding: Finding, now: float, rows: int = 1) -> None:
        """The condition still holds: the alert keeps the moment it is about and notes the latest."""
        graver = finding.severity is not None and finding.severity > a.severity
        if graver:
            a.severity = finding.severity  # type: ignore[assignment]
            a.finding = finding  # the graver moment is what the alert is about now
        elif a.state is AlertState.PENDING and finding.began_step is not None:
            a.finding = finding  # the rule dates the start itself, with more evidence each time
            a.first_step = finding.began_step
        for target in _distinct(a, self.alerts.get(a.fingerprint)):
            target.last_line = max(target.last_line, finding.line)
        if finding.amends:
            for target in _distinct(a, self.alerts.get(a.fingerprint)):
                target.finding.evidence.update(finding.evidence)
        self._held(a, rows, _last_step(finding), _last_value(finding), now)

    def _held(self, a: Alert, rows: int, last_step: int | None, last_value: float | None, now: float) -> None:
        """Counts rows the condition held on and notes the latest, in the alert and its record."""
        a.last_seen_at = now
        a.count += rows
        a.last_step = last_step
        a.last_value = last_value
        record = self.alerts.get(a.fingerprint)
        if a.state is AlertState.FIRING and record is not None:
            if record is not a:
                record.count += rows
                record.last_seen_at = now
                record.last_step, record.last_value = a.last_step, a.last_value
                if a.severity > record.severity:
                    record.severity = a.severity
            if record.episodes:
                record.episodes[-1].end_step = a.last_step

    def _episode_starts(self, a: Alert, now: float) -> None:
        """The first episode makes `a` the record of its fingerprint; a later one adds to that record."""
        episode = Episode(a.first_step, a.last_step, now, line=a.first_line)
        record = self.alerts.get(a.fingerprint)
        if record is None or record is a:
            a.add_episode(episode)
            self.alerts[a.fingerprint] = a
            return
        record.add_episode(episode)
        a.episodes = [episode]  # told as its own change: this episode (shared, so it ends with the record's)
        a.episode_count = record.episode_count  # ... and which one it is
        record.state = AlertState.FIRING
        record.resolved_at = None
        record.retracted = ""  # it holds again: what disproved the last episode does not disprove this one
        record.stopped = ""
        record.count += a.count
        record.last_line = max(record.last_line, a.first_line, a.last_line)
        record.last_seen_at = now
        record.last_step, record.last_value = a.last_step, a.last_value
        if a.severity > record.severity:
            record.severity = a.severity
        self.alerts[a.fingerprint] = self.alerts.pop(a.fingerprint)  # newest activity last, as before

    def _held_again(self, spec: RuleSpec, a: Alert) -> None:
        """A pending run of an alert that fired before ended short of `for`: its condition held again after
        the alert resolved, so the record did not recover. Its rows are counted and its last step is the
        record's latest, so a report never says "last seen" at the end of the first episode while the
        condition kept coming back."""
        record = self.alerts.get(a.fingerprint)
        if record is None or record is a or record.state is not AlertState.RESOLVED or record.retracted:
            return
        mine = not record.stopped or record.held_again > 0  # a NaN or the run's end said it first: kept
        record.count += a.count
        record.held_again += a.count
        record.last_step, record.last_value = a.last_step, a.last_value
        record.last_line = max(record.last_line, a.first_line, a.last_line)
        record.last_seen_at = max(record.last_seen_at, a.last_seen_at)
        if mine:
            record.stopped = (f"held again on {record.held_again} later step{'s' if record.held_again > 1 else ''}, "
                              f"in runs shorter than {spec.for_}")

    def end_pending(self, source: str) -> None:
        """The data of `source` ended: a pending run of an alert that fired before will never reach `for`,
        so it is told as the rows it held on (`_held_again`) and its cycle starts afresh."""
        for key, track in list(self._tracks.items()):
            if key[1] != source or track.alert.state is not AlertState.PENDING:
                continue
            record = self.alerts.get(track.alert.fingerprint)
            if record is None or record is track.alert:
                continue  # never fired: nothing was said that this run could contradict
            del self._tracks[key]
            self._cycles[key] = Cycle()
            spec = self._specs.get(key[0])
            if spec is not None:
                self._held_again(spec, track.alert)

    def stopped(self, spec: RuleSpec, source: str, subject: str, why: str) -> None:
        """The alert that just resolved did not recover: its metric went non-finite, or the run ended.
        Said on the alert and its record, so every outlet tells it as stopped, not resolved."""
        track = self._tracks.get((spec.id, source, subject))
        if track is None or track.alert.state is not AlertState.RESOLVED or track.alert.retracted:
            return
        for target in _distinct(track.alert, self.alerts.get(track.alert.fingerprint)):
            target.stopped = why
            if target.episodes and target.episodes[-1].resolved_at is not None:
                target.episodes[-1].stopped = why  # (this episode ended; a later one may still recover)

    def retract(self, spec: RuleSpec, source: str, subject: str, reason: str, now: float) -> list[AlertChange]:
        """The rule says its finding was wrong: the alert resolves at once (keep_firing_for does not
        apply) and its record says why, so a report of the run leaves it out."""
        self.restart(spec, source, subject)
        return self.enact(spec, source, subject, Step.RETRACTED, now, reason=reason)

    def _retracted(self, key: Key, track: _Track, reason: str, now: float) -> list[AlertChange]:
        a = track.alert
        if a.state is AlertState.PENDING:
            del self._tracks[key]
            return []
        record = self.alerts.get(a.fingerprint)
        for target in _distinct(a, record):
            target.retracted = reason
        if a.state is AlertState.RESOLVED:
            return []
        return self._resolve(track, now)

    def _resolve(self, track: _Track, now: float) -> list[AlertChange]:
        """The alert and its fingerprint's record resolve; its episode ends at the last step it held."""
        a = track.alert
        a.state = AlertState.RESOLVED
        a.resolved_at = now
        record = self.alerts.get(a.fingerprint)
        if record is not None:
            record.state = AlertState.RESOLVED
            record.resolved_at = now
            if record.episodes:
                record.episodes[-1].resolved_at = now
                record.episodes[-1].end_step = a.last_step
        changes = [AlertChange(a, AlertState.RESOLVED)] if track.notified else []
        return changes + self._released(a)

    def _inhibited(self, alert: Alert) -> bool:
        for rule in self._inhibit:
            if alert.rule not in rule.targets and "*" not in rule.targets:
                continue
            for other in self.alerts.values():
                if other is alert or other.rule != rule.source or other.state is not AlertState.FIRING:
                    continue
                if all(_label(other, k) == _label(alert, k) for k in rule.equal):
                    return True
        return False

    def _released(self, cause: Alert) -> list[AlertChange]:
        """Alerts that were held quiet by `cause` and still fire are told now."""
        out = []
        for track in self._tracks.values():
            a = track.alert
            if a.state is AlertState.FIRING and not track.notified and not self._inhibited(a):
                self._tell(track)
                out.append(AlertChange(a, AlertState.FIRING))
        return out

    def is_inhibited(self, alert: Alert) -> bool:
        return alert.state is AlertState.FIRING and self._inhibited(alert)

    def firing(self) -> list[Alert]:
        return [a for a in self.alerts.values() if a.state is AlertState.FIRING]

    def all(self) -> Iterable[Alert]:
        return self.alerts.values()

    def refit(self, source: str) -> None:
        """The fixes of `source`'s alerts fitted again, once its run has ended: while it ran they could
        quote only what the log had shown so far (the LR still warming up), and a report of the
        whole run quotes the run."""
        for alert in self.alerts.values():
            spec = self._specs.get(alert.rule)
            if spec is not None and alert.finding.source == source:
                alert.fixes = self._fit(spec, alert.finding, _fixes(spec, alert.finding))

    def _trim(self) -> None:
        if len(self.alerts) <= MAX_ALERTS:
            return
        for fp, a in list(self.alerts.items()):
            if a.state is AlertState.RESOLVED:
                del self.alerts[fp]
                for key, track in list(self._tracks.items()):
                    if track.alert is a:
                        del self._tracks[key]
                if len(self.alerts) <= MAX_ALERTS:
                    return


def _began(f: Finding) -> int | None:
    return f.began_step if f.began_step is not None else f.step


def _last_step(f: Finding) -> int | None:
    v = f.evidence.get("last_step")
    return v if isinstance(v, int) and not isinstance(v, bool) else f.step


def _last_value(f: Finding) -> float | None:
    """The value the alert shows as its latest: the rule's `last_value`, else its `value` when that is
    the one logged at the latest step (a `value_stat` says it is a median or a mean, a `step` that it
    was logged elsewhere: then none, rather than a number a reader would take for the step's own)."""
    for k in ("last_value", "value"):
        if k == "value" and (f.evidence.get("value_stat") or f.evidence.get("step", f.step) != _last_step(f)):
            continue  # a statistic, or logged at another step than the one the alert shows as its latest
        v = f.evidence.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
    return None


def _label(alert: Alert, key: str) -> str:
    if key == "source":
        return alert.finding.source
    if key == "subject":
        return alert.finding.subject
    return ""


def _distinct(a: Alert, record: Alert | None) -> list[Alert]:
    """The alert of this episode and its fingerprint's record (the first episode's), once each."""
    return [a] if record is None or record is a else [a, record]


def _fixes(spec: RuleSpec, finding: Finding) -> tuple[str, ...]:
    """The fixes a finding is given before fitting: its own in place of the rule's when it concluded
    another case than the rule's title names, else its situation's first, then the rule's."""
    if finding.fixes is not None:
        return finding.fixes
    return tuple(finding.extra_fixes) + spec.fixes
