"""The README and docs/ tell the truth: the README's commands run, every rule, format and command is
documented, the rules table is what the presets say, and every link leads to a file and a heading."""

from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from trainwatch import adapters
from trainwatch.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text(encoding="utf-8")
TEST_COMMAND = "pip install -e '.[test]' && python -m pytest -q"


def _doc(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def _rules_table() -> ModuleType:
    """docs/rules_table.py, the script that makes the table (docs/ is not a package)."""
    spec = importlib.util.spec_from_file_location("rules_table", DOCS / "rules_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_first_two_commands_install_then_run() -> None:
    block = README.split("```bash", 1)[1].split("```", 1)[0].strip().splitlines()
    assert block[0].startswith("pip install . && trainwatch demo")
    assert block[1].startswith(TEST_COMMAND)


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci/run").read_text(encoding="utf-8")
    assert TEST_COMMAND in ci


def test_readme_is_a_front_page() -> None:
    """The README stays short; the reference lives under docs/."""
    assert len(README.splitlines()) <= 350


def test_every_command_is_in_the_readme() -> None:
    missing = [name for name in COMMANDS if f"`trainwatch {name}" not in README]
    assert not missing, f"commands missing from the README's table: {missing}"


def test_the_readme_check_commands_run() -> None:
    """Each `trainwatch check` line of the README's usage block names a bundled example and reads it:
    a verdict (0, 1 or 2), never 3 (nothing read, a missing file, bad usage)."""
    usage = README.split("## Using it", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    lines = [ln.split("#", 1)[0].strip() for ln in usage.splitlines() if ln.startswith("trainwatch check ")]
    assert lines, "the README's usage block has no `trainwatch check` line"
    for line in lines:
        argv = shlex.split(line)[1:]
        r = subprocess.run([sys.executable, "-m", "trainwatch", *argv], cwd=ROOT, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode in (0, 1, 2), f"{line!r} exited {r.returncode}: {r.stderr or r.stdout}"


def test_every_format_is_in_the_formats_table() -> None:
    formats = _doc("formats.md")
    missing = [name for name in adapters.registry() if f"| `{name}` |" not in formats]
    assert not missing, f"formats missing from docs/formats.md: {missing}"


def test_the_rules_table_is_what_the_presets_say() -> None:
    """docs/rules.md's table is exactly what docs/rules_table.py makes from the registry and presets
    (every rule, its family, severity, title, sft defaults and other presets' changes)."""
    rt = _rules_table()
    assert rt.embedded(_doc("rules.md")) == rt.table(), (
        "docs/rules.md's rules table is out of date: run `python docs/rules_table.py --write`")


def test_the_rules_table_lists_every_rule() -> None:
    """The generated table itself has a row per rule the presets know (the script cannot drop one)."""
    from trainwatch import config

    table = _rules_table().table()
    missing = [rid for rid in config.load("sft").rules if f"| `{rid}` |" not in table]
    assert not missing


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # a `#` comment in a code block is no heading
    return {_slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.M)}


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def test_every_link_resolves() -> None:
    """Relative links and images in the README and docs/ lead to files that exist, and to a heading there."""
    broken = []
    for page in _pages():
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # https: and mailto: links leave the repository
            file, _, anchor = target.partition("#")
            dest = (page.parent / file).resolve() if file else page
            if not dest.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, broken


def test_every_docs_page_is_linked_from_the_readme() -> None:
    orphans = [p.name for p in sorted(DOCS.glob("*.md")) if f"(docs/{p.name})" not in README]
    assert not orphans, f"docs pages the README does not link: {orphans}"
