"""Python tracebacks: a crash is critical; Ctrl-C is a person stopping the run; a signal is outside.

A traceback a logger printed as a warning is an exception the program handled (info). One Python printed
under `Exception in thread X:` ended that thread, not the program (a thread's uncaught exception stops only
its thread): a warning that the thread died, never the run's crash; if the program then stops or hangs
for want of it, the rules that judge the run's end and its silence say so. A traceback
that holds a known error (an OOM, a disk full, an import of a mismatched binary) is that
error's finding already, so it adds nothing of its own. A traceback printed after the source's first
critical error is most often its echo (a driver failing after its worker did, a teardown hook) and is
told as info. The root of a chained traceback, not its last section, names the finding.
"""

from __future__ import annotations

import re

from trainwatch.model import Event, EventKind, Finding, Severity
from trainwatch.rules import crash
from trainwatch.rules.base import Rule, RuleContext
from trainwatch.rules.registry import register
from trainwatch.rulespec import RuleSpec

BY_HAND = {"KeyboardInterrupt"}
FROM_OUTSIDE = {"SignalException", "SIGTERM", "SystemExit"}
IMPORTS = {"ImportError", "ModuleNotFoundError"}
FAILED_IMPORT = re.compile(r"Failed to import ([\w.]+)|while importing ([\w.]+)|No module named '?([\w.]+)")
IMPORT_FIXES = (
    "Import the module by hand in the same environment (python -c 'import X') to see the real error",
    "Reinstall the failing package; a compiled extension must be rebuilt against the installed torch and CUDA",
    "With Ray or several nodes, check that every worker runs in the same environment as the driver",
)


@register("error.traceback")
class TracebackRule(Rule):
    id = "error.traceback"
    events = (EventKind.TRACEBACK,)

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self.ranks = crash.RankList()
        self._told: set[tuple[str, str]] = set()

    def on_event(self, ctx: RuleContext, event: Event) -> Finding | None:
        if event.fields.get("signatures"):
            return None  # the known error inside it is the finding, with its own cause and fixes
        final_exc = str(event.fields.get("exception") or "")
        exc = str(event.fields.get("root_exception") or final_exc)
        message = str(event.fields.get("root_message") if "root_exception" in event.fields
                      else event.fields.get("message") or "")
        short = exc.rsplit(".", 1)[-1]
        text = f"{exc}: {message}" if message else (exc or "traceback")
        if "root_exception" in event.fields and final_exc and final_exc != exc:
            text = f"{text} (then {final_exc})"
        ev = {"exception": final_exc, "message": event.fields.get("message") or "",
              "frames": event.fields.get("frames"), "text": event.text[-4000:]}
        if "root_exception" in event.fields:
            ev["root_exception"] = exc
            ev["root_message"] = message
        thread = str(event.fields.get("thread") or "")
        # a thread's death is told apart from the program's crash: neither joins the other's finding
        subject = "thread traceback" if thread else "traceback"
        if _mild(event, short, final_exc):  # a traceback that is no crash never holds a later crash's finding
            subject = f"{subject} (no crash)"  # as a repeat of its own; those that are none join one another
        ranks = self.ranks.add(event.source, subject, event.fields.get("rank"))
        if len(ranks) > 1:
            ev["ranks"] = ranks
        elif ranks:
            ev["rank"] = ranks[0]
        repeat = (event.source, subject) in self._told
        if repeat:
            # a later one joins the first one's finding (same subject): only the ranks are new evidence
            ev = {"ranks": ranks} if len(ranks) > 1 else {}
        self._told.add((event.source, subject))
        if repeat and len(ranks) > 1 and not thread:
            crash.join_ranks(ctx, event.source, self.spec.id, ranks)
        finding = Finding(message=text[:300], subject=subject, evidence=ev, source=event.source,
                          line=event.line, amends=repeat)
        crash.date(finding, ctx, event)
        if event.fields.get("ignored"):
            finding.message = (f"exception Python ignored (an atexit callback or a destructor at exit), the "
                               f"program went on: {text}")[:300]
            finding.severity = Severity.INFO
            return finding
        if crash.handled(event):
            finding.message = f"traceback logged as a warning, the program went on: {text}"[:300]
            finding.severity = Severity.INFO
            return finding
        if short in BY_HAND or final_exc in BY_HAND:
            finding.message = f"stopped by hand ({short})"
            finding.severity = Severity.INFO
            return finding
        if short in FROM_OUTSIDE or "SIGTERM" in message or ("signal" in message.lower() and short != "RuntimeError"):
            finding.message = f"killed from outside: {text}"[:300]
            finding.severity = Severity.WARNING
            return finding
        module = _failed_import(exc, message, str(event.fields.get("message") or ""))
        if module is not None:
            what = f"import of {module} failed" if module else "import failed"
            finding.message = f"{what}: {text}"[:300]
            finding.extra_fixes = IMPORT_FIXES
        root = crash.root_of(ctx, event.source)
        if root is not None and not repeat:
            return crash.echo(finding, root[0], root[1], event.source)
        if not repeat and crash.PEER_LOST.search(text) is not None \
                and (peer := crash.peer_root(ctx, event.source)) is not None:
            return crash.echo(finding, peer[0], peer[1], event.source)  # it lost a peer that had crashed first
        if thread:
            finding.message = (f"thread {thread} died of an uncaught exception, which does not stop the program "
                               f"(it ends only its thread): {text}")[:300]
            finding.severity = Severity.WARNING
            return finding  # no root of later errors: the run did not crash here
        crash.remember(ctx, finding, self.spec.id, self.spec.title, self.spec.severity)
        return finding


def _mild(event: Event, short: str, final_exc: str) -> str:
    """What makes a traceback no crash ('' when it is one): Python ignored it, a logger printed it as a
    warning, or a person stopped the run. Such a traceback is told as info under its own subject, so
    that a crash printed after it (a relaunch that fails at import) is told as a crash of its own."""
    if event.fields.get("ignored"):
        return "ignored"
    if crash.handled(event):
        return "handled"
    return "by hand" if short in BY_HAND or final_exc in BY_HAND else ""


def _failed_import(exc: str, *messages: str) -> str | None:
    """The module whose import failed ('' when unnamed), or None when the error is no failed import."""
    for msg in messages:
        m = FAILED_IMPORT.search(msg)
        if m:
            return next(g for g in m.groups() if g)
    return "" if exc.split("(")[0] in IMPORTS else None
