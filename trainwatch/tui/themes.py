"""Themes as files: YAML in themes/ (packaged as trainwatch.themes) becomes textual.theme.Theme.

Built-ins load from the installed package, or from the checkout's themes/ folder when the package
mapping is not installed; a user may also pass a path to a YAML file as --theme.
"""

from __future__ import annotations

import zlib
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from textual.theme import Theme

from trainwatch import yamltext
from trainwatch.errors import ConfigError

DEFAULT_THEME = "trainwatch-dark"
_FIELDS = ("name", "primary", "secondary", "warning", "error", "success", "accent", "foreground",
           "background", "surface", "panel", "boost", "dark", "luminosity_spread", "text_alpha", "variables")


def theme_from_yaml(text: str, where: str) -> Theme:
    try:
        data: Any = yamltext.load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: not valid YAML: {exc}") from None
    if not isinstance(data, dict) or "name" not in data or "primary" not in data:
        raise ConfigError(f"{where}: a theme needs at least 'name' and 'primary'")
    unknown = sorted(set(data) - set(_FIELDS))
    if unknown:
        raise ConfigError(f"{where}: unknown theme keys: {', '.join(unknown)}", hint="allowed: " + ", ".join(_FIELDS))
    return Theme(**data)


def _theme_files() -> list[tuple[str, str]]:
    """(where, text) for every bundled theme file."""
    out: list[tuple[str, str]] = []
    try:
        root: Any = resources.files("trainwatch.themes")
        entries = list(root.iterdir())
    except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError):
        here = Path(__file__).resolve().parents[2] / "themes"
        entries = list(here.iterdir()) if here.is_dir() else []
    for entry in sorted(entries, key=lambda e: e.name):
        if entry.name.endswith((".yaml", ".yml")):
            out.append((f"themes/{entry.name}", entry.read_text(encoding="utf-8")))
    return out


def builtin_themes() -> dict[str, Theme]:
    themes = {}
    for where, text in _theme_files():
        theme = theme_from_yaml(text, where)
        themes[theme.name] = theme
    return themes


def resolve(name: str | None, themes: dict[str, Theme]) -> Theme | None:
    """The theme for --theme NAME: a bundled name (with or without the 'trainwatch-' prefix), or a file."""
    if not name:
        return themes.get(DEFAULT_THEME)
    for candidate in (name, f"trainwatch-{name}"):
        if candidate in themes:
            return themes[candidate]
    p = Path(name)
    if p.suffix in (".yaml", ".yml") and p.is_file():
        return theme_from_yaml(p.read_text(encoding="utf-8"), str(p))
    return None


# -- metric colours ---------------------------------------------------------------------------------
# One lookup by metric name, so a metric's card sparkline, its small chart and its main-chart curve
# share a hue. The hues are theme variables, so each theme keeps its own contrast; warning and error
# are left out, they mean severity. The key metrics get fixed hues; any other name a stable one
# (crc32, not hash(), which changes per process).
METRIC_VARS = ("primary", "accent", "secondary", "success")
KEY_METRIC_VAR = {"loss": "primary", "eval_loss": "accent", "grad_norm": "secondary", "lr": "success",
                  "learning_rate": "success", "tokens_per_sec": "secondary", "samples_per_sec": "secondary",
                  "reward": "primary", "kl": "secondary", "entropy": "success"}


def metric_var(name: str) -> str:
    """The theme variable (without `$`) that draws metric `name` everywhere on screen."""
    var = KEY_METRIC_VAR.get(name)
    if var is None:
        var = METRIC_VARS[zlib.crc32(name.encode("utf-8")) % len(METRIC_VARS)]
    return var


def rank_var(index: int, taken: str) -> str:
    """The theme variable for the index-th other rank's curve in an overlay: the palette's hues in
    order, skipping `taken` (the selected rank's curve keeps its metric's own colour)."""
    others = [v for v in METRIC_VARS if v != taken]
    return others[index % len(others)]
