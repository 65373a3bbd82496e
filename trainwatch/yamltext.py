"""YAML text to Python values, safely, through libyaml when PyYAML was built with it.

Every command reads the presets, signatures and name tables at start-up; the pure-Python loader takes
about 50 ms for them, libyaml's a tenth of that, with the same values (a test loads every bundled file
both ways). Both loaders raise `yaml.YAMLError` on bad text.
"""

from __future__ import annotations

from typing import Any

import yaml

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(text: str) -> Any:
    return yaml.load(text, Loader=_LOADER)
