"""The exporter's HTTP server holds a bounded number of connections, and drops the idle ones (issue 27.9).

Real sockets on loopback against the real exporter over a real engine: idle clients connect and send
nothing, and the test counts the server's threads and reads what each socket gets back.
"""

from __future__ import annotations

import socket
import threading
import urllib.request

from trainwatch import config
from trainwatch.engine import Engine
from trainwatch.sinks import prometheus
from trainwatch.view.model import EngineModel


def _exporter(**limits: float) -> tuple[prometheus.Exporter, int]:
    exporter = prometheus.Exporter(EngineModel(Engine(config.load("sft"))), "127.0.0.1", 0, **limits)
    _, port = exporter.start()
    return exporter, port


def test_idle_connections_are_capped_and_answered_busy() -> None:
    exporter, port = _exporter(idle_timeout=30.0, max_connections=4)
    before = threading.active_count()
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(4)]
    late = []
    try:
        # the four slots are taken by clients that send nothing; every further one is told "busy"
        for _ in range(20):
            s = socket.create_connection(("127.0.0.1", port))
            s.settimeout(10)
            late.append(s)
            assert s.recv(64).startswith(b"HTTP/1.0 503")
        assert threading.active_count() <= before + 4
    finally:
        for s in idle + late:
            s.close()
        exporter.close()


def test_a_silent_connection_is_closed_and_its_slot_serves_a_scrape() -> None:
    exporter, port = _exporter(idle_timeout=0.3, max_connections=1)
    try:
        silent = socket.create_connection(("127.0.0.1", port))
        silent.settimeout(10)
        assert silent.recv(64) == b""  # the server closed it after its idle timeout
        silent.close()
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        assert "trainwatch_" in body
    finally:
        exporter.close()
