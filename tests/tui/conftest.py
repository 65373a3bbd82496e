"""Shared helpers for TUI tests: the text on screen, read back from Textual's own screenshot."""

from __future__ import annotations

import html
import re

from textual.app import App


def screen_text(app: App) -> str:
    """All visible text of the current screen, spaces normalised (from the SVG screenshot)."""
    svg = app.export_screenshot()
    parts = re.findall(r"<text[^>]*>(.*?)</text>", svg, flags=re.S)
    return html.unescape("".join(parts)).replace("\xa0", " ")
