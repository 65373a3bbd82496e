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

from trainwatch.config import Config, Duration, Inhibit, RuleSpec
from trainwatch.model import Alert, AlertState, Episode, Finding, told_state

MAX_ALERTS = 2000  # oldest resolved alerts are dropped past this, so memory stays bounded


def fingerprint(rule: str, source: str, subject: str) -> str:
    return hashlib.sha1(f"{rule}\x00{source}\x00{subject}".encode()).hexdigest()[:16]


@dataclass
class _Track:
    alert: Alert
    active_since: float
    active_evals: int = 1
    inactive_since: float | None = None
    inactive_evals: int = 0
    notified: bool = False


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
    def __init__(self, config: Config, fit: FixFitter = _as_written) -> None:
        self._fit = fit
        self._specs = config.rules
        self._inhibit: list[Inhibit] = config.inhibit
        self._tracks: dict[tuple[str, str, str], _Track] = {}
        self.tracked = self._tracks  # read-only view for the engine's fast path: (rule, source, subject) keys
        self.alerts: dict[str, Alert] = {}  # every alert that fired, by fingerprint, oldest first
        self.once: frozenset[str] = frozenset()  # ids of the rules that judge once (Rule.once)

    def judge(self, spec: RuleSpec, source: str, subject: str, finding: Finding | None, now: float,
              *, one_shot: bool = False) -> list[AlertChange]:
        """Applies one verdict: `finding` when the condition holds, None when it does not."""
        key = (spec.id, source, subject)
        track = self._tracks.get(key)
        if finding is None:
            return self._inactive(key, track, spec, now) if track else []
        if track is None or track.alert.state is AlertState.RESOLVED:
            track = self._begin(key, spec, finding, now, track)
        else:
            track.active_evals += 1
            track.inactive_since = None
            track.inactive_evals = 0
            self._repeat(track.alert, finding, now)
        if track.alert.state is AlertState.PENDING and (
                one_shot or _reached(spec.for_, track.active_evals, now - track.active_since)):
            return self._fire(track, now)
        return []

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

    # -- the array path: trainwatch.lifecycle decided the transitions; the book records them ------------

    def begin(self, spec: RuleSpec, source: str, subject: str, finding: Finding, now: float) -> None:
        """The condition began to hold: a pending alert with the finding of its first row."""
        key = (spec.id, source, subject)
        self._begin(key, spec, finding, now, self._tracks.get(key))

    def hold(self, spec: RuleSpec, source: str, subject: str, rows: int, last_step: int | None,
             last_value: float | None, now: float) -> None:
        """The condition held on `rows` more rows, the latest at `last_step`."""
        track = self._tracks.get((spec.id, source, subject))
        if track is not None and rows > 0:
            self._held(track.alert, rows, last_step, last_value, now)

    def fire(self, spec: RuleSpec, source: str, subject: str, now: float) -> list[AlertChange]:
        track = self._tracks.get((spec.id, source, subject))
        return self._fire(track, now) if track is not None and track.alert.state is AlertState.PENDING else []

    def drop(self, spec: RuleSpec, source: str, subject: str) -> None:
        """It stopped holding before `for` was reached: the pending alert is forgotten."""
        key = (spec.id, source, subject)
        track = self._tracks.get(key)
        if track is not None and track.alert.state is AlertState.PENDING:
            del self._tracks[key]

    def resolve(self, spec: RuleSpec, source: str, subject: str, now: float) -> list[AlertChange]:
        track = self._tracks.get((spec.id, source, subject))
        return self._resolve(track, now) if track is not None and track.alert.state is AlertState.FIRING else []

    # -- internals ----------------------------------------------------------------------------------

    def _begin(self, key: tuple[str, str, str], spec: RuleSpec, finding: Finding, now: float,
               old: _Track | None) -> _Track:
        fp = old.alert.fingerprint if old is not None else fingerprint(*key)
        alert = Alert(rule=spec.id, severity=finding.severity if finding.severity is not None else spec.severity,
                      family=spec.family, title=spec.title, finding=finding,
                      fixes=self._fit(spec, finding, tuple(finding.extra_fixes) + spec.fixes),
                      state=AlertState.PENDING,
                      fingerprint=fp, first_step=_began(finding), first_line=finding.line, started_at=now,
                      once=spec.id in self.once,
                      last_seen_at=now, last_step=_last_step(finding), last_value=_last_value(finding))
        track = self._tracks[key] = _Track(alert, active_since=now)
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

    def _repeat(self, a: Alert, finding: Finding, now: float) -> None:
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
        self._held(a, 1, _last_step(finding), _last_value(finding), now)

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
        episode = Episode(a.first_step, a.last_step, now)
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

    def stopped(self, spec: RuleSpec, source: str, subject: str, why: str) -> None:
        """The alert that just resolved did not recover: its metric went non-finite, or the run ended.
        Said on the alert and its record, so every outlet tells it as stopped, not resolved."""
        track = self._tracks.get((spec.id, source, subject))
        if track is None or track.alert.state is not AlertState.RESOLVED or track.alert.retracted:
            return
        for target in _distinct(track.alert, self.alerts.get(track.alert.fingerprint)):
            target.stopped = why

    def retract(self, spec: RuleSpec, source: str, subject: str, reason: str, now: float) -> list[AlertChange]:
        """The rule says its finding was wrong: the alert resolves at once (keep_firing_for does not
        apply) and its record says why, so a report of the run leaves it out."""
        key = (spec.id, source, subject)
        track = self._tracks.get(key)
        if track is None:
            return []
        a = track.alert
        if a.state is AlertState.PENDING:
            del self._tracks[key]
            return []
        record = self.alerts.get(a.fingerprint)
        for target in _distinct(a, record):
            target.retracted = reason
        if a.state is AlertState.RESOLVED:
            return []
        track.inactive_since = now
        track.inactive_evals = 0
        return self._resolve(track, now)

    def _inactive(self, key: tuple[str, str, str], track: _Track, spec: RuleSpec, now: float) -> list[AlertChange]:
        a = track.alert
        if a.state is AlertState.PENDING:
            del self._tracks[key]
            return []
        if a.state is AlertState.RESOLVED:
            return []
        if track.inactive_since is None:
            track.inactive_since = now
        track.inactive_evals += 1
        keep = spec.keep_firing_for
        if not keep.zero and not _reached(keep, track.inactive_evals, now - track.inactive_since, strict=True):
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
                alert.fixes = self._fit(spec, alert.finding, tuple(alert.finding.extra_fixes) + spec.fixes)

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


def _reached(d: Duration, evals: int, elapsed: float, strict: bool = False) -> bool:
    if d.seconds:
        return elapsed > d.seconds if strict else elapsed >= d.seconds
    needed = d.steps + (1 if strict else 0)
    return evals >= max(needed, 1)


def _label(alert: Alert, key: str) -> str:
    if key == "source":
        return alert.finding.source
    if key == "subject":
        return alert.finding.subject
    return ""


def _distinct(a: Alert, record: Alert | None) -> list[Alert]:
    """The alert of this episode and its fingerprint's record (the first episode's), once each."""
    return [a] if record is None or record is a else [a, record]
