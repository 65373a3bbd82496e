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
