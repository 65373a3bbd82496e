"""GPU telemetry: NVML readings (or a recorded trace) turned into metric samples for the engine.

A backend answers `open()` (device names, or GpuUnavailable with one line saying why) and `read()`
(one reading per device: a dict of plain numbers, fields absent where the device cannot say). The
sampler turns readings into samples named gpu0/util, gpu0/mem_used, ... with source "gpu", and a
device that falls off the bus into an ERROR event with signature gpu.lost. Nothing here raises for
what a driver does: unsupported calls become one notice per device and field.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from trainwatch.model import GPU_SOURCE, Event, EventKind, Record, Sample

NUMERIC = ("util", "mem_util", "mem_used", "mem_total", "temp", "power", "power_limit", "sm_clock",
           "throttle", "ecc_corrected", "ecc_uncorrected", "retired_pages")
# NVML clocks-event (throttle) reason bits, by the names the rules and the table use
THROTTLE_BITS = {
    0x1: "gpu_idle", 0x2: "app_clocks", 0x4: "sw_power_cap", 0x8: "hw_slowdown", 0x10: "sync_boost",
    0x20: "sw_thermal", 0x40: "hw_thermal", 0x80: "hw_power_brake", 0x100: "display_clocks",
}


def throttle_names(mask: float | int | None) -> list[str]:
    if mask is None:
        return []
    m = int(mask)
    return [name for bit, name in THROTTLE_BITS.items() if m & bit]


class GpuUnavailable(Exception):
    """No telemetry at all: the message is the one info line the user sees."""


class Backend(Protocol):
    def open(self) -> list[str]: ...

    def read(self) -> list[dict[str, Any]]: ...

    def close(self) -> None: ...


def device_key(reading: dict[str, Any]) -> str:
    """gpu0, or gpu0-mig1 for a MIG instance: the prefix of the device's metric names."""
    key = f"gpu{reading.get('index', 0)}"
    if reading.get("mig") is not None:
        key += f"-mig{reading['mig']}"
    return key


class ReplayBackend:
    """Readings from a recorded trace: JSON lines, each {"gpus": [reading, ...]} (one per sample)."""

    def __init__(self, path: str | Path, *, loop: bool = False) -> None:
        self.path = Path(path)
        self.loop = loop
        self.frames: list[list[dict[str, Any]]] = []
        self._i = 0

    def open(self) -> list[str]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except OSError as exc:
            raise GpuUnavailable(f"no GPU telemetry: cannot read trace {self.path}: {exc.strerror or exc}") from None
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                frame = json.loads(line)
            except ValueError:
                raise GpuUnavailable(f"no GPU telemetry: {self.path}:{n} is not JSON") from None
            gpus = frame.get("gpus") if isinstance(frame, dict) else None
            if not isinstance(gpus, list):
                raise GpuUnavailable(f"no GPU telemetry: {self.path}:{n} has no 'gpus' list")
            self.frames.append(gpus)
        if not self.frames:
            raise GpuUnavailable(f"no GPU telemetry: trace {self.path} is empty")
        return [str(g.get("name", "GPU")) for g in self.frames[0]]

    def read(self) -> list[dict[str, Any]]:
        if self._i >= len(self.frames):
            if not self.loop:
                return [dict(g) for g in self.frames[-1]]  # the trace ended: the last state holds
            self._i = 0
        frame = self.frames[self._i]
        self._i += 1
        return [dict(g) for g in frame]

    def close(self) -> None:
        pass


class GpuSampler:
    """Readings to records; `sample()` once, or `start()` a thread that samples every `interval` s."""

    def __init__(self, backend: Backend, *, interval: float = 1.0, clock: Callable[[], float] = time.time,
                 emit: Callable[[list[Record]], None] | None = None,
                 notice: Callable[[str], None] | None = None) -> None:
        self.backend = backend
        self.interval = interval
        self.clock = clock
        self.emit = emit or (lambda records: None)
        self.notice = notice or (lambda text: None)
        self.names: list[str] = []
        self.latest: dict[str, dict[str, Any]] = {}  # device key -> latest reading
        self.lost: set[str] = set()
        self._count = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.available = False

    def open(self) -> bool:
        try:
            self.names = self.backend.open()
        except GpuUnavailable as exc:
            self.notice(str(exc))
            return False
        except Exception as exc:  # a driver that fails in a way nobody documented: still one line
            self.notice(f"no GPU telemetry: {type(exc).__name__}: {exc}")
            return False
        if not self.names:
            self.notice("no GPU telemetry: no GPU visible")
            return False
        self.available = True
        return True

    def sample(self) -> list[Record]:
        """One reading of every device, as records (samples, and gpu.lost events)."""
        try:
            readings = self.backend.read()
        except Exception as exc:
            self.notice(f"GPU telemetry read failed: {type(exc).__name__}: {exc}")
            return []
        take = getattr(self.backend, "take_notices", None)
        for text in take() if take is not None else ():
            self.notice(text)
        now = self.clock()
        out: list[Record] = []
        if self._count == 0:
            out.append(Event(EventKind.INFO, source=GPU_SOURCE, time=now,
                             fields={"gpu_names": list(self.names), "gpu_count": len(self.names)}))
        self._count += 1
        for r in readings:
            key = device_key(r)
            if r.get("lost"):
                if key not in self.lost:
                    self.lost.add(key)
                    text = f"{key} ({r.get('name', 'GPU')}) is lost: {r.get('error', 'no longer answers')}"
                    out.append(Event(EventKind.ERROR, source=GPU_SOURCE, time=now, signature="gpu.lost", text=text,
                                     step=self._count, fields={"gpu": key, "error": str(r.get("error", ""))}))
                with self._lock:
                    self.latest[key] = dict(r)
                continue
            self.lost.discard(key)
            for field_name in NUMERIC:
                v = r.get(field_name)
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    out.append(Sample(f"{key}/{field_name}", float(v), step=self._count, time=now, source=GPU_SOURCE))
            with self._lock:
                self.latest[key] = dict(r)
        return out

    def devices(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(v, key=k) for k, v in sorted(self.latest.items())]

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="trainwatch-gpu", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        try:
            self.backend.close()
        except Exception:
            pass

    def _run(self) -> None:
        while not self._stop.is_set():
            records = self.sample()
            if records:
                self.emit(records)
            self._stop.wait(self.interval)
