"""Which files of a folder are one run: the rank logs of one job, and a trainer_state.json that a console
log beside it already holds.

`check DIR` judges each run on its own (its own task, preset and engine), so a log's findings never
depend on the logs next to it. Files are one run only when the log says so: rank files whose names
differ only in the rank number, and a trainer_state.json whose first logged losses the console log
beside it printed too (a checkpoint of another run in the same folder is read as its own run); a folder
of one job's rank files is that job, the launcher's log beside them included.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from trainwatch.sources.files import open_checked

_RANK = re.compile(r"rank[_-]?\d+", re.I)
MATCHED = 5  # the first this many training losses of a trainer_state.json are looked for in the console log
CONSOLE_BYTES = 16 << 20  # the first losses of a run are printed near the start of its console log
STATE_BYTES = 64 << 20


class Opened(Protocol):
    path: Path
    format: str


def rank_family(path: Path) -> tuple[str, str] | None:
    """(folder, name with the rank number blanked) for a rank file (`rank3.log`, `train_rank_0.out`)."""
    if not _RANK.search(path.name):
        return None
    return str(path.parent), _RANK.sub("rank*", path.name)


def runs(opened: Sequence[Opened]) -> list[list[int]]:
    """The sources grouped into runs, as indexes in `opened`, in the order the runs first appear: the
    rank files of one job together, with the other logs of their folder when it holds that one job
    (the launcher's log, which names the rank that failed); every other file a run of its own."""
    families = {f for f in (rank_family(s.path) for s in opened) if f is not None}
    jobs: dict[str, list[tuple[str, str]]] = {}
    for folder, name in families:
        jobs.setdefault(folder, []).append((folder, name))
    groups: dict[object, list[int]] = {}
    for i, src in enumerate(opened):
        family = rank_family(src.path)
        if family is None:
            job = jobs.get(str(src.path.parent), [])
            family = job[0] if len(job) == 1 else None
        groups.setdefault(family if family is not None else i, []).append(i)
    return list(groups.values())


def first_losses(state_path: Path, n: int = MATCHED) -> list[float]:
    """The first `n` training losses of a trainer_state.json's log_history (empty when unreadable)."""
    try:
        with open_checked(state_path) as f:
            history = json.loads(f.read(STATE_BYTES)).get("log_history") or []
    except (OSError, ValueError, AttributeError, TypeError, RecursionError):  # unreadable: no match
        return []
    out = []
    for e in history:
        v = e.get("loss") if isinstance(e, dict) else None
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v:
            out.append(float(v))
            if len(out) == n:
                break
    return out


def _spellings(v: float) -> set[str]:
    """How a console may have printed `v`: as stored, rounded to 4 places, or to 4 significant digits."""
    out = {repr(v), f"{v:.4g}", repr(round(v, 4)), f"{v:.4f}"}
    return {s for s in out if len(s.lstrip("-")) >= 3}


def same_run(state_path: Path, console_path: Path) -> bool:
    """Whether the console log printed the first training losses the trainer_state.json holds (all of
    them, up to MATCHED): then it is the same run, and reading both would tell every finding twice."""
    losses = first_losses(state_path)
    if not losses:
        return False
    try:
        with open_checked(console_path) as f:
            text = f.read(CONSOLE_BYTES).decode("utf-8", "replace")
    except OSError:
        return False
    return all(any(s in text for s in _spellings(v)) for v in losses)


def beside(state_path: Path, console_path: Path) -> bool:
    """The trainer_state.json sits where a console log's run keeps it: the log's folder, or a checkpoint
    folder inside it."""
    return state_path.parent == console_path.parent or state_path.parent.parent == console_path.parent
