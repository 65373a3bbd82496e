"""Severity to theme variables and words: colour always comes with text, so 16-colour and NO_COLOR work."""

from __future__ import annotations

from trainwatch.model import Severity

SEVERITY_STYLE = {None: "$success", Severity.INFO: "$primary", Severity.WARNING: "$warning bold",
                  Severity.CRITICAL: "$error bold"}
SEVERITY_WORD = {None: "ok", Severity.INFO: "info", Severity.WARNING: "WARN", Severity.CRITICAL: "CRIT"}
BADGE_CLASS = {"OK": "-ok", "WARNING": "-warning", "CRITICAL": "-critical", "STALLED": "-stalled"}


def severity_style(sev: Severity | None) -> str:
    return SEVERITY_STYLE.get(sev, "$success")


def severity_word(sev: Severity | None) -> str:
    return SEVERITY_WORD.get(sev, "ok")


def retitle(widget: object, title: object = None, subtitle: object = None) -> None:
    """Sets a border title/subtitle (str or Content) only when it changed: Textual repaints on every set."""
    shown: dict[str, object] = widget.__dict__.setdefault("_tw_titles", {})
    for attr, value in (("border_title", title), ("border_subtitle", subtitle)):
        if value is not None and shown.get(attr) != value:
            shown[attr] = value
            setattr(widget, attr, value)
