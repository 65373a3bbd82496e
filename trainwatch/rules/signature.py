"""Known error messages: an ERROR event with a signature id becomes that rule's finding.

The engine routes ERROR events by `signature`, so one SignatureRule per signature id sees only its own.
The numbers the scanner parsed from the line become the evidence and, for OOM, the message. Copies of
one error printed by several ranks are one finding that lists the ranks; an error that usually follows
from another (a launcher's ChildFailedError, an NCCL failure of the ranks left waiting) is told as an
echo of the first critical error when there was one.
"""

from __future__ import annotations

import re
from typing import Any

from trainwatch.model import Event, Finding, Severity
from trainwatch.rules import crash
from trainwatch.rules.base import Rule, RuleContext
from trainwatch.rulespec import RuleSpec

MAX_TEXT = 300
TORCH_SYMBOL = re.compile(r"^_ZN\w*?(?:3c10|2at|5torch)")  # a mangled name in torch's c10::, at:: or torch::
SAVE_WORDS = ("PytorchStreamWriter", "torch.save", "save_checkpoint", "checkpoint")
SHM_WORDS = ("/dev/shm", "</torch_")
WARNING_LINE = re.compile(r"(?i:\bwarn)|^(?:\[[Rr]ank\s*\d+\]:\s?)?\[?W\d{4} \d\d:")  # a logged warning, not a raise
SIGNAL_NAMES = {"15": "SIGTERM (signal 15)", "SIGTERM": "SIGTERM (signal 15)", "Terminated": "SIGTERM (signal 15)",
                "2": "SIGINT (signal 2)", "SIGINT": "SIGINT (signal 2)", "1": "SIGHUP (signal 1)",
                "SIGHUP": "SIGHUP (signal 1)"}
NATIVE_NAMES = {"-11": "a segmentation fault (SIGSEGV)", "SIGSEGV": "a segmentation fault (SIGSEGV)",
                "Segmentation fault": "a segmentation fault (SIGSEGV)", "-6": "an abort (SIGABRT)",
                "SIGABRT": "an abort (SIGABRT)", "Aborted": "an abort (SIGABRT)", "Bus error": "a bus error (SIGBUS)",
                "Illegal instruction": "an illegal instruction (SIGILL)",
                "Floating point exception": "a floating point exception (SIGFPE)"}
FAILED_PATH = re.compile(r"(?:No space left on device|Errno 28\]?[^:'\n]*|Disk quota exceeded):\s*'([^'\n]+)'")
"""The path an ENOSPC names, as Python's OSError quotes it: `[Errno 28] No space left on device: '/tmp/x'`."""
TEMP_PATH = re.compile(r"^(?:/tmp|/var/tmp|/dev/shm/tmp)(?:/|$)|(?:^|/)(?:pymp-|tmp[\w.-]*$)")
"""A temporary file's path: under /tmp or /var/tmp, multiprocessing's `pymp-` directories, `tempfile`'s names."""
SHM_FIXES = ("In a container, enlarge /dev/shm (docker run --shm-size 16g, or a memory-backed emptyDir)",
             "Or lower the DataLoader's num_workers")


def _gib(v: Any) -> str:
    if not isinstance(v, (int, float)):
        return str(v)
    return f"{v:.2f} GiB" if v >= 1 else f"{v * 1024:.0f} MiB"


