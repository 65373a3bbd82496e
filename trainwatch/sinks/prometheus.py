"""`--prometheus [ADDR:]PORT`: what `tail` knows, as Prometheus gauges on http://ADDR:PORT/metrics.

Teams that run many trainings already have Prometheus, Alertmanager and Grafana, so trainwatch hands
them its state rather than growing a server of its own. Each scrape takes one Snapshot through the
same read-only view the dashboard draws from (trainwatch/view/snapshot.py, no Textual in it), so the lock
is held only while copying and the exporter cannot disturb the engine thread.

Metric values come from logs, whose names are free text (`rewards/accuracy/mean`): they are a label
of one family, `trainwatch_metric{name="loss"}`, never part of a metric name, so nothing is renamed,
two names never collide, and Grafana can offer them all through one `label_values` variable.
Alert states take the shape of Prometheus' own ALERTS series: `trainwatch_alerts{alertname,
severity, state, ...} 1` while an alert is pending or firing, absent otherwise.
"""

from __future__ import annotations

import errno
import functools
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import PurePath
from typing import Any

from trainwatch.errors import TrainwatchError, UsageError
from trainwatch.model import AlertState
from trainwatch.names import rank_of
from trainwatch.sinks import http_server

DEFAULT_HOST = "127.0.0.1"  # a training node's numbers are not published to its network unless asked
RATE_WINDOW_S = 60.0
SERIES = ("run", "source", "rank")  # the labels of every per-log family
# (family, help, unit factor, reading field): GPU telemetry as the sampler reads it (MiB, MHz, W, C, %)
GPU_GAUGES: tuple[tuple[str, str, float, str], ...] = (
    ("trainwatch_gpu_utilization_percent", "GPU busy time, percent", 1.0, "util"),
    ("trainwatch_gpu_memory_utilization_percent", "GPU memory controller busy time, percent", 1.0, "mem_util"),
    ("trainwatch_gpu_memory_used_bytes", "GPU memory in use", 1024.0 * 1024.0, "mem_used"),
    ("trainwatch_gpu_memory_total_bytes", "GPU memory size", 1024.0 * 1024.0, "mem_total"),
    ("trainwatch_gpu_temperature_celsius", "GPU temperature", 1.0, "temp"),
    ("trainwatch_gpu_power_watts", "GPU power draw", 1.0, "power"),
    ("trainwatch_gpu_power_limit_watts", "GPU enforced power limit", 1.0, "power_limit"),
    ("trainwatch_gpu_sm_clock_hertz", "GPU SM clock", 1e6, "sm_clock"),
    ("trainwatch_gpu_throttle_reasons", "NVML clocks-event reason bits (0: not throttled)", 1.0, "throttle"),
    ("trainwatch_gpu_ecc_corrected_errors", "GPU corrected ECC errors (volatile count)", 1.0, "ecc_corrected"),
    ("trainwatch_gpu_ecc_uncorrected_errors", "GPU uncorrected ECC errors (volatile count)", 1.0,
     "ecc_uncorrected"),
    ("trainwatch_gpu_retired_pages", "GPU memory pages retired", 1.0, "retired_pages"),
)
FAMILIES = ("trainwatch_metric", "trainwatch_alerts", "trainwatch_step", "trainwatch_total_steps",
            "trainwatch_steps_per_second", "trainwatch_last_progress_age_seconds", "trainwatch_run_ended",
            "trainwatch_gpu_lost") + tuple(g[0] for g in GPU_GAUGES)
"""Every family the exporter can serve: docs/remote.md, the rules file and the dashboard use these names."""


def parse_address(text: str) -> tuple[str, int]:
    """`PORT`, `ADDR:PORT` or `[IPV6]:PORT` -> (host, port); the host defaults to 127.0.0.1.

    An argparse type: a malformed value is a usage error naming the option (exit 3)."""
    import argparse

    host, sep, port = text.strip().rpartition(":")
    if not sep:
        host, port = DEFAULT_HOST, text.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise argparse.ArgumentTypeError(f"{text!r}: write an IPv6 address in brackets, e.g. [::1]:9188")
    if not host and sep:
        raise argparse.ArgumentTypeError(f"{text!r}: no address before ':' (give PORT alone for {DEFAULT_HOST})")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r}: expected [ADDR:]PORT with a port from 0 to 65535")
    return host, int(port)


