"""The report as one HTML file: styles, uPlot, the page script and the data inline, nothing fetched.

Log text reaches the page only inside the JSON data block, which is escaped so that no character
sequence in it can end the block or start markup (`<`, `>`, `&` and the JavaScript line separators are
written as \\u escapes); the page script puts it into the DOM as text (textContent), never as HTML."""

from __future__ import annotations

import html
import json
from importlib import resources
from typing import Any

_UPLOT_VERSION = "1.6.32"
_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _asset(name: str) -> str:
    return resources.files("trainwatch.report").joinpath("assets", name).read_text(encoding="utf-8")


def json_for_script(data: Any) -> str:
    """`data` as JSON that is safe inside a <script type="application/json"> block."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    for ch, esc in _ESCAPES.items():
        text = text.replace(ch, esc)
    return text


def page(data: dict[str, Any], title: str) -> str:
    """The whole page. `data` is what the page script draws (see trainwatch/report/build.py)."""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        "<meta name=\"color-scheme\" content=\"light dark\">"
        f"<title>{html.escape(title)}</title>"
        f"<style>{_asset('uPlot.min.css')}</style><style>{_asset('report.css')}</style></head>"
        "<body><main id=\"tw\"><noscript>This report draws its charts with JavaScript; the findings are in "
        "the data block of this file.</noscript></main>"
        f"<script type=\"application/json\" id=\"tw-data\">{json_for_script(data)}</script>"
        f"<script>/* uPlot {_UPLOT_VERSION} by Leon Sorokin (github.com/leeoniya/uPlot).\n{_license()} */\n"
        f"{_uplot()}</script>"
        f"<script>{_asset('report.js')}</script></body></html>\n"
    )


def _uplot() -> str:
    """The minified library without its banner comment (a web address: the page names none)."""
    text = _asset("uPlot.iife.min.js")
    if text.startswith("/*!"):
        text = text[text.index("*/") + 2:]
    return text


def _license() -> str:
    """uPlot's MIT license, as its copies must carry it (written so it cannot close the comment)."""
    return _asset("uPlot.LICENSE").replace("*/", "* /")
