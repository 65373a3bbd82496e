"""The records that flow through the engine: samples and events in, findings and alerts out."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Severity(enum.IntEnum):
    """Ordered so that max() gives the worst; values are the monitoring exit codes."""

    INFO = 0  # an info finding never changes the exit code
    WARNING = 1
    CRITICAL = 2

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return _SEVERITY_NAMES[text.strip().lower()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r} (use info, warning or critical)") from None

    @property
    def label(self) -> str:
        return _SEVERITY_LABELS[self]


_SEVERITY_NAMES = {"info": Severity.INFO, "warning": Severity.WARNING,
                   "critical": Severity.CRITICAL}
_SEVERITY_LABELS = {Severity.INFO: "info", Severity.WARNING: "warning", Severity.CRITICAL: "critical"}


@dataclass(slots=True)
class Sample:
    """One metric value at one step, as a format adapter read it."""

    name: str
    value: float
    step: int | None = None
    time: float | None = None  # seconds since the epoch, when the log says so
    source: str = ""
    line: int = 0
    step_inferred: bool = False


class EventKind(str, enum.Enum):
    ERROR = "error"  # a known error signature (OOM, NCCL, ...)
    TRACEBACK = "traceback"
    CHECKPOINT = "checkpoint"
    EVAL_START = "eval_start"
    TRAIN_END = "train_end"
    RESUME = "resume"
    PROGRESS = "progress"  # a progress bar: step of total, without metrics
    INFO = "info"  # facts a banner gives (total steps, batch size, ...)
    PLAN = "plan"  # the run's planned total in a unit and how far its counter got, or an early stop it told
    CONTACT = "contact"  # the SSH connection a remote log comes over was lost, or is back (fields: lost, host)


@dataclass(slots=True)
class Event:
    """Something the log says happened, other than a metric value."""

    kind: EventKind
    source: str = ""
    line: int = 0
    step: int | None = None
    time: float | None = None
    signature: str = ""  # id of the matched error signature, for ERROR events
    text: str = ""  # the evidence: the line, or the whole traceback
    fields: dict[str, Any] = field(default_factory=dict)


Record = Sample | Event

GPU_SOURCE = "gpu"  # the source name of GPU telemetry (sources/gpu.py); log files are named by their path


@dataclass(slots=True)
class Finding:
    """What a rule saw when its condition held: the evidence behind an alert."""

    message: str
    step: int | None = None
    line: int = 0
    source: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    subject: str = ""  # what the finding is about (a metric name, a signature id); part of the fingerprint
    step_inferred: bool = False
    severity: Severity | None = None  # overrides the rule's default when set
    extra_fixes: tuple[str, ...] = ()  # situation-specific fixes, shown before the rule's own
    title: str = ""
    """The finding's own title, for a rule that concluded another case than its title names (an eval loss
    that rises while the task metric improves is calibration, not overfitting); empty: the rule's."""
    fixes: tuple[str, ...] | None = None
    """The fixes of that other case, in place of the rule's own (which are about the case its title
    names); None: `extra_fixes` and the rule's own."""
    amends: bool = False
    """A repeat that adds to the evidence of the moment the alert describes (another rank printed the
    same error) rather than describing a later moment: merged into the alert's evidence."""
    began_step: int | None = None
    """Where the condition began, when the rule can tell (a divergence's first rise, an overfit's eval
    minimum). `step` is where the evidence became enough; reports date the finding at `began_step`."""


@dataclass(slots=True)
class Retraction:
    """A rule's word that what it reported was wrong: later data disproved it (eval loss went below the
    minimum an overfit was measured from; a loss called flat fell after all). The alert resolves, and a
    report of the whole run leaves it out of its findings and says why."""

    reason: str
    subject: str = ""


class AlertState(str, enum.Enum):
    PENDING = "pending"
    FIRING = "firing"
    RESOLVED = "resolved"


MAX_EPISODES = 100  # episodes listed per alert; a long flapping run keeps its first ones and the latest


@dataclass(slots=True)
class Episode:
    """One stretch of an alert firing: from the step its condition began to the last step seen firing."""

    start_step: int | None
    end_step: int | None = None
    started_at: float = 0.0
    resolved_at: float | None = None  # None while it fires
    line: int = 0  # the log line it began on (0: not known): in a log of several attempts, says whose step
    stopped: str = ""  # why it ended without its metric recovering (then `resolved` only says it ended)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"start": self.start_step, "end": self.end_step, "resolved": self.resolved_at is not None}
        if self.stopped:
            out["stopped"] = self.stopped
        return out