def describe(sig: str, fields: dict[str, Any]) -> str:
    """A one-line summary of the figures the scanner found, or '' when there are none."""
    f = fields
    if sig == "oom.cuda":
        parts = []
        if "tried_gib" in f:
            parts.append(f"tried {_gib(f['tried_gib'])}")
        if "free_gib" in f:
            parts.append(f"with {_gib(f['free_gib'])} free")
        if "total_gib" in f:
            parts.append(f"of {_gib(f['total_gib'])}")
        if "allocated_gib" in f:
            parts.append(f"({_gib(f['allocated_gib'])} allocated")
            if "reserved_gib" in f:
                parts[-1] += ","
                parts.append(f"{_gib(f['reserved_gib'])} reserved)")
            elif "reserved_unallocated_gib" in f:  # the new wording: as the log puts it, nothing added up
                parts[-1] += ","
                parts.append(f"{_gib(f['reserved_unallocated_gib'])} reserved but unallocated)")
            else:
                parts.append("by PyTorch)")
        elif "in_use_gib" in f:  # another framework's allocator (Paddle): in use, and what was left
            left = f", {_gib(f['available_gib'])} available" if "available_gib" in f else ""
            parts.append(f"({_gib(f['in_use_gib'])} in use{left})")
        if "gpu" in f:
            parts.append(f"on GPU {f['gpu']}")
        if "rank" in f:
            parts.append(f"(rank {f['rank']})")
        return " ".join(parts)
    if sig == "oom.host" and "tried_gib" in f:
        return f"the CPU allocator could not get {_gib(f['tried_gib'])} of host memory"
    if sig == "hang.nccl" and ("timeout_ms" in f or "op" in f):
        op = f" in {f['op']}" if "op" in f else ""
        ran = f" after {f['ran_ms'] / 1000:.0f} s" if isinstance(f.get("ran_ms"), (int, float)) else ""
        lim = f" (timeout {f['timeout_ms'] / 1000:.0f} s)" if isinstance(f.get("timeout_ms"), (int, float)) else ""
        return f"watchdog fired{op}{ran}{lim}"
    if sig == "env.abi_mismatch" and "library" in f:
        symbol = str(f.get("symbol", "?"))
        against = "another torch than the installed one" if TORCH_SYMBOL.search(symbol) else \
            "other library versions than the installed ones"
        return f"{f['library']} was built against {against} (undefined symbol {symbol[:80]})"
    if sig == "run.signal" and isinstance(f.get("exitcode"), int) and f["exitcode"] < 0:
        who = f"rank {f['rank']}" if "rank" in f else "a worker"
        return f"{who} was ended by signal {-f['exitcode']} before any other failure"
    if sig == "run.signal" and "signal" in f:
        return SIGNAL_NAMES.get(str(_num(f["signal"])), f"signal {_num(f['signal'])}")
    if sig == "run.killed":
        who = f"rank {f['rank']}" if isinstance(f.get("rank"), int) else _process(f)
        code = f" (exit code {f['exitcode']})" if "exitcode" in f else ""
        return (f"{who} got SIGKILL{code}, from the kernel's OOM killer, a scheduler's hard stop or a kill -9 "
                "(the log does not say which)")
    if sig == "run.native_crash":
        what = NATIVE_NAMES.get(str(_num(f.get("what", ""))), str(f.get("what", "a native crash")))
        who = f"rank {f['rank']}" if isinstance(f.get("rank"), int) else _process(f)
        return f"{who} died of {what}"
    if sig == "run.instantiate_failed" and "target" in f:
        said = str(f.get("message") or "").strip()
        return f"could not instantiate {f['target']}" + (f": {said[:200]}" if said else "")
    if sig.startswith("sched."):
        parts = [f"job {f['job']}" if "job" in f else "", f"at {f['at']}" if "at" in f else "",
                 f"due to {str(f['cause']).strip().lower()}" if "cause" in f else ""]
        return ", ".join(p for p in parts if p)
    if sig == "run.child_failed" and "rank" in f:
        code = f" with exit code {f['exitcode']}" if "exitcode" in f else ""
        return f"rank {f['rank']} failed first{code}"
    shown = {k: v for k, v in f.items() if isinstance(v, (int, float, str)) and len(str(v)) < 40
             and k not in ("traceback_line", "rank")}
    text = ", ".join(f"{k} {_num(v)}" for k, v in shown.items())
    if "rank" in f and text:
        text += f" (rank {_num(f['rank'])})"
    return text


def _process(f: dict[str, Any]) -> str:
    """The process a shell's job report names (its pid and command), else 'the process'."""
    command = str(f.get("command") or "").strip()
    if not command:
        return "the process"
    pid = f" {f['pid']}" if isinstance(f.get("pid"), int) else ""
    return f"process{pid} ({command[:120]})"


def _own_process(root: dict[str, Any], fields: dict[str, Any]) -> bool:
    """A shell's job report (`run_all.sh: line 9: 5458 Killed  python app.py ...`) names the command it ran and
    the signal that ended it. A process that printed an uncaught traceback ended on its own exception, which a
    shell reports with no such line: a signal the shell reports after that traceback ended another process
    (the next command of a script), a failure of its own and no echo of the traceback."""
    return root.get("rule") == "error.traceback" and bool(str(fields.get("command") or "").strip())


