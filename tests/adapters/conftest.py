"""Fixtures for adapter tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def tmp_log(tmp_path):  # type: ignore[no-untyped-def]
    """Writes text to a file in a fresh directory and returns its path as a string."""

    def write(name: str, text: str) -> str:
        p = tmp_path / name
        p.write_text(text, encoding="utf-8")
        return str(p)

    return write
