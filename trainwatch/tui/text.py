"""Untrusted log text made safe to show: escape sequences dropped, control characters removed.

The result is still shown through Content/Text objects, never markup, so `[bold]` stays literal.
No Textual import here.
"""

from __future__ import annotations

import re

from trainwatch.textsafe import strip_controls, strip_escapes

_ERROR_WORDS = re.compile(r"\b(error|exception|traceback|fatal|nan|killed|out of memory|oom)\b", re.I)


def clean(line: str) -> str:
    """The line as plain printable text: escapes removed, tabs expanded, other controls dropped."""
    line = strip_escapes(line).rstrip("\r\n")
    if "\r" in line:  # a terminal shows what follows the last carriage return (tqdm redraws)
        line = next((part for part in reversed(line.split("\r")) if part.strip()), "")
    return strip_controls(line).expandtabs(4)


def is_error_line(line: str) -> bool:
    """Errors and traceback lines are highlighted in the log pane."""
    s = line.lstrip()
    return bool(_ERROR_WORDS.search(line)) or s.startswith(("File \"", "Traceback", "raise "))


def shorten_path(path: str, room: int) -> str:
    """`path` in at most `room` columns where it can: the folders go first, from the outermost, as
    `…/run7/train.log`, so the file name (what tells two logs apart) stays whole."""
    if len(path) <= room or "/" not in path:
        return path
    parts = path.split("/")
    for k in range(1, len(parts) - 1):
        short = "…/" + "/".join(parts[k:])
        if len(short) <= room:
            return short
    return "…/" + parts[-1]
