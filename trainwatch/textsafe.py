"""Log text is untrusted: before it reaches a terminal, escape sequences and control bytes go."""

from __future__ import annotations

import re

_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[P^_X][^\x1b]*(?:\x1b\\)?|\x1b.?")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def plain(text: str, *, keep_newlines: bool = False) -> str:
    """The printable part of `text`: ANSI/OSC sequences and other control characters removed."""
    if "\x1b" in text:
        text = _ESCAPES.sub("", text)
    text = text.replace("\r", " ")
    if not keep_newlines:
        text = text.replace("\n", " ")
        return _CONTROLS.sub("", text.replace("\t", " "))
    return _CONTROLS.sub("", text)
