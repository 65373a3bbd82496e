"""Only trainwatch/scan/ looks up the native core: every other module goes through the facade
`trainwatch.scan.kernels`, which chooses native or reference for each kernel (issue 24). A module that calls
`native()` or imports `trainwatch._scan` outside scan/ fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "trainwatch"

# the modules outside scan/ allowed to look up the native core themselves: none, the facade does it
STILL_LOOKING_UP: set[str] = set()


def _looks_up_native(tree: ast.AST) -> bool:
    """True when the module imports or calls `native()`, or imports the compiled `trainwatch._scan`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "native":
            return True
        if isinstance(node, ast.Import) and any(a.name == "trainwatch._scan" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom):
            if node.module == "trainwatch._scan":
                return True
            if node.module == "trainwatch" and any(a.name == "_scan" for a in node.names):
                return True
            if node.module == "trainwatch.scan" and any(a.name == "native" for a in node.names):
                return True
    return False


def _lookers() -> set[str]:
    found = set()
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("scan/"):
            continue
        if _looks_up_native(ast.parse(path.read_text(encoding="utf-8"))):
            found.add(rel)
    return found


def test_no_new_module_looks_up_the_native_core() -> None:
    new = _lookers() - STILL_LOOKING_UP
    assert not new, f"go through trainwatch.scan instead of native()/_scan in: {sorted(new)}"


def test_the_list_of_modules_still_looking_up_is_true() -> None:
    gone = STILL_LOOKING_UP - _lookers()
    assert not gone, f"these no longer look up the native core; remove them from STILL_LOOKING_UP: {sorted(gone)}"


def test_the_check_sees_each_way_of_looking_up() -> None:
    for source in ("ext = native()", "from trainwatch import _scan", "import trainwatch._scan",
                   "from trainwatch._scan import jsonl_rows", "from trainwatch.scan import native"):
        assert _looks_up_native(ast.parse(source)), source
    assert not _looks_up_native(ast.parse("k = self.p.onset_scan\nnative = 1\nfrom trainwatch.scan import Chunk"))
