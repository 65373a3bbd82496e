"""The headless core must never load Textual: the daemon does not pay for the UI, and the layering holds."""

from __future__ import annotations

import subprocess
import sys

CORE = [
    "trainwatch.engine", "trainwatch.store", "trainwatch.alerts", "trainwatch.config", "trainwatch.runner",
    "trainwatch.adapters", "trainwatch.adapters.pipeline", "trainwatch.rules", "trainwatch.cli",
    "trainwatch.cli.check", "trainwatch.sinks.report", "trainwatch.cli.report", "trainwatch.report.build",
]


def test_core_does_not_import_textual() -> None:
    code = (
        "import sys, importlib\n"
        f"for m in {CORE!r}: importlib.import_module(m)\n"
        "from trainwatch import adapters, config, rules\n"
        "for cls in adapters.registry().values(): pass\n"
        "rules.build_rules(config.load('sft'))\n"
        "bad = sorted(m for m in sys.modules\n"
        "             if m == 'textual' or m.startswith('textual.') or m.startswith('trainwatch.tui'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"the core loaded UI modules: {out.stdout.strip()}"


def test_no_textual_import_outside_tui() -> None:
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[1] / "trainwatch"
    offenders = []
    for path in root.rglob("*.py"):
        rel = path.relative_to(root)
        if rel.parts[0] == "tui" or rel.as_posix() == "cli/demo.py":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            s = line.strip()
            if s.startswith(("import textual", "from textual")):
                offenders.append(f"{rel}:{n}")
    assert not offenders, offenders
