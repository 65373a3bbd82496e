"""The import contracts of pyproject.toml ([tool.importlinter]) hold: rooms import only the layers below them,
the core and the sinks never import the dashboard, and no two rooms (nor two modules of one package) import
each other round a circle. A change that adds a circle or an import back up a layer fails here."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT = ("import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True, no_logo=True))")


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    """import-linter over the package under `root`, in a process of its own (the graph is built afresh)."""
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run([sys.executable, "-c", LINT, str(root / "pyproject.toml")], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


def test_import_contracts_hold() -> None:
    out = _lint(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_new_circle_breaks_the_contracts(tmp_path: Path) -> None:
    """The contracts see a circle, even through a lazy import: a copy of the package whose model imports the
    engine inside a function fails them, naming the import."""
    shutil.copytree(ROOT / "trainwatch", tmp_path / "trainwatch",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.yaml", "*.tcss", "assets", "demo"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    model = tmp_path / "trainwatch" / "model.py"
    model.write_text(model.read_text() + "\n\ndef _later() -> None:\n    from trainwatch import engine  # noqa: F401\n")
    out = _lint(tmp_path)
    assert out.returncode != 0, out.stdout
    assert "trainwatch.model -> trainwatch.engine" in out.stdout
