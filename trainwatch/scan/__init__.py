"""Finds lines, keywords, dicts, key/value tokens and progress bars in log bytes, as numpy arrays.

`Scanner` is the native scanner (the Rust extension `trainwatch._scan`) when it is built, else the
pure-Python reference; both follow the same contract and return the same `Chunk`. The environment
variable TRAINWATCH_SCANNER=native|reference forces one (for tests and comparisons). A forced choice
that cannot be honoured fails when a scanner is made, with one line that says why, so the CLI reports
it like any other usage error.
"""

from __future__ import annotations

import os
from typing import Any, NoReturn

from trainwatch.errors import UsageError
from trainwatch.scan.chunk import Chunk

_CHOICES = ("native", "reference")


def _refusal(message: str) -> type:
    class Unavailable:
        """Stands in for `Scanner` when TRAINWATCH_SCANNER asks for what cannot be had."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise UsageError(message)

    return Unavailable


def _pick() -> tuple[str, type, str]:
    """(implementation, Scanner class, error message or "")."""
    wanted = os.environ.get("TRAINWATCH_SCANNER", "").strip().lower()
    if wanted and wanted not in _CHOICES:
        message = f"TRAINWATCH_SCANNER={wanted}: use one of {', '.join(_CHOICES)}"
        return "unavailable", _refusal(message), message
    if wanted != "reference":
        try:
            from trainwatch.scan.native import Scanner as NativeScanner
        except ImportError:
            if wanted == "native":
                message = ("TRAINWATCH_SCANNER=native, but the native scanner (trainwatch._scan) is not built: "
                           "reinstall with `pip install .` on a machine with the Rust toolchain")
                return "unavailable", _refusal(message), message
        else:
            return "native", NativeScanner, ""
    from trainwatch.scan.reference import Scanner as ReferenceScanner

    return "reference", ReferenceScanner, ""


_IMPLEMENTATION, Scanner, _PROBLEM = _pick()


def implementation() -> str:
    """Which scanner `Scanner` is: "native" or "reference" (UsageError when the forced one is unavailable)."""
    if _PROBLEM:
        _fail(_PROBLEM)
    return _IMPLEMENTATION


def native() -> Any | None:
    """The compiled extension when the native scanner is the one in use (its few numeric helpers go
    with it, so TRAINWATCH_SCANNER=reference runs pure Python throughout), else None."""
    if _IMPLEMENTATION != "native":
        return None
    from trainwatch import _scan

    return _scan


def _fail(message: str) -> NoReturn:
    raise UsageError(message)


__all__ = ["Chunk", "Scanner", "implementation", "native"]
