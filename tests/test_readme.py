"""The README tells the truth: every rule and format it must list is there, and its commands exist."""

from __future__ import annotations

from pathlib import Path

from trainwatch import adapters, config
from trainwatch.cli import COMMANDS

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def test_every_rule_is_in_the_rules_table() -> None:
    missing = [rid for rid in config.load("sft").rules if f"| `{rid}` |" not in README]
    assert not missing, f"rules missing from README: {missing}"


def test_every_format_is_in_the_formats_table() -> None:
    missing = [name for name in adapters.registry() if f"| `{name}` |" not in README]
    assert not missing


def test_first_two_commands_install_then_run() -> None:
    block = README.split("```bash", 1)[1].split("```", 1)[0].strip().splitlines()
    assert block[0].startswith("pip install . && trainwatch demo")
    assert block[1].startswith("pip install -e '.[test]' && python -m pytest -q")


def test_ci_runs_the_readme_test_command() -> None:
    ci = (Path(__file__).resolve().parents[1] / ".ci/run").read_text(encoding="utf-8")
    assert "pip install -e '.[test]' && python -m pytest -q" in ci


def test_every_command_is_documented() -> None:
    for name in COMMANDS:
        assert f"trainwatch {name}" in README


def test_rules_table_settings_are_the_presets() -> None:
    """Each row's severity, sft settings and other presets' changes are what the presets say."""
    import re

    from trainwatch.cli.rules import table_cells

    rows = {m.group(1): (m.group(2).strip(), m.group(3).strip(), m.group(4).strip())
            for m in re.finditer(r"^\| `([\w.]+)` \| \w+ \| ([^|]*) \| [^|]* \| ([^|]*) \| ([^|]*) \|$", README, re.M)}
    wrong = {rid: (rows[rid], table_cells(rid)) for rid in config.load("sft").rules
             if rid in rows and rows[rid] != table_cells(rid)}
    assert not wrong, f"README rules table out of date: {wrong}"
