"""Finds lines, keywords, dicts, key/value tokens and progress bars in log bytes, as numpy arrays."""

from __future__ import annotations

from trainwatch.scan.chunk import Chunk

__all__ = ["Chunk"]
