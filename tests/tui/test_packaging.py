"""The wheel maturin builds must hold every package and data file, and themes must load by name."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from trainwatch.tui.themes import builtin_themes, resolve

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "trainwatch"
# Files the wheel must carry besides Python modules (the README's data files, the bundled themes, and the
# report page's assets: uPlot with its license, the page script and styles).
DATA_GLOBS = ("presets/*.yaml", "data/*.yaml", "data/demo/*.log", "tui/*.tcss", "themes/*.yaml", "report/assets/*")


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """Names in a wheel built from this checkout, the way `pip install .` builds it."""
    if shutil.which("cargo") is None:
        pytest.skip("no Rust toolchain (cargo) here: the wheel cannot be built")
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(ROOT), "-w", str(out)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = out.glob("trainwatch-*.whl")
    with zipfile.ZipFile(wheel) as z:
        return set(z.namelist())


def test_wheel_holds_every_package_and_module(wheel_names: set[str]) -> None:
    modules = {p.relative_to(ROOT).as_posix() for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    assert "trainwatch/themes/__init__.py" in modules
    missing = sorted(modules - wheel_names)
    assert not missing, f"not in the wheel: {missing}"


def test_wheel_holds_the_data_files(wheel_names: set[str]) -> None:
    for pattern in DATA_GLOBS:
        files = {p.relative_to(ROOT).as_posix() for p in PACKAGE.glob(pattern)}
        assert files, f"no files match trainwatch/{pattern} in the checkout"
        missing = sorted(files - wheel_names)
        assert not missing, f"not in the wheel: {missing}"


def test_wheel_holds_the_native_scanner(wheel_names: set[str]) -> None:
    assert any(n.startswith("trainwatch/_scan.") and n.endswith((".so", ".pyd")) for n in wheel_names)


def test_top_level_themes_folder_is_the_packaged_one() -> None:
    # themes/ stays the user-facing folder; it links to the package folder the wheel ships.
    assert (ROOT / "themes").resolve() == (PACKAGE / "themes").resolve()


def test_three_bundled_themes_load_by_name() -> None:
    themes = builtin_themes()
    assert {"trainwatch-dark", "trainwatch-light", "trainwatch-contrast"} <= set(themes)
    assert resolve("light", themes).dark is False  # type: ignore[union-attr]
    assert resolve(None, themes).name == "trainwatch-dark"  # type: ignore[union-attr]
    assert resolve("missing", themes) is None


def test_demo_log_is_package_data() -> None:
    from trainwatch.cli.demo import demo_lines

    assert any("'loss'" in line for line in demo_lines())
