"""Known error messages: an ERROR event with a signature id becomes that rule's finding.

The engine routes ERROR events by `signature`, so one SignatureRule per signature id sees only its own.
The numbers the scanner parsed from the line become the evidence and, for OOM, the message.
"""

from __future__ import annotations

from typing import Any

from trainwatch.model import Event, Finding
from trainwatch.rules.base import Rule, RuleContext

MAX_TEXT = 300


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
            parts.append(f"{_gib(f['reserved_gib'])} reserved)" if "reserved_gib" in f else "by PyTorch)")
        if "gpu" in f:
            parts.append(f"on GPU {f['gpu']}")
        return " ".join(parts)
    if sig == "hang.nccl" and ("timeout_ms" in f or "op" in f):
        op = f" in {f['op']}" if "op" in f else ""
        ran = f" after {f['ran_ms'] / 1000:.0f} s" if isinstance(f.get("ran_ms"), (int, float)) else ""
        lim = f" (timeout {f['timeout_ms'] / 1000:.0f} s)" if isinstance(f.get("timeout_ms"), (int, float)) else ""
        return f"watchdog fired{op}{ran}{lim}"
    shown = {k: v for k, v in f.items() if isinstance(v, (int, float, str)) and len(str(v)) < 40}
    return ", ".join(f"{k} {v}" for k, v in shown.items())


class SignatureRule(Rule):
    id = "signature"

    def __init__(self, spec) -> None:  # type: ignore[no-untyped-def]
        super().__init__(spec)
        self.signature = spec.id

    def on_event(self, ctx: RuleContext, event: Event) -> Finding | None:
        if event.signature != self.signature:
            return None
        line = event.text.strip().splitlines()[-1] if event.text.strip() else ""
        if len(line) > MAX_TEXT:
            line = line[:MAX_TEXT] + "..."
        figures = describe(self.signature, event.fields)
        message = f"{self.spec.title}: {figures}" if figures else (line or self.spec.title)
        evidence = dict(event.fields)
        evidence["text"] = line
        return Finding(message=message, subject=self.signature, evidence=evidence)
