"""remote.lost_contact: a log followed over SSH stopped arriving because the connection dropped.

Only the SSH reader knows this, so it feeds the fact to the engine as a CONTACT event per log that
came over the connection (trainwatch/live/remote.py): `lost: true` with the host, the seconds since
the connection last said anything and why it ended; `lost: false` once a new connection has resumed.
A loss fires at once (it is a fact, not a trend). An event never resolves an alert by itself, so the
reconnection is noted here and the alert is resolved on the engine's next tick, a fraction of a
second later. While it fires, the stall rules stay quiet for that log (presets/base-live.yaml): the
silence is the link's, not the training's.
"""

from __future__ import annotations

from collections.abc import Iterable

from trainwatch.model import Event, EventKind, Finding
from trainwatch.rules.base import Rule, RuleContext
from trainwatch.rules.registry import register
from trainwatch.rulespec import RuleSpec


@register("remote.lost_contact")
class LostContact(Rule):
    id = "remote.lost_contact"
    events = (EventKind.CONTACT,)
    ticks = True

    def __init__(self, spec: RuleSpec) -> None:
        super().__init__(spec)
        self.back: list[tuple[str, str]] = []  # (source, host) reconnected since the last tick

    def on_event(self, ctx: RuleContext, event: Event) -> Finding | None:
        host = str(event.fields.get("host") or "the remote host")
        if not event.fields.get("lost"):
            self.back.append((event.source, host))
            return None
        since = event.fields.get("since_s")
        why = str(event.fields.get("why") or "")
        evidence: dict[str, object] = {"host": host}
        message = f"lost contact with {host}"
        if isinstance(since, (int, float)):
            evidence["since_last_line_s"] = round(float(since), 1)
            message += f" ({since:.0f} s since the last line)"
        if why:
            evidence["why"] = why
            message += f": {why}"
        return Finding(message=message + "; reconnecting", subject=host, evidence=evidence)

    def on_tick(self, ctx: RuleContext) -> Iterable[tuple[str, str, Finding | None]]:
        back, self.back = self.back, []
        return [(source, host, None) for source, host in back]
