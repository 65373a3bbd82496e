"""Remote logs inside the live watcher: lines that came over SSH read as if from a local file.

A RemoteSource is a LiveSource whose follower is a buffer the SSH reader thread fills (the Feed in
trainwatch/sources/remote.py); the engine thread drains it as it drains a FileFollower, so the same
detection, adapters, rules, alerts and outlets apply. The link wakes the engine thread once per batch
of lines (a wake-up lost to a full queue is made up by the watcher's safety poll).

A dropped connection enters the engine as a CONTACT event per log it brought, after the lines that
came before it were read, so the alert remote.lost_contact goes through the alert book like any
rule's (dashboard, headless lines, --alert-log, --on-alert, --exit-on, the exporter). The node's GPU
readings are kept per device (named with the host) for the dashboard's GPU panel and the exporter.
"""

from __future__ import annotations

import threading
from functools import partial
from pathlib import Path
from typing import Any

from trainwatch import adapters
from trainwatch.engine import Engine
from trainwatch.errors import TrainwatchError
from trainwatch.live.source import LiveSource, too_early_to_tell
from trainwatch.model import Event, EventKind, Sample
from trainwatch.runner import open_source
from trainwatch.sources import remote
from trainwatch.sources.files import looks_binary
from trainwatch.sources.tail import Chunk

HEAD_LINES = 400


class LineBuffer:
    """Lines handed over by the SSH thread, taken by the engine thread: FileFollower's interface."""

    whole_file = False
    more = False
    is_open = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lines: list[tuple[int, str]] = []
        self._restart = False
        self.lineno = 0

    def push(self, lines: list[tuple[int, str]], restart: bool) -> None:
        with self._lock:
            self._restart = self._restart or restart
            self._lines.extend(lines)

    def head(self) -> bytes:
        """The first lines waiting, as the detection sample."""
        with self._lock:
            texts = [t for _, t in self._lines[:HEAD_LINES]]
        return "".join(t + "\n" for t in texts).encode("utf-8")

    def poll(self) -> Chunk:
        with self._lock:
            lines, self._lines = self._lines, []
            restarted, self._restart = self._restart, False
        if lines:
            self.lineno = lines[-1][0]
        return Chunk(lines=lines, restarted=restarted)

    def flush_partial(self) -> list[tuple[int, str]]:
        return []

    def close(self) -> None:
        pass


class RemoteSource(LiveSource):
    """A log on another machine, named `user@host:/path`."""

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(Path(name), from_end=False, **kwargs)
        self.name = name
        self.buffer = LineBuffer()

    @property
    def label(self) -> str:
        return f"rank {self.rank}" if self.rank is not None else self.name.rsplit("/", 1)[-1]

    def _detect(self, engine: Engine) -> bool:
        head = self.buffer.head()
        if not head.strip():
            return False
        if self.fmt is None and looks_binary(head):
            self.notice(f"{self.name}: binary data, not a text log; not followed")
            self.gave_up = True
            return False
        try:
            opened = remote.renamed(open_source(Path(self.name), self.fmt, head=head), self.name)
        except TrainwatchError as exc:
            self.notice(f"{exc}; not followed")
            self.gave_up = True
            return False
        if adapters.get(opened.format).whole_file:
            self.notice(f"{self.name}: {opened.format} documents are not followed over ssh; use check")
            self.gave_up = True
            return False
        if opened.fallback:
            if too_early_to_tell(opened, head):
                self._wait("unrecognised", f"{self.name}: format not recognised yet; waiting for more lines")
                return False
            self.notice(f"{self.name}: no known log format; reading it for errors only")
        self.opened = opened
        self.follower = self.buffer  # type: ignore[assignment]  # the same interface, filled over ssh
        state = engine.source(self.name, opened.format)
        state.facts.setdefault("label", self.label)
        state.facts.pop("waiting", None)
        if self.params:
            engine.feed(Event(EventKind.INFO, source=self.name, fields={"params": self.params}))
        return True


