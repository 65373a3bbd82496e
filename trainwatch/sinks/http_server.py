"""The exporter's HTTP server: a thread per connection, but a bounded number of them, each with a deadline.

prometheus_client's own server starts a thread for every connection and waits on it forever: a scraper
that connects and never sends a request (a port scanner, a half-open connection behind a load balancer)
holds a thread for good, and 300 such connections held 306 threads. Here a connection that sends
nothing for `idle_timeout` seconds is closed, and past `max_connections` open at once a new one is
answered 503 at once and closed: a scrape that finds the server full is retried by Prometheus at its
next interval, which is what it does on any failed scrape.
"""

from __future__ import annotations

import socket
import threading
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

IDLE_TIMEOUT_S = 10.0
"""Seconds a connection may stay silent. A Prometheus scrape sends its request at once and reads the
answer within its scrape timeout (10 s by default), so only connections that do nothing reach this."""
MAX_CONNECTIONS = 32
"""Connections served at once. A few scrapers (Prometheus, an HA pair, a curl) need a handful."""
BUSY = b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nbusy\n"


class _QuietHandler(WSGIRequestHandler):
    """Logs nothing: a watcher's terminal is for alerts, not for access lines."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


class BoundedServer(ThreadingMixIn, WSGIServer):
    """A WSGI server with a deadline per connection and a cap on the connections served at once."""

    daemon_threads = True  # a stopped exporter does not wait for a scraper

    def __init__(self, address: tuple[str, int], app: Any, *, idle_timeout: float = IDLE_TIMEOUT_S,
                 max_connections: int = MAX_CONNECTIONS) -> None:
        handler = type("_Handler", (_QuietHandler,), {"timeout": idle_timeout})
        self.address_family = _family(address[0], address[1])
        self._slots = threading.BoundedSemaphore(max_connections)
        super().__init__(address, handler)
        self.set_app(app)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            try:
                request.settimeout(1.0)
                request.sendall(BUSY)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except Exception:  # no thread could be started: the slot is free again
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:  # the slot is free before the client sees its connection close
            self._slots.release()
            self.shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that timed out or went away is not an error worth a traceback on the terminal."""


def _family(host: str, port: int) -> socket.AddressFamily:
    """IPv6 for an IPv6 address or a name that resolves only to one, else IPv4."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    return infos[0][0] if infos else socket.AF_INET


def start(host: str, port: int, app: Any, **limits: Any) -> tuple[BoundedServer, threading.Thread]:
    """Binds and serves on a daemon thread."""
    server = BoundedServer((host, port), app, **limits)
    thread = threading.Thread(target=server.serve_forever, name="trainwatch-exporter", daemon=True)
    thread.start()
    return server, thread
