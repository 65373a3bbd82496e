"""What the error rules share: when a crash happened, which ranks printed it, and which error came first.

A failing distributed job prints one real error and then many echoes of it: the same traceback from
every rank, torchrun's ChildFailedError, NCCL errors from the ranks left waiting, a driver's own
traceback. The first critical error of a source is remembered here so that the rules that see the
echoes can say so (info) instead of raising a second and third critical finding.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from trainwatch.model import Alert, Event, Finding, Severity
from trainwatch.rules.base import RuleContext, SourceState

ECHO_PRONE = frozenset({"run.child_failed", "hang.nccl", "error.traceback", "run.signal", "run.killed",
                        "run.native_crash", "sched.job_failed"})
"""Errors that usually follow from another failure: a launcher reporting a dead child, ranks left
waiting in a collective, a driver failing after its worker did, a launcher's SIGTERM and SIGKILL to the
ranks left after one crashed, a rank aborted by the NCCL watchdog or segfaulting in its teardown, a
scheduler reporting the job's non-zero exit.
After a root error they are echoes."""

KILLS = frozenset({"run.signal", "run.killed", "sched.time_limit", "sched.cancelled", "sched.preempted"})
"""A run stopped from outside. Not critical, yet a root all the same: what fails after it with no step in
between (a data-loader worker killed by the same signal, the launcher's SignalException, the ranks left
waiting in a collective) is its echo, not a bug of its own."""

_RANK_IN_NAME = re.compile(r"rank[_-]?(\d+)", re.I)


NAMED_STEP = re.compile(r"(?i)(?<![\w.])(?:global[ _]?)?(?:step|iteration|iter)\s*(?:[=:#]\s*|\s)(\d+)\b(?![.,]\d)")
"""A step an error's own text names (`at step 30`, `step=30`, `iteration 30`): the word itself, not part
of a longer name (`max_steps=30`, `step_size=3`, `optimizer.step`), right before a whole number. A line
number, a rank or a size has another word before it and is never read as a step."""


def named_step(event: Event) -> int | None:
    """The step the error's message says it failed at, when it names exactly one.

    Only the message (the exception line, or the error line itself) is read: a traceback's frames
    quote source code, whose numbers are not the run's. Two different steps named: none is taken.
    """
    message = " ".join(str(event.fields.get(k) or "") for k in ("root_message", "message")).strip()
    if not message:
        lines = event.text.strip().splitlines()
        message = lines[-1] if lines else ""
    steps = {int(m) for m in NAMED_STEP.findall(message)}
    return steps.pop() if len(steps) == 1 else None


def running_step(ctx: RuleContext, event: Event) -> tuple[int | None, bool]:
    """The step that was running when the error was printed, and whether that is inferred.

    An error whose text names the step it failed at is dated there: the log's own word, not a guess
    (a step before the last one logged, or past the run's known length, is not that step and is not
    taken). Otherwise: the last step a log shows (a metrics line, or a progress bar counted on since)
    has finished; an error printed after it happened in the next one. Not so in an evaluation or a
    checkpoint save, which belong to the step just finished, or once the known last step has been reached.
    """
    step = event.step
    st = ctx.sources.get(event.source)
    if step is None or st is None or st.step is None or step != st.step:
        return step, False  # the adapter dated the event itself
    named = named_step(event)
    if named is not None and named >= step and (st.total_steps is None or named <= st.total_steps):
        return named, False
    if st.ended or st.phase != "train" or (st.total_steps is not None and step >= st.total_steps):
        return step, False
    return step + 1, True


def date(finding: Finding, ctx: RuleContext, event: Event) -> Finding:
    finding.step, inferred = running_step(ctx, event)
    finding.step_inferred = finding.step_inferred or inferred
    return finding


def handled(event: Event) -> bool:
    """A traceback (or an error inside one) that a logger printed at warning level or lower: the program
    caught the exception and went on (torch.compile falling back to eager prints pages of these), so it
    is no crash, whatever it holds."""
    return event.fields.get("logged_as") == "warning"


def crashed(state: SourceState) -> bool:
    """The run behind `state` crashed: a critical error was told and no new step was logged since."""
    first = state.first_error
    return first is not None and first.get("at_step") == state.step


def root_of(ctx: RuleContext, source: str, rank: Any = None) -> tuple[str, dict[str, Any]] | None:
    """The first critical error of this source, or of the source that holds the log of `rank`.

    Only while the run has made no progress since it: an error that training went on after was not
    fatal, and what fails later is a new root, not its echo.
    """
    st = ctx.sources.get(source)
    if st is not None and st.first_error is not None:
        if st.first_error["at_step"] == st.step:
            return source, st.first_error
        st.first_error = None
    if isinstance(rank, int):
        for name, other in ctx.sources.items():
            if other.first_error is not None and rank_of_source(name, other) == rank:
                return name, other.first_error
    return None


PEER_LOST = re.compile(r"(?i)closed by peer|remote (?:worker|process|peer)|peer (?:closed|reset|disconnected)|"
                       r"connection reset by peer|broken pipe|remote end closed")
"""A rank's own error that says another process went away first (gloo's `Connection closed by peer ..
typically caused by a remote worker crashing`, NCCL's remote process exits): the failure is that process's."""


def peer_root(ctx: RuleContext, source: str) -> tuple[str, dict[str, Any]] | None:
    """The first critical error of another rank's log of the same job (sources named by rank), whose run
    crashed there: what a rank that lost its peer reports is that error's echo."""
    here = ctx.sources.get(source)
    if here is None or rank_of_source(source, here) is None:
        return None
    for name, other in ctx.sources.items():
        if name != source and other.first_error is not None and crashed(other) \
                and rank_of_source(name, other) is not None:
            return name, other.first_error
    return None


