"""Formats that are not text lines: the adapter reads its own files (binary event files, a folder of metric files).

A run folder written by a tracking library (TensorBoard, MLflow, W&B) is not a log to decode line by line:
its records sit in binary protobuf streams or in one small file per metric. Such an adapter claims a path by
what is in it, says up front when the path cannot be read (`probe`), and on each call to `read_new` returns
only what was written since the last call, so `check` reads it once and `tail` follows it as it grows.
"""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path
from typing import ClassVar

from trainwatch.adapters.base import Adapter
from trainwatch.model import Record


class PathAdapter(Adapter):
    """An adapter that reads a path itself; never chosen from a text sample, only by `claims`."""

    reads_path: ClassVar[bool] = True
    text_signatures = False
    strip_prefixes = False

    @classmethod
    def score(cls, head: str, path: str) -> float:
        return 0.0  # recognised by the path's contents (`claims`), never from text

    @classmethod
    @abstractmethod
    def claims(cls, path: Path) -> bool:
        """Whether `path` (a file or a folder) holds this format, judged from its contents and layout."""

    def probe(self, path: Path) -> None:
        """Raises SourceError with one line when `path` cannot be read at all (malformed, a missing extra)."""

    @abstractmethod
    def read_new(self, path: Path) -> list[Record]:
        """The records written since the previous call (all of them on the first)."""


def reads_path(cls: type[Adapter]) -> bool:
    return bool(getattr(cls, "reads_path", False))
