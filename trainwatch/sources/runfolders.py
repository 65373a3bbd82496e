"""Run folders of the tracking libraries: which paths under a folder are read, and by which adapter.

A folder given to `check` or `tail` may be a plain log folder, a TensorBoard log dir, an `mlruns` tree or
a W&B offline run; it is recognised by what it holds (event files, MLflow run metadata, a `.wandb` file),
never by its name. Text logs found there (W&B's `files/output.log`) are read by the console adapters.
"""

from __future__ import annotations

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
    out: list[Path] = list(folders)
    for q in sorted(base.rglob("*")):
        if not q.is_file() or any(_under(q, d) for d in folders):
            continue
        if is_member(q, is_log_name):
            out.append(q)
    return sorted(out)


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