def remember(ctx: RuleContext, finding: Finding, rule: str, title: str, severity: Severity) -> None:
    """Keeps the first critical error (or stop from outside) of a source as the root that later errors
    are compared with."""
    st = ctx.sources.get(finding.source) if finding.source else None
    if st is None or st.first_error is not None or (severity < Severity.CRITICAL and rule not in KILLS):
        return
    st.first_error = {"rule": rule, "title": title, "line": finding.line, "step": finding.step, "at_step": st.step,
                      "rank": finding.evidence.get("rank"), "text": finding.message[:200]}


def join_ranks(ctx: RuleContext, source: str, rule: str, ranks: list[int]) -> None:
    """Records every rank that printed the root error again: a launcher that blames one of them
    (torchrun names whichever child exited first) reports the same failure, not a new one."""
    st = ctx.sources.get(source)
    root = st.first_error if st is not None else None
    if root is not None and root["rule"] == rule and root.get("at_step") == st.step:  # type: ignore[union-attr]
        root["ranks"] = list(ranks)


def same_failure(root: dict[str, Any], rank: Any) -> bool:
    """`rank` is the root's own rank or one of the ranks that printed the root error too."""
    return rank == root.get("rank") or (isinstance(rank, int) and rank in root.get("ranks", ()))


def echo(finding: Finding, where: str, root: dict[str, Any], source: str) -> Finding:
    """Turns a finding into the echo of `root`: info, naming the root and where it is."""
    place = f"line {root['line']}" if where == source else f"{Path(where).name} line {root['line']}"
    finding.message = f"{finding.message} -- an echo of the first error, at {place}: {root['title']}"[:400]
    finding.severity = Severity.INFO
    finding.evidence["root_cause"] = f"{root['rule']} at {place}"
    return finding


def rank_of_source(name: str, st: SourceState) -> int | None:
    m = _RANK_IN_NAME.search(Path(name).name)
    if m:
        return int(m.group(1))
    rank = st.first_error.get("rank") if st.first_error else None
    return rank if isinstance(rank, int) else None


class RankList:
    """The ranks each (source, subject) was seen from: one finding lists every rank that printed it."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], list[int]] = {}

    def add(self, source: str, subject: str, rank: Any) -> list[int]:
        ranks = self._seen.setdefault((source, subject), [])
        if isinstance(rank, float) and rank.is_integer():
            rank = int(rank)
        if isinstance(rank, int) and rank not in ranks and len(ranks) < 1024:
            ranks.append(rank)
        return list(ranks)


EXPLAINS = {"run.killed": frozenset({"oom.host"})}
"""Kills whose cause the log may print after them: Slurm reports a cgroup's OOM kills (`Detected 1
oom-kill event(s)`, `task 0: Out Of Memory`) after the shell's `Killed` line."""


def lower_explained(alerts: Iterable[Alert], source: str) -> None:
    """A kill that a later line of the same step explains is that cause's echo: info, naming it."""
    mine = [a for a in alerts if a.finding.source == source and not a.retracted]
    for a in mine:
        causes = EXPLAINS.get(a.rule)
        if not causes or a.severity is Severity.INFO:
            continue
        cause = next((c for c in mine if c.rule in causes and c.first_line > a.first_line
                      and c.first_step == a.first_step and c.severity >= a.severity), None)
        if cause is not None:
            a.severity = a.finding.severity = Severity.INFO
            a.finding.message = f"{a.finding.message} -- explained at line {cause.first_line}: {cause.title}"[:400]
            a.finding.evidence["root_cause"] = f"{cause.rule} at line {cause.first_line}"


def lower_peer_lost(alerts: Iterable[Alert], sources: dict[str, SourceState]) -> None:
    """A rank's error saying it lost its peer (`peer_root`) is the echo of another rank's own critical
    error in the same job, whichever log was read first: info, naming it. Run whenever a source ends,
    over every source's alerts, so the rank read before its peer's log is lowered too."""
    live = [a for a in alerts if not a.retracted and a.finding.source in sources]
    def ranked(a: Alert) -> bool:
        src = a.finding.source
        return rank_of_source(src, sources[src]) is not None
    roots = [a for a in live if a.severity is Severity.CRITICAL and a.rule in ROOT_ERRORS and ranked(a)
             and PEER_LOST.search(a.finding.message) is None]
    for a in live:
        if a.severity is Severity.INFO or a.rule not in ECHO_PRONE or PEER_LOST.search(a.finding.message) is None \
                or not ranked(a):
            continue
        root = next((r for r in roots if r.finding.source != a.finding.source), None)
        if root is not None:
            place = f"{Path(root.finding.source).name} line {root.first_line}"
            a.severity = a.finding.severity = Severity.INFO
            note = f" -- an echo of the first error, at {place}: {root.title}"
            a.finding.message = a.finding.message[:max(80, 400 - len(note))] + note
            a.finding.evidence["root_cause"] = f"{root.rule} at {place}"


ROOT_ERRORS = frozenset({"error.traceback", "run.native_crash", "oom.cuda", "oom.host"})
"""Errors a rank raises of its own: what its peers report after it are their echoes."""
