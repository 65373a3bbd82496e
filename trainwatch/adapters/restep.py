"""Steps for logged records that printed no step, worked out once a later line gives the step.

A console log that prints neither the step, nor a progress bar, nor the logging interval, nor an exact
number of steps per epoch only counts its records, and an epoch rounded to two decimals is a poor ruler:
dating record k by `epoch x a guessed pace` prints "step 99" for a run that stopped at step 1971. Such
records are held until a witness arrives: a bar redrawn at a record's own step, or a checkpoint that
names its step. With the witness at step N after m records logged at a constant interval L (the Trainer
logs every `logging_steps`, and optionally also at step 1), the interval is the one whole L that puts the
records at L, 2L, ... and the witness where it is, and it is accepted only when every record's printed
epoch agrees with its new step under one steps-per-epoch, to the precision the epoch was printed with.
When no interval fits, or two do, nothing is re-dated: the records keep their guessed steps.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def _half_unit(epoch: float) -> float:
    """Half the last printed digit of an epoch (0.005 for `0.99`): how far the true value may lie."""
    text = repr(epoch)
    if "e" in text or "E" in text:
        return abs(epoch) * 1e-6
    decimals = len(text.split(".", 1)[1]) if "." in text else 0
    return 0.5 * 10.0 ** -decimals


def pace_agrees(steps: Sequence[int], epochs: Sequence[float]) -> bool:
    """Whether one steps-per-epoch S makes every printed epoch the rounding of step / S."""
    lo, hi = 0.0, math.inf
    for step, epoch in zip(steps, epochs, strict=True):
        h = _half_unit(epoch)
        lo = max(lo, step / (epoch + h))
        if epoch - h > 0:
            hi = min(hi, step / (epoch - h))
        if lo > hi * (1 + 1e-9):
            return False
    return True


def interval_steps(epochs: Sequence[float], witness: int, base: int, at_record: bool) -> list[int] | None:
    """The steps of records logged at a constant interval from `base`, given their printed epochs and
    the witness step: the step of the record that follows them (`at_record`), or of a checkpoint saved
    after the last of them and before the next log. None unless exactly one layout fits."""
    m = len(epochs)
    if m == 0 or witness <= base:
        return None
    fits: list[list[int]] = []
    for first_step in (False, True):  # logged at L, 2L, ... or also at step 1 (logging_first_step)
        spans = m - 1 if first_step else m  # intervals from base to the last held record
        if first_step and spans < 1:
            continue
        room = witness - base
        if at_record:
            spans += 1
            if room % spans:
                continue
            interval = room // spans
        else:
            interval = room // spans
            if interval < 1 or base + (spans + 1) * interval <= witness:
                continue
        if interval < 1:
            continue
        steps = ([base + 1] + [base + j * interval for j in range(1, m)] if first_step
                 else [base + j * interval for j in range(1, m + 1)])
        if first_step and steps[1] <= steps[0]:
            continue
        if pace_agrees(steps, epochs):
            fits.append(steps)
    return fits[0] if len(fits) == 1 else None