def run_label(source: str) -> str:
    """A run is one folder (as the dashboard overlays rank files of one folder): its name, else the log's."""
    parent = PurePath(source).parent
    name = parent.name or PurePath(os.path.abspath(source)).parent.name
    return name or PurePath(source).stem


class _Progress:
    """Steps per second of one source, from (time the step moved on, step) pairs seen at scrapes."""

    def __init__(self) -> None:
        from trainwatch.view.snapshot import RateMeter

        self._new = RateMeter
        self.meter = RateMeter(window_s=RATE_WINDOW_S)
        self.last_step: int | None = None

    def rate(self, now: float, step: int | None, at: float | None) -> float | None:
        if step is None or at is None:
            return None
        if self.last_step is not None and step < self.last_step:  # resumed from a checkpoint: start afresh
            self.meter = self._new(window_s=RATE_WINDOW_S)
        self.last_step = step
        self.meter.add(at, step)
        if now - at > RATE_WINDOW_S:
            return 0.0  # no new step for a whole window: stopped, whatever the pace was
        return self.meter.rate()


class Collector:
    """prometheus_client's custom-collector interface over a WatchModel (a Watcher, or a test's model)."""

    def __init__(self, model: Any, clock: Callable[[], float] | None = None) -> None:
        from trainwatch.view.snapshot import ViewCache

        self.model = model
        self.clock = clock or getattr(model, "clock", None) or time.time
        self._cache = ViewCache()
        self._progress: dict[str, _Progress] = {}
        self._lock = threading.Lock()  # the HTTP server answers scrapes on threads of its own

    def describe(self) -> list[Any]:
        return []  # no snapshot at registration: the families are whatever the run has when scraped

    def collect(self) -> list[Any]:
        """One snapshot (the watcher's lock held only while it is copied), turned into gauge families."""
        from prometheus_client.core import GaugeMetricFamily as Gauge

        from trainwatch.view import snapshot as view

        with self._lock:
            snap = view.take(self.model, selected=None, log_source=None, cache=self._cache)
            now = self.clock()
            metric = Gauge("trainwatch_metric", "Latest value of each metric a log printed (name: as trainwatch "
                           "names it)", labels=[*SERIES, "name"])
            for m in snap.metrics:
                if m.source != "gpu" and m.last is not None:
                    metric.add_metric([*_series(m.source), m.name], m.last)
            return [metric, self._alerts(snap), *self._progress_families(snap, now), *_gpu_families(snap.gpus)]

    def _alerts(self, snap: Any) -> Any:
        from prometheus_client.core import GaugeMetricFamily as Gauge

        fam = Gauge("trainwatch_alerts", "trainwatch's own alerts in the shape of Prometheus' ALERTS: 1 while "
                    "pending or firing", labels=["alertname", "severity", "state", "source", "subject", "run", "rank"])
        seen: set[tuple[str, ...]] = set()
        for a in snap.alerts:
            # what trainwatch tells: not resolved, not held quiet by the alert that explains it
            if a.state is AlertState.RESOLVED or a.inhibited or (a.state is AlertState.FIRING and not a.told):
                continue
            run, _, rank = _series(a.source)
            labels = (a.rule, a.severity.label, a.state.value, a.source, a.subject, run, rank)
            if labels not in seen:
                seen.add(labels)
                fam.add_metric(list(labels), 1)
        return fam

    def _progress_families(self, snap: Any, now: float) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily as Gauge

        step = Gauge("trainwatch_step", "Latest training step of each log", labels=list(SERIES))
        total = Gauge("trainwatch_total_steps", "Total steps the log announced", labels=list(SERIES))
        rate = Gauge("trainwatch_steps_per_second", f"Training steps per second over the last "
                     f"{RATE_WINDOW_S:g} s (0 when no step came in that time)", labels=list(SERIES))
        age = Gauge("trainwatch_last_progress_age_seconds", "Seconds since the step last moved on",
                    labels=list(SERIES))
        ended = Gauge("trainwatch_run_ended", "1 once the log printed its end-of-training summary",
                      labels=list(SERIES))
        for s in snap.sources:
            if s.waiting or not s.read:
                continue
            labels = list(_series(s.name))
            ended.add_metric(labels, 1.0 if s.ended else 0.0)
            if s.step is not None:
                step.add_metric(labels, s.step)
            if s.total:
                total.add_metric(labels, s.total)
            if s.progress_at is not None:
                age.add_metric(labels, max(0.0, now - s.progress_at))
            r = self._progress.setdefault(s.name, _Progress()).rate(now, s.step, s.progress_at)
            if r is not None:
                rate.add_metric(labels, r)
        yield from (step, total, rate, age, ended)


