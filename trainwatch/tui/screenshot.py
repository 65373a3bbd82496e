"""ctrl+s: an SVG screenshot (Textual's own) in the current folder, under a name no other file has."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from textual.app import App


def free_name(folder: Path, stamp: str, *, suffix: str = ".svg") -> Path:
    """Claims `trainwatch-STAMP.svg` (or -2, -3 ...) by creating it empty: two saves never share a file.

    O_EXCL makes the claim atomic, so a file that appears between looking and writing is not
    overwritten either.
    """
    for n in range(1, 1000):
        path = folder / f"trainwatch-{stamp}{'' if n == 1 else f'-{n}'}{suffix}"
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"no free screenshot name for {stamp} in {folder}")


def save(app: App[Any], folder: Path | None = None, stamp: str | None = None) -> Path:
    """Saves the current screen and returns where."""
    folder = Path.cwd() if folder is None else folder
    path = free_name(folder, stamp or time.strftime("%Y%m%d-%H%M%S"))
    app.save_screenshot(filename=path.name, path=str(path.parent))
    return path