def _other_rank(root_rank: Any, rank: Any) -> bool:
    """Both ranks known and different: a launcher blaming rank 3 is no echo of rank 1's error."""
    return isinstance(root_rank, int) and isinstance(rank, int) and root_rank != rank


def _num(v: Any) -> Any:
    return int(v) if isinstance(v, float) and v.is_integer() else v


class SignatureRule(Rule):
    id = "signature"

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self.signature = spec.id
        self.ranks = crash.RankList()
        self._told: set[tuple[str, str]] = set()

    def on_event(self, ctx: RuleContext, event: Event) -> Finding | None:
        if event.signature != self.signature:
            return None
        line = event.text.strip().splitlines()[-1] if event.text.strip() else ""
        if len(line) > MAX_TEXT:
            line = line[:MAX_TEXT] + "..."
        figures = describe(self.signature, event.fields)
        extra: tuple[str, ...] = ()
        case = ""
        if self.signature == "ckpt.disk_full":
            figures, extra, case = self._disk_full(ctx, event)
        message = figures or line or self.spec.title
        evidence = dict(event.fields)
        evidence["text"] = line
        if case:
            evidence["case"] = case
        first = (event.source, self.signature) not in self._told
        self._told.add((event.source, self.signature))
        ranks = self.ranks.add(event.source, self.signature, event.fields.get("rank"))
        if not first:
            evidence = {"ranks": ranks} if len(ranks) > 1 else {}  # the first copy's figures stay the evidence
        finding = crash.date(Finding(message=message, subject=self.signature, evidence=evidence,
                                     source=event.source, line=event.line, extra_fixes=extra,
                                     amends=not first), ctx, event)
        if self.signature == "ckpt.disk_full" and WARNING_LINE.search(event.text):
            finding.severity = Severity.WARNING  # unsure whether it stopped anything: say less
        if crash.handled(event) and self.spec.severity > Severity.WARNING:
            finding.message = f"{message} (inside a traceback logged as a warning: the program went on)"[:400]
            finding.severity = Severity.WARNING  # a handled exception: not known to have stopped anything
            return finding
        rank = event.fields.get("rank")
        root = crash.root_of(ctx, event.source, rank)
        if (root is not None and self.signature in crash.ECHO_PRONE and root[1]["rule"] != self.signature
                and (crash.same_failure(root[1], rank) or not _other_rank(root[1].get("rank"), rank))
                and not _own_process(root[1], event.fields)):
            return crash.echo(finding, root[0], root[1], event.source)
        if self.signature in crash.ECHO_PRONE and crash.PEER_LOST.search(event.text) is not None \
                and (peer := crash.peer_root(ctx, event.source)) is not None:
            return crash.echo(finding, peer[0], peer[1], event.source)  # it lost a peer that had crashed first
        crash.remember(ctx, finding, self.signature, self.spec.title, self.spec.severity)
        return finding

    @staticmethod
    def _disk_full(ctx: RuleContext, event: Event) -> tuple[str, tuple[str, ...], str]:
        """What filled up, and so the case its fixes are chosen by: shared memory (DataLoader workers pass
        batches through /dev/shm: `shm`), the temporary directory (the path that failed is under /tmp or a
        temp file's: `temp`), the disk while saving a checkpoint (torch.save's writer, or a checkpoint
        phase: `checkpoint`), or some other write (`write`)."""
        if WARNING_LINE.search(event.text):
            return "a write failed (no space left), logged as a warning: the run may have gone on", (), "write"
        if any(w in event.text for w in SHM_WORDS):
            return ("shared memory (/dev/shm) is full: a data-loader worker could not hand over a batch", SHM_FIXES,
                    "shm")
        failed = FAILED_PATH.search(event.text)
        if failed is not None and TEMP_PATH.search(failed.group(1)):
            return f"no space left for the temporary file {failed.group(1)}: the temporary directory filled", (), "temp"
        st = ctx.sources.get(event.source)
        saving = any(w in event.text for w in SAVE_WORDS) or (st is not None and st.phase == "checkpoint")
        if saving:
            return "checkpoint save failed (no space left)", (), "checkpoint"
        return "a write failed (no space left)", (), "write"
