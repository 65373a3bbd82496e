"""The rule registry: ours register themselves with `@register`, third parties through the
`trainwatch.rules` entry-point group.

A rule is one module with its class and one `@register("rule.id")` line; its parameters are a
dataclass named by the class's `params` (types only), and its title, severity, fixes and parameter
defaults live in presets/base.yaml. A third-party rule ships the same in its own package: the class
(with a `defaults` mapping in the YAML shape, since base.yaml is ours, and optionally a `params`
dataclass, which the config then checks its defaults and the user's values against) and an entry point
`rule.id = "package.module:Class"`. A plugin that fails to load, or declares parameters YAML cannot
give, is reported once on stderr and skipped; it never takes the other rules down.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import lru_cache
from importlib import import_module
from importlib.metadata import entry_points
from typing import Any, TypeVar

from trainwatch.errors import ConfigError
from trainwatch.paramcheck import param_fields
from trainwatch.rules.base import Rule
from trainwatch.rulespec import check_plugin_defaults

GROUP = "trainwatch.rules"
BUILTIN_MODULES = (
    "loss", "divergence", "plateau", "overfit", "grad", "lr", "fp16", "restart", "resume", "speed", "rl", "traceback",
    "run_end", "early_stop", "stall", "gpu", "ranks", "mfu", "child_exit", "contact",
    "quality_stuck", "quality_flat", "quality_collapse", "quality_overfit", "value_loss", "eval_frozen",
    "loss_rose", "kl_collapse", "loss_zero", "loss_stuck", "quality_worse", "loss_component", "q_values",
)
"""Modules under trainwatch.rules whose classes register themselves when imported."""

_OURS: dict[str, type[Rule]] = {}
R = TypeVar("R", bound=type[Rule])


def register(*ids: str) -> Callable[[R], R]:
    """Class decorator: the rule answers for these ids (one class may serve several, with different
    parameters from the presets)."""
    def deco(cls: R) -> R:
        for rid in ids or (cls.id,):
            _OURS[rid] = cls
        return cls
    return deco


@lru_cache(maxsize=1)
def registry() -> dict[str, type[Rule]]:
    """Every coded rule by id: ours first, then plugins (which cannot replace one of ours)."""
    for module in BUILTIN_MODULES:
        import_module(f"trainwatch.rules.{module}")
    found = dict(_OURS)
    for ep in sorted(entry_points(group=GROUP), key=lambda ep: ep.name):
        if ep.name in found:
            continue
        try:
            cls = ep.load()
        except Exception as exc:  # a broken plugin must not stop the watcher
            print(f"trainwatch: warning: rule plugin {ep.name!r} ({ep.value}) failed to load: {exc}", file=sys.stderr)
            continue
        if not (isinstance(cls, type) and issubclass(cls, Rule)):
            print(f"trainwatch: warning: rule plugin {ep.name!r} is not a Rule subclass; skipped", file=sys.stderr)
            continue
        if cls.params is not None:
            try:
                param_fields(cls.params)
            except (TypeError, NameError) as exc:  # NameError: a type hint that names nothing importable
                print(f"trainwatch: warning: rule plugin {ep.name!r} has unusable params: {exc}; skipped",
                      file=sys.stderr)
                continue
        found[ep.name] = cls
    return found


@lru_cache(maxsize=1)
def plugin_defaults() -> dict[str, dict[str, Any]]:
    """The YAML-shaped defaults (severity, family, title, fixes, parameters) of plugin rules, by id; a
    plugin whose defaults would not load (or miss a parameter its `params` declares) is warned about and
    left out, as one that fails to import is."""
    out: dict[str, dict[str, Any]] = {}
    for rid, cls in registry().items():
        if rid in _OURS:
            continue
        defaults = getattr(cls, "defaults", None)
        if not isinstance(defaults, dict):
            print(f"trainwatch: warning: rule plugin {rid!r} has no `defaults` mapping; skipped", file=sys.stderr)
            continue
        try:
            check_plugin_defaults(rid, defaults, f"{cls.__module__}.{cls.__qualname__}.defaults", cls.params)
        except ConfigError as exc:
            print(f"trainwatch: warning: rule plugin {rid!r} skipped: {exc}", file=sys.stderr)
            continue
        out[rid] = defaults
    return out
