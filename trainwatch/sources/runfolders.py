"""Run folders of the tracking libraries: which paths under a folder are read, and by which adapter.

A folder given to `check` or `tail` may be a plain log folder, a TensorBoard log dir, an `mlruns` tree or
a W&B offline run; it is recognised by what it holds (event files, MLflow run metadata, a `.wandb` file),
never by its name. Text logs found there (W&B's `files/output.log`) are read by the console adapters.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from trainwatch import adapters
from trainwatch.adapters.path_reader import PathAdapter, reads_path


def path_format(path: Path) -> str | None:
    """The name of the path-reading adapter that claims `path`, or None for an ordinary text log."""
    for name, cls in adapters.registry().items():
        if reads_path(cls) and issubclass(cls, PathAdapter):
            try:
                if cls.claims(path):
                    return name
            except OSError:
                continue
    return None


def is_member(path: Path, is_log_name: Callable[[Path], bool]) -> bool:
    """A file under a watched folder that is read: a log by its name, or one a path adapter claims."""
    return is_log_name(path) or (path.is_file() and path_format(path) is not None)


def members(base: Path, is_log_name: Callable[[Path], bool]) -> list[Path]:
    """Everything under `base` to read, sorted: text logs, claimed files, and claimed folders (an MLflow
    run is one source, and nothing inside it is read a second time as a file)."""
    if path_format(base) is not None:
        return [base]
    folders = sorted(d for d in [base, *base.rglob("*")] if d.is_dir() and path_format(d) is not None)
    wandb_runs = [d for d in [base, *base.rglob("*")] if _is_wandb_run(d)]
    out: list[Path] = list(folders)
    for q in sorted(base.rglob("*")):
        if not q.is_file() or any(_under(q, d) for d in folders):
            continue
        if any(_inside(q, d) and not _wandb_kept(q, d) for d in wandb_runs) or _into_wandb_logs(q, wandb_runs):
            continue  # W&B's own debug logs, requirements.txt and the like: not the training's output
        if is_member(q, is_log_name):
            out.append(q)
    return sorted(out)


def _is_wandb_run(d: Path) -> bool:
    """A W&B run folder: its console output under files/ and a .wandb history file beside it."""
    return d.is_dir() and (d / "files").is_dir() and any(q.suffix == ".wandb" for q in d.iterdir() if q.is_file())


def _wandb_kept(q: Path, run: Path) -> bool:
    """What is read inside a W&B run folder: the history file and the console output."""
    resolved = q.resolve()
    return resolved.suffix == ".wandb" or resolved == (run / "files" / "output.log").resolve()


def _inside(q: Path, folder: Path) -> bool:
    """`q` lies under `folder` as written (a link inside the folder counts wherever it points)."""
    return os.path.abspath(q).startswith(os.path.abspath(folder) + os.sep)


def _into_wandb_logs(q: Path, runs: list[Path]) -> bool:
    """A link beside the runs into one of them (W&B's wandb/debug.log -> the latest run's logs)."""
    return q.is_symlink() and any(_under(q, d) and not _wandb_kept(q, d) for d in runs)


def owner(path: Path, sources: list[Path]) -> Path | None:
    """The claimed folder among `sources` that holds `path` (a metric file changed inside an MLflow run)."""
    for src in sources:
        if src.is_dir() and _under(path, src):
            return src
    return None


def _under(p: Path, folder: Path) -> bool:
    try:
        p.resolve().relative_to(folder.resolve())
        return True
    except (ValueError, OSError):
        return False
