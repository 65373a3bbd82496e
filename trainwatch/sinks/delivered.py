"""What the alert outlets already delivered, kept in a small state file so a restart repeats nothing.

`tail` rebuilds its history by reading each log's backlog again when it starts: the rules need the past
to judge the present, and the alerts that fired while it was down are found that way. Without memory,
every alert of the backlog would be appended to --alert-log and handed to --on-alert again at each
restart (a systemd unit with `Restart=on-failure` did so up to 24 times for one alert). So each change
delivered is remembered by the alert's fingerprint, its state and the step its episode began; the same change found
again on a later start is not delivered, and one found for the first time is, whenever it happened.

The memory is per log file, tied to the file's device and inode: a log replaced by a new run's log
(a new inode at the same path) starts with nothing delivered. The file is rewritten whole through a
temporary file and a rename, so a crash leaves the old state or the new, never half of one. Promtail's
positions file and Vector's checkpoints are the same idea for offsets; here the offsets are kept too,
so an operator can see how far each log was read.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from trainwatch.alerts import AlertChange

VERSION = 1
MAX_KEYS = 20_000
"""Changes remembered per log; past it the oldest are forgotten (a week-long run alerts far less)."""


def default_path(alert_log: str | None, on_alert: str | None, paths: Iterable[str]) -> Path | None:
    """Beside the alert log; else, for a hook alone, under $XDG_STATE_HOME/trainwatch, named after what is
    followed and the hook; with neither there is nothing to deliver twice."""
    if alert_log:
        return Path(alert_log + ".state")
    if not on_alert:
        return None
    base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "trainwatch"
    ident = json.dumps([sorted(os.path.abspath(p) for p in paths), on_alert])
    return base / f"delivered-{hashlib.sha256(ident.encode()).hexdigest()[:16]}.json"


def _key(fingerprint: str, state: str, began: object) -> str:
    """A change by its alert, its state and the step its episode began: the same whether the engine saw
    the log live or read it again as a backlog (which may count episodes differently).

    The episode is the changed alert's own (`first_step`, a record's `step`), never the fingerprint's
    latest: a round that judges several episodes of one alert (a backlog, or a live round of many rows)
    tells their changes once it is over, when the first episode's alert already lists the later ones."""
    return f"{fingerprint}:{state}:{began}"


def _identity(source: str) -> list[int] | None:
    try:
        st = os.stat(source)
    except OSError:
        return None
    return [st.st_dev, st.st_ino]


class Delivered:
    """The changes delivered so far, by log; `path` None keeps them in memory only."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.notes: list[str] = []  # what loading found wrong, said once by the front end
        self._logs: dict[str, dict[str, Any]] = {}  # source -> {"file": [dev, ino], "keys": {key: None}}
        self.offsets: dict[str, list[int]] = {}  # source -> [dev, ino, offset], for the operator to read
        if path is not None:
            self._load(path)

    @staticmethod
    def key(change: AlertChange) -> str:
        a = change.alert
        return _key(a.fingerprint, change.told_state, a.first_step)

    def register(self, source: str) -> None:
        """Ties a log to its file before anything of it is delivered, so what reaches the alert log is
        known to be this file's on a restart even if the process dies before `add`."""
        if source not in self._logs:
            self._logs[source] = {"file": _identity(source), "keys": {}}
            self.save()

    def absorb(self, records: Iterable[dict[str, Any]]) -> None:
        """Alert-log records count as delivered for the logs this state still holds (the same files):
        a record written just before a kill, whose `add` never came, is not written twice."""
        for r in records:
            log = self._logs.get(str(r.get("source", "")))
            if log is not None and "fingerprint" in r and "state" in r:
                log["keys"][_key(str(r["fingerprint"]), str(r["state"]), r.get("step"))] = None

    def seen(self, change: AlertChange) -> bool:
        log = self._logs.get(change.alert.source)
        return log is not None and self.key(change) in log["keys"]

    def add(self, change: AlertChange) -> None:
        source = change.alert.source
        log = self._logs.setdefault(source, {"file": _identity(source), "keys": {}})
        keys = log["keys"]
        keys[self.key(change)] = None
        while len(keys) > MAX_KEYS:
            del keys[next(iter(keys))]
        self.save()

    def save(self) -> None:
        """Writes the state whole (temporary file, fsync, rename); a failure costs only the memory."""
        if self.path is None:
            return
        doc = {"version": VERSION,
               "logs": {s: {"file": v["file"], "delivered": list(v["keys"])} for s, v in self._logs.items()},
               "offsets": self.offsets}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=self.path.name + ".", suffix=".tmp", dir=self.path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump(doc, f, separators=(",", ":"))
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError as exc:
            self.notes.append(f"{self.path}: cannot save the delivery state ({exc.strerror or exc}); "
                              "a restart may deliver alerts again")

    def _load(self, path: Path) -> None:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            self.notes.append(f"{path}: unreadable delivery state ({getattr(exc, 'strerror', None) or exc}); "
                              "starting without it")
            return
        if not isinstance(doc, dict) or doc.get("version") != VERSION:
            self.notes.append(f"{path}: delivery state of another version; starting without it")
            return
        for source, log in (doc.get("logs") or {}).items():
            file = log.get("file")
            if file is not None and _identity(source) not in (None, file):
                continue  # another file at that path now (a new run): nothing of it was delivered
            self._logs[source] = {"file": file, "keys": dict.fromkeys(log.get("delivered") or [])}
        self.offsets = {s: v for s, v in (doc.get("offsets") or {}).items() if isinstance(v, list)}
