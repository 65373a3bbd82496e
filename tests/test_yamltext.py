"""The fast YAML loader reads every bundled file exactly as PyYAML's pure-Python safe loader does, and
fails on bad text with the same error type (the config loader turns it into one line)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from trainwatch import yamltext

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = sorted([*(ROOT / "trainwatch").rglob("*.yaml"), *(ROOT / "themes").glob("*.yaml")])


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: str(p.relative_to(ROOT)))
def test_bundled_yaml_reads_the_same(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert yamltext.load(text) == yaml.safe_load(text)


@pytest.mark.parametrize("text", ["a: [1, 2", "a: !!python/object:os.system x", "\tkey: 1"])
def test_bad_or_unsafe_text_raises_yaml_error(text: str) -> None:
    with pytest.raises(yaml.YAMLError):
        yamltext.load(text)