@functools.lru_cache(maxsize=4096)  # a handful of sources, asked once per metric per scrape
def _series(source: str) -> tuple[str, str, str]:
    if source in ("", "gpu"):  # the GPU sampler's alerts belong to the node, not to a run
        return "", source, ""
    rank = rank_of(source)
    return run_label(source), source, "" if rank is None else str(rank)


def _gpu_families(devices: list[dict[str, Any]]) -> Iterator[Any]:
    from prometheus_client.core import GaugeMetricFamily as Gauge

    labels = ["gpu", "name"]
    lost = Gauge("trainwatch_gpu_lost", "1 when the GPU stopped answering (fell off the bus)", labels=labels)
    fams = [(Gauge(name, doc, labels=labels), factor, key) for name, doc, factor, key in GPU_GAUGES]
    for d in devices:
        ident = [str(d.get("key", "")).removeprefix("gpu"), str(d.get("name", ""))]
        lost.add_metric(ident, 1.0 if d.get("lost") else 0.0)
        for fam, factor, key in fams:
            v = d.get(key)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and not d.get("lost"):
                fam.add_metric(ident, float(v) * factor)
    yield lost
    yield from (f for f, _, _ in fams)


class Exporter:
    """The HTTP endpoint: bound by `start()` (a port in use is one TrainwatchError line), stopped by `close()`."""

    def __init__(self, model: Any, host: str, port: int, clock: Callable[[], float] | None = None,
                 **limits: float) -> None:
        self.model = model
        self.host = host
        self.port = port
        self.clock = clock
        self.limits = limits  # idle_timeout, max_connections (sinks/http_server.py)
        self._server: Any = None

    def start(self) -> tuple[str, int]:
        """Binds and serves on a daemon thread; returns the address bound (the port, when 0 was asked)."""
        try:
            from prometheus_client import CollectorRegistry, make_wsgi_app
        except ImportError:
            raise UsageError("--prometheus needs the prometheus_client package",
                             hint="pip install prometheus-client") from None
        registry = CollectorRegistry(auto_describe=False)
        registry.register(Collector(self.model, self.clock))
        where = f"--prometheus {_show(self.host, self.port)}"
        try:
            self._server, _ = http_server.start(self.host, self.port, make_wsgi_app(registry), **self.limits)
        except socket.gaierror as exc:
            raise TrainwatchError(f"{where}: unknown address ({exc.strerror or exc})") from None
        except OSError as exc:
            why = "port already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
            raise TrainwatchError(f"{where}: cannot listen: {why}") from None
        bound = self._server.server_address
        return self.host, int(bound[1])

    def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()


def _show(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def serve(model: Any, address: tuple[str, int], say: Callable[[str], None]) -> Exporter:
    """Starts an exporter for `tail` (or any front end) and says where it listens."""
    exporter = Exporter(model, *address)
    host, port = exporter.start()
    say(f"serving Prometheus metrics at http://{_show(host, port)}/metrics")
    return exporter
