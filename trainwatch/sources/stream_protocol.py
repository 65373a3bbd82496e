"""The remote stream's wire format, both ends of it: `trainwatch stream` on the node encodes, the client
(sources/remote.py) decodes.

One JSON object a line. First a handshake `{"trainwatch_stream": PROTOCOL, "version": ...}` (0 when the node
has no trainwatch), then `{"path", "offset", "lineno", "line"}` per line, `{"gpu": [...]}` readings,
`{"notice": ...}` and `{"alive": time}` heartbeats. Kept in one module so the two ends cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from trainwatch.errors import UsageError
from trainwatch.model import Event, EventKind, Record, Sample

PROTOCOL = 1
HANDSHAKE = "trainwatch_stream"
HEARTBEAT_S = 2.0


def encode(obj: dict[str, Any]) -> str:
    """One message as its line, newline included."""
    return json.dumps(obj, separators=(",", ":")) + "\n"


def decode(raw: str | bytes) -> dict[str, Any] | None:
    """One line as its message; None for anything else (a login banner or other noise)."""
    try:
        msg = json.loads(raw)
    except ValueError:
        return None
    return msg if isinstance(msg, dict) else None


def record_to_json(r: Record) -> dict[str, Any]:
    """A GPU record as plain JSON (the client rebuilds it with record_from_json)."""
    d = dataclasses.asdict(r)
    if isinstance(r, Event):
        d["kind"] = r.kind.value
        d["type"] = "event"
    else:
        d["type"] = "sample"
    return d


def record_from_json(d: dict[str, Any]) -> Record:
    d = dict(d)
    kind = d.pop("type", "sample")
    if kind == "event":
        d["kind"] = EventKind(d["kind"])
        return Event(**d)
    return Sample(**d)


def resume_arg(resume: dict[str, tuple[int, int]]) -> str:
    """`--resume`'s value: where each file's stream starts again, {"PATH": [OFFSET, LINENO]}."""
    return json.dumps(resume)


def parse_resume(text: str) -> dict[str, tuple[int, int]]:
    try:
        raw = json.loads(text)
        return {str(k): (int(v[0]), int(v[1])) for k, v in raw.items()}
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        raise UsageError(f"--resume: expected {{\"PATH\": [OFFSET, LINENO]}}, got {text[:80]!r}") from None
