"""The process tree a `run` child grows, found through /proc, so that nothing it started outlives the run.

A training launcher starts workers, data-loader processes and helpers; some ignore SIGTERM, some start
sessions of their own, and any of them is left running under PID 1 when the launcher dies first (killed
from outside, or stopped by trainwatch). The remedy is the one systemd applies with
`KillMode=control-group`, done with what an unprivileged process has: trainwatch makes itself a child
subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`), so orphans of the tree are handed to it instead of to init,
and it keeps the set of processes that belong to the tree. A process belongs when it is in the child's
session (every process the child starts is, unless it calls setsid) or was seen below the child in a
walk of the process table while its parents lived; its descendants belong too. Processes trainwatch
starts itself (--on-alert hooks) register in `OWN`, and are never touched. An orphan handed to us is
ours to stop too: as a subreaper this process is the parent of nothing else.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
POLL_S = 0.05  # how often a stop looks whether the tree has gone
OWN: set[int] = set()
"""Pids of processes trainwatch started for itself (alert hooks): never part of a child's tree."""


def spawned(pid: int) -> None:
    OWN.add(pid)


def finished(pid: int) -> None:
    OWN.discard(pid)


def become_subreaper() -> bool:
    """Orphaned descendants are reparented to this process instead of init (Linux 3.4+); False elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def table() -> dict[int, tuple[int, int, str]]:
    """Every live process: pid -> (parent pid, session id, state letter). Empty where /proc is not."""
    out: dict[int, tuple[int, int, str]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # gone while we looked
        rest = stat[stat.rfind(b")") + 2:].split()  # the command name may hold spaces and parentheses
        if len(rest) >= 4:
            out[int(name)] = (int(rest[1]), int(rest[3]), rest[0].decode("ascii", "replace"))
    return out


def descendants(procs: dict[int, tuple[int, int, str]], roots: set[int]) -> set[int]:
    """The roots that are alive and every process below them."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    found = {r for r in roots if r in procs}
    todo = list(found)
    while todo:
        for c in children.get(todo.pop(), ()):
            if c not in found:
                found.add(c)
                todo.append(c)
    return found


class Tree:
    """The processes of one child's tree (see the module's docstring)."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.seen: set[int] = {root}

    def members(self, procs: dict[int, tuple[int, int, str]] | None = None) -> set[int]:
        """The tree's live processes now (zombies excluded), and remembers them."""
        procs = table() if procs is None else procs
        me = os.getpid()
        in_session = {pid for pid, (_, sid, _) in procs.items() if sid == self.root}
        adopted = {pid for pid, (ppid, _, _) in procs.items() if ppid == me}  # orphans handed to us
        live = descendants(procs, (self.seen & procs.keys()) | in_session | adopted)
        live -= descendants(procs, OWN)  # our hooks and their children
        live.discard(me)
        live |= {self.root} & procs.keys()
        self.seen = live | {self.root}
        return {p for p in live if procs[p][2] != "Z"}

    def observe(self) -> None:
        """A walk of the table while the tree lives, so a process that leaves the session is known."""
        self.members()

    def signal(self, signum: int, *, but: int | None = None) -> int:
        """Sends `signum` to every member (except `but`); returns how many there were."""
        members = self.members()
        if but is not None:
            members.discard(but)
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signum)
        return len(members)

    def stop(self, grace_s: float) -> None:
        """SIGTERM to every member, SIGKILL to those left after `grace_s`; reaps those handed to us."""
        if self.signal(signal.SIGTERM, but=self.root) == 0:
            self.reap()
            return
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            self.reap()
            if not self.members() - {self.root}:
                return
            time.sleep(POLL_S)
        self.signal(signal.SIGKILL, but=self.root)
        deadline = time.monotonic() + 5.0
        while self.members() - {self.root} and time.monotonic() < deadline:
            self.reap()
            time.sleep(POLL_S)
        self.reap()

    def reap(self) -> None:
        """Collects the exit status of the tree's processes handed to us that have ended, but never the
        root's (subprocess waits for that one) nor any other child of ours (a hook's status is its
        runner's): a subreaper that did not would gather zombies for as long as it runs."""
        me = os.getpid()
        for pid, (ppid, sid, state) in table().items():
            if ppid == me and state == "Z" and pid != self.root and (pid in self.seen or sid == self.root):
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, os.WNOHANG)