class WatcherLink(remote.Handler):
    """Hands a Feed's lines, GPU records and notices to the watcher."""

    def __init__(self, watcher: Any) -> None:
        self.watcher = watcher
        self._pending: set[str] = set()
        self._lock = threading.Lock()
        self._contacts: list[remote.Contact] = []  # told by the SSH threads, not yet fed to the engine
        self.gpus = NodeGpus()

    def lines(self, name: str, lines: list[remote.Line], restart: bool) -> None:
        w = self.watcher
        with w.lock:
            src = w.add_source(RemoteSource(name, fmt=w.fmt, ring=w.ring_lines, notice=w.notify, params=w.params))
        assert isinstance(src, RemoteSource)
        src.buffer.push([(ln.lineno, ln.text) for ln in lines], restart)
        with self._lock:
            if name in self._pending:
                return
            self._pending.add(name)
        w.call_soon(partial(self._poll, src))

    def _poll(self, src: RemoteSource) -> None:
        with self._lock:
            self._pending.discard(src.name)
        self.watcher.poll_source(src)
        self._feed_contacts()

    def records(self, records: list[Any], host: str = "") -> None:
        self.gpus.update(records, host)
        self.watcher.put_records(records)

    def contact(self, change: remote.Contact) -> None:
        with self._lock:
            self._contacts.append(change)
        self.watcher.call_soon(self._feed_contacts)  # a call lost to a full queue: the next poll feeds it

    def _feed_contacts(self) -> None:
        """On the engine thread: each log's lines read so far, then the change of contact."""
        with self._lock:
            changes, self._contacts = self._contacts, []
        if not changes:
            return
        w = self.watcher
        by_name = {s.name: s for s in w.sources()}
        for c in changes:
            for name in c.names:
                src = by_name.get(name)
                if src is None:
                    continue
                w.poll_source(src)
                fields: dict[str, Any] = {"lost": c.lost, "host": c.host}
                if c.lost:
                    fields.update(since_s=c.since_s, why=c.why)
                w.engine.feed(Event(EventKind.CONTACT, source=name, fields=fields))

    def notice(self, text: str) -> None:
        self.watcher.notify(text)


class NodeGpus:
    """The latest reading of each remote GPU, rebuilt from its samples: the device list the GPU panel and
    the exporter show for the local sampler's devices."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: dict[str, dict[str, Any]] = {}
        self._names: dict[str, list[str]] = {}  # host -> the device names its stream announced

    def update(self, records: list[Any], host: str) -> None:
        with self._lock:
            for r in records:
                if isinstance(r, Sample):
                    key, _, field = r.name.partition("/")
                    if "@" in key and field:
                        d = self._latest.setdefault(key, {"key": key})
                        d[field] = r.value
                        d.pop("lost", None)
                elif isinstance(r, Event):
                    names = r.fields.get("gpu_names")
                    if isinstance(names, list):
                        self._names[host] = [str(n) for n in names]
                    if r.signature == "gpu.lost" and isinstance(r.fields.get("gpu"), str):
                        self._latest.setdefault(r.fields["gpu"], {"key": r.fields["gpu"]})["lost"] = True

    def devices(self) -> list[dict[str, Any]]:
        with self._lock:
            out = []
            for key, d in sorted(self._latest.items()):
                dev, _, host = key.partition("@")
                index = dev.removeprefix("gpu").split("-", 1)[0]
                names = self._names.get(host, [])
                d = dict(d)
                if index.isdigit() and int(index) < len(names):
                    d.setdefault("name", names[int(index)])
                out.append(d)
            return out


def feeds(watcher: Any, raws: list[str], *, trainwatch: str, gpu: bool) -> tuple[WatcherLink, list[remote.Feed]]:
    link = WatcherLink(watcher)
    return link, [remote.Feed(remote.parse(r), link, trainwatch=trainwatch, gpu=gpu) for r in raws]
