"""--on-alert CMD: a command run for each alert, the alert as JSON on its stdin.

The command line is split like a shell would split it, but never run through a shell, so no log
text can ever reach one. Hooks run on their own thread from a bounded queue: a slow, hanging or
missing command costs a one-line notice, never the watcher's time. When the queue is full the
alert is dropped for the hook (it is still printed and logged) and the drop is counted.
"""

from __future__ import annotations

import json
import os
import queue
import shlex
import signal
import subprocess
import threading
from collections.abc import Callable
from typing import Any

from trainwatch import proctree
from trainwatch.alerts import AlertChange
from trainwatch.errors import UsageError
from trainwatch.model import AlertState, Severity

_STOP = object()


class HookRunner:
    def __init__(self, command: str, *, min_severity: Severity = Severity.WARNING, timeout: float = 10.0,
                 queue_size: int = 32, notice: Callable[[str], None] | None = None) -> None:
        try:
            self.argv = shlex.split(command)
        except ValueError as exc:
            raise UsageError(f"--on-alert: cannot split the command: {exc}") from None
        if not self.argv:
            raise UsageError("--on-alert: empty command")
        self.min_severity = min_severity
        self.timeout = timeout
        self.notice = notice or (lambda text: None)
        self.ran = 0
        self.failed = 0
        self.dropped = 0
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=queue_size)
        self._said: set[str] = set()
        self._thread = threading.Thread(target=self._run, name="trainwatch-hooks", daemon=True)
        self._thread.start()

    def submit(self, change: AlertChange) -> None:
        """Called from the engine thread: never blocks."""
        a = change.alert
        if change.state is not AlertState.FIRING or a.severity < self.min_severity:
            return
        payload = {**a.to_dict(), "state": change.state.value}
        try:
            self._queue.put_nowait(payload)
        except queue.Full:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 50 == 0:
                self.notice(f"alert hook is falling behind: {self.dropped} alert(s) not passed to it so far")

    def stop(self, wait: float = 2.0) -> None:
        try:
            self._queue.put_nowait(_STOP)
        except queue.Full:
            pass
        self._thread.join(timeout=wait)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            self._call(item)

    def _call(self, payload: dict[str, Any]) -> None:
        env = dict(os.environ)
        env.update({
            "TRAINWATCH_ALERT_ID": str(payload["id"]),
            "TRAINWATCH_SEVERITY": str(payload["severity"]),
            "TRAINWATCH_SOURCE": str(payload["source"]),
            "TRAINWATCH_STEP": "" if payload["step"] is None else str(payload["step"]),
            "TRAINWATCH_TITLE": str(payload["title"]),
            "TRAINWATCH_MESSAGE": str(payload["message"])[:1000],
        })
        data = json.dumps(payload).encode()
        try:
            proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, env=env, start_new_session=True, close_fds=True)
        except FileNotFoundError:
            self._once("missing", f"alert hook command not found: {self.argv[0]}")
            self.failed += 1
            return
        except OSError as exc:
            self._once("oserror", f"alert hook cannot run {self.argv[0]}: {exc.strerror or exc}")
            self.failed += 1
            return
        proctree.spawned(proc.pid)
        try:
            self._talk(proc, data)
        finally:
            proctree.finished(proc.pid)

    def _talk(self, proc: subprocess.Popen[bytes], data: bytes) -> None:
        """Hands the hook its payload and waits for it (at most the hook timeout)."""
        try:
            proc.communicate(data, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self._kill(proc)
            self.failed += 1
            self._once("timeout", f"alert hook did not finish within {self.timeout:g} s and was stopped")
            return
        except OSError:
            pass  # the hook closed its stdin early: its business
        self.ran += 1
        if proc.returncode:
            self.failed += 1
            self._once(f"rc{proc.returncode}", f"alert hook exited with status {proc.returncode}")

    def _kill(self, proc: subprocess.Popen[bytes]) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass

    def _once(self, key: str, text: str) -> None:
        if key not in self._said:
            self._said.add(key)
            self.notice(text)
