"""The rules table of docs/rules.md, made from the rule registry and the presets, so it cannot drift.

    python docs/rules_table.py            # print the table
    python docs/rules_table.py --write    # put it into docs/rules.md, between its two markers

tests/test_readme.py fails when the table in docs/rules.md is not what this prints.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from trainwatch import config
from trainwatch.cli.rules import settings
from trainwatch.config import Config

RULES_MD = Path(__file__).resolve().parent / "rules.md"
BEGIN = "<!-- rules table: made by docs/rules_table.py --write; edit the presets, not this table -->"
END = "<!-- end of rules table -->"
HEADER = ("| id | family | severity | what it means | defaults (sft) | other presets |\n"
          "|---|---|---|---|---|---|\n")


def _cell(text: str) -> str:
    """A table cell: a `|` inside it would end the cell."""
    return text.replace("|", "\\|")


def cells(rule_id: str, presets: dict[str, Config]) -> tuple[str, str, str]:
    """One rule's severity under sft (`(off)` when sft disables it), its settings under sft, and what each
    other preset changes (`off`, `on`, `key=value`)."""
    base = presets["sft"].rules[rule_id]
    mine = settings(base)
    severity = base.severity.label + ("" if base.enabled else " (off)")
    changes = []
    for name, cfg in presets.items():
        other = cfg.rules.get(rule_id)
        if name == "sft" or other is None:
            continue
        if other.enabled != base.enabled:
            changes.append(f"{name}: {'on' if other.enabled else 'off'}")
            if not other.enabled:
                continue
        diff = [f"{k}={v}" for k, v in settings(other).items() if mine.get(k) != v]
        if other.severity != base.severity:
            diff.insert(0, other.severity.label)
        if diff:
            changes.append(f"{name}: " + ", ".join(diff))
    return severity, ", ".join(f"{k}={v}" for k, v in mine.items()), "; ".join(changes)


def table() -> str:
    """Every rule the presets know, by family then id, with its sft defaults and the other presets' changes."""
    presets = {name: config.load(name) for name in config.PRESETS}
    rules = presets["sft"].rules
    rows = []
    for rid in sorted(rules, key=lambda r: (rules[r].family, r)):
        spec = rules[rid]
        severity, defaults, others = cells(rid, presets)
        row = [f"`{rid}`", spec.family, severity, spec.title, defaults, others]
        rows.append("| " + " | ".join(_cell(c) for c in row) + " |\n")
    return HEADER + "".join(rows)


def embedded(text: str) -> str:
    """The table as docs/rules.md holds it now, between the markers."""
    start = text.index(BEGIN) + len(BEGIN)
    return text[start:text.index(END, start)].strip("\n") + "\n"


def write(path: Path = RULES_MD) -> None:
    text = path.read_text(encoding="utf-8")
    start = text.index(BEGIN) + len(BEGIN)
    stop = text.index(END, start)
    path.write_text(text[:start] + "\n" + table() + text[stop:], encoding="utf-8")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--write", action="store_true", help=f"replace the table in {RULES_MD}")
    if p.parse_args().write:
        write()
    else:
        sys.stdout.write(table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
