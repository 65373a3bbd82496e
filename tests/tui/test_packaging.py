"""The wheel's explicit package list must cover every package, and themes must load by name."""

from __future__ import annotations

import tomllib
from pathlib import Path

from trainwatch.tui.themes import builtin_themes, resolve

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_is_listed_in_pyproject() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.relative_to(ROOT).parts[:-1]) for p in (ROOT / "trainwatch").rglob("__init__.py")
             if "__pycache__" not in p.parts}
    assert found <= listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"
    assert "trainwatch.themes" in listed


def test_three_bundled_themes_load_by_name() -> None:
    themes = builtin_themes()
    assert {"trainwatch-dark", "trainwatch-light", "trainwatch-contrast"} <= set(themes)
    assert resolve("light", themes).dark is False  # type: ignore[union-attr]
    assert resolve(None, themes).name == "trainwatch-dark"  # type: ignore[union-attr]
    assert resolve("missing", themes) is None


def test_demo_log_is_package_data() -> None:
    from trainwatch.cli.demo import demo_lines

    assert any("'loss'" in line for line in demo_lines())
