"""Parameter shapes that several rules share. A rule's own parameters sit next to it, as a dataclass
named by its `params`; the values (and what each means) are in presets/base.yaml and base-live.yaml."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SilenceParams:
    """When a log's silence counts as a stall: hang.stall warns on it, and hang.stopped and
    hang.collective judge the GPUs once it has lasted this long."""

    warn_factor: float
    warn_floor_s: float
    min_intervals: int
    unlearned_warn_s: float