@dataclass(slots=True)
class Alert:
    """A rule's finding with its life cycle: reported once while it keeps firing.

    `finding` is the moment the alert is about (where its condition began, with that moment's
    evidence); later repeats only move `last_step`/`last_value`. An alert that resolves and fires
    again keeps its first finding and gains an episode, so a report shows one finding per condition.
    """

    rule: str
    severity: Severity
    family: str
    title: str
    finding: Finding
    fixes: tuple[str, ...]
    state: AlertState = AlertState.FIRING
    fingerprint: str = ""
    first_step: int | None = None
    first_line: int = 0
    last_line: int = 0  # the latest line it was seen on (0: only at first_line)
    started_at: float = 0.0
    last_seen_at: float = 0.0
    resolved_at: float | None = None
    count: int = 1
    found_step: int | None = None  # where the evidence became enough: the step it fired at
    last_step: int | None = None  # the latest step the condition was seen to hold
    last_value: float | None = None  # the rule's value at that step, when it gives one
    episodes: list[Episode] = field(default_factory=list)  # the first MAX_EPISODES - 1 and the latest
    episode_count: int = 0  # every episode, also those no longer listed
    told: bool = False  # told to the sinks at least once; never, when inhibition kept it quiet throughout
    retracted: str = ""  # why later data disproved it (empty while it stands)
    incident: str = ""  # the root of an incident (trainwatch/incident.py): the chain's story in one line
    echo_of: str = ""  # a link of an incident that is not its root: the root, "rule at step N"
    own_severity: Severity | None = None
    """The severity an incident fold lowered to info (trainwatch/incident.py), for a fold that undoes it."""
    once: bool = False  # a one-time judgement (Rule.once): it ends, it never recovers
    held_again: int = 0
    """Rows the condition held on after the alert resolved, in runs too short to reach `for` again: they
    count in `count` and move `last_step`, so "last seen" is the last step it held, not the last it fired."""
    stopped: str = ""
    """Why it stopped firing without its metric recovering ("loss is NaN at step 30", "the run ended"):
    resolved means recovered, so such an alert is told as stopped, never as resolved."""

    @property
    def source(self) -> str:
        return self.finding.source

    def add_episode(self, episode: Episode) -> None:
        """Lists the episode; past MAX_EPISODES the newest takes the last place, so memory stays bounded."""
        self.episode_count += 1
        if len(self.episodes) >= MAX_EPISODES:
            self.episodes[-1] = episode
        else:
            self.episodes.append(episode)

    def to_dict(self) -> dict[str, Any]:
        f = self.finding
        return {
            "id": self.rule,
            "fingerprint": self.fingerprint,
            "severity": self.severity.label,
            "family": self.family,
            "title": self.title,
            "state": self.told_state,
            "message": f"{self.incident}. {f.message}" if self.incident else f.message,
            "source": f.source,
            "subject": f.subject,
            "step": self.first_step,
            "step_inferred": f.step_inferred,
            "line": self.first_line,
            "line_step": f.step,  # the step logged on `line`: the start, or where the evidence became enough
            "found_step": self.found_step if self.found_step is not None else f.step,
            "last_step": self.last_step if self.last_step is not None else f.step,
            "last_value": self.last_value,
            "count": self.count,
            "held_again": self.held_again,
            "episodes": [e.to_dict() for e in self.episodes],
            "episode_count": self.episode_count,
            "evidence": _jsonable(f.evidence),
            "fixes": list(self.fixes),
            "started_at": self.started_at,
            "resolved_at": self.resolved_at,
            "retracted": self.retracted,
            "incident": self.incident,
            "echo_of": self.echo_of,
            "stopped": self.stopped,
        }

    @property
    def told_state(self) -> str:
        """The state as said to people and tools: `ended` for a one-time judgement that no longer holds,
        `stopped` for an alert that resolved without recovering."""
        return told_state(self, self.state)


def told_state(alert: Alert, state: AlertState) -> str:
    """How `state` of `alert` is said: resolved means recovered, so a one-time judgement that no longer
    holds has `ended` and an alert whose metric went non-finite, or whose run ended, has `stopped`."""
    if state is AlertState.RESOLVED and alert.once:
        return "ended"
    if state is AlertState.RESOLVED and alert.stopped:
        return "stopped"
    return state.value


def evidence_points(evidence: dict[str, Any]) -> list[tuple[str, int, float, str]]:
    """The (name, step, value, label) pairs a finding's evidence holds, by the naming convention every rule
    follows: `step` with `value`, and `<name>_step` with `<name>` or `<name>_value`. A value next to a step
    is the one the log holds at that step, unless `<name>_stat` (`value_stat` for the plain pair) says
    which statistic it is instead ("median of 8 points"); `label` is that, or "" for a logged value."""
    out = []
    for key, step in evidence.items():
        if key != "step" and not key.endswith("_step"):
            continue
        if not isinstance(step, int) or isinstance(step, bool):
            continue
        name = "" if key == "step" else key[:-len("_step")]
        candidates = ["value"] if not name else [f"{name}_value", name]
        for vk in candidates:
            v = evidence.get(vk)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                stat = evidence.get(f"{name or 'value'}_stat", "")
                out.append((name or "value", step, float(v), stat if isinstance(stat, str) else ""))
                break
    return out


def _jsonable(value: Any) -> Any:
    """NaN and Inf are data here; JSON has no literal for them, so they travel as strings."""
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value
