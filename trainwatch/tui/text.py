"""Untrusted log text made safe to show: escape sequences dropped, control characters removed.

The result is still shown through Content/Text objects, never markup, so `[bold]` stays literal.
No Textual import here.
"""

from __future__ import annotations

import re

# CSI, OSC (ended by BEL or ST, or cut off), DCS/SOS/PM/APC strings, and two-byte escapes.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"
    r"|\x1b[ -/]*[0-~]?"
    r"|\x9b[0-?]*[ -/]*[@-~]"
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_ERROR_WORDS = re.compile(r"\b(error|exception|traceback|fatal|nan|killed|out of memory|oom)\b", re.I)


def clean(line: str) -> str:
    """The line as plain printable text: escapes removed, tabs expanded, other controls dropped."""
    if "\x1b" in line or "\x9b" in line:
        line = _ESCAPES.sub("", line)
    line = line.rstrip("\r\n")
    if "\r" in line:  # a terminal shows what follows the last carriage return (tqdm redraws)
        line = next((part for part in reversed(line.split("\r")) if part.strip()), "")
    line = _CONTROL.sub("", line)
    return line.expandtabs(4)


def is_error_line(line: str) -> bool:
    """Errors and traceback lines are highlighted in the log pane."""
    s = line.lstrip()
    return bool(_ERROR_WORDS.search(line)) or s.startswith(("File \"", "Traceback", "raise "))
