"""Log text is untrusted: before it reaches a terminal, escape sequences and control bytes go.

The one place that knows what an escape sequence looks like: the adapters strip them before parsing,
the printers and reports before writing, the dashboard before showing a line.
"""

from __future__ import annotations

import re

# CSI, OSC (ended by BEL or ST, or cut off), DCS/SOS/PM/APC strings, other escapes (intermediate bytes
# and a final byte, or a lone ESC), and the 8-bit CSI
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"
    r"|\x1b[ -/]*[0-~]?"
    r"|\x9b[0-?]*[ -/]*[@-~]"
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 but tab and newline, DEL, C1


def strip_escapes(text: str) -> str:
    """`text` without terminal escape sequences (colours, cursor moves, titles); other bytes kept."""
    if "\x1b" in text or "\x9b" in text:
        return _ESCAPES.sub("", text)
    return text


def strip_controls(text: str) -> str:
    """`text` without control characters other than tab and newline (run after strip_escapes)."""
    return _CONTROLS.sub("", text)


def plain(text: str, *, keep_newlines: bool = False) -> str:
    """The printable part of `text`: ANSI/OSC sequences and other control characters removed."""
    text = strip_escapes(text).replace("\r", " ")
    if not keep_newlines:
        text = text.replace("\n", " ")
        return strip_controls(text.replace("\t", " "))
    return strip_controls(text)
