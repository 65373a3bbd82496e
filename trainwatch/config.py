"""Presets and user config: YAML in, validated dataclasses out, errors that name the file and key.

Resolution order: presets/base.yaml, then the chosen preset (sft, grpo, ebft, pretrain), then
./trainwatch.yaml when present, then --config. Later files change any key of earlier ones. A coded
rule's parameters are then checked against its parameter dataclass (trainwatch.paramcheck) and handed
to it typed; an error names the file that last set the key.
"""

from __future__ import annotations

import copy
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from trainwatch import yamltext
from trainwatch.errors import ConfigError
from trainwatch.rules.registry import plugin_defaults, registry

# the types and checks live below the rules (trainwatch.rulespec); callers keep reading them here
from trainwatch.rulespec import META_KEYS as META_KEYS
from trainwatch.rulespec import Config as Config
from trainwatch.rulespec import Duration as Duration
from trainwatch.rulespec import Inhibit as Inhibit
from trainwatch.rulespec import RuleSpec as RuleSpec
from trainwatch.rulespec import _build_inhibit, _build_rule, _Origins
from trainwatch.rulespec import check_plugin_defaults as check_plugin_defaults
from trainwatch.rulespec import parse_duration as parse_duration

PRESETS = ("sft", "grpo", "ebft", "pretrain", "vision")


def _read_yaml(text: str, where: str) -> dict[str, Any]:
    try:
        data = yamltext.load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{where}: not valid YAML{at}: {getattr(exc, 'problem', None) or exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping at the top level, got {type(data).__name__}")
    return data


def _packaged(name: str) -> str:
    return resources.files("trainwatch").joinpath(name).read_text(encoding="utf-8")


def preset_text(name: str) -> str:
    if name not in PRESETS and name != "base":
        raise ConfigError(f"unknown preset {name!r}", hint="known presets: " + ", ".join(PRESETS))
    return _packaged(f"presets/{name}.yaml")


def _base_files() -> list[str]:
    """base.yaml, then the catalogue's other parts (base-*.yaml), which hold more rules' defaults."""
    names = [p.name for p in resources.files("trainwatch").joinpath("presets").iterdir()
             if p.name.startswith("base") and p.name.endswith(".yaml")]
    return sorted(names, key=lambda n: (n != "base.yaml", n))


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def load(preset: str = "sft", user_files: list[Path] | None = None) -> Config:
    """The configuration in force: base, preset, then each user file in order. Every coded rule's
    parameters are checked against its parameter dataclass here, once, and handed over typed."""
    origin = "presets/base.yaml"
    origins = _Origins()
    base: dict[str, Any] = {}
    for name in _base_files():
        part = _read_yaml(_packaged(f"presets/{name}"), f"presets/{name}")
        origins.note(part, f"presets/{name}")
        if isinstance(part.get("inhibit"), list) and isinstance(base.get("inhibit"), list):
            part = dict(part, inhibit=base["inhibit"] + part["inhibit"])  # each part adds its own
        base = _merge(base, part)
    coded = registry()
    for rid, d in plugin_defaults().items():
        if rid not in base.get("rules", {}):
            cls = coded[rid]
            origins.note({"rules": {rid: d}}, f"{cls.__module__}.{cls.__qualname__}.defaults")
            base = _merge(base, {"rules": {rid: d}})
    preset_data = _read_yaml(preset_text(preset), f"presets/{preset}.yaml")
    origins.note(preset_data, f"presets/{preset}.yaml")
    merged = _merge(base, preset_data)
    defaults = {rid: spec for rid, spec in base.get("rules", {}).items()}
    files = [origin, f"presets/{preset}.yaml"]
    for path in user_files or []:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: cannot read config: {getattr(exc, 'strerror', None) or exc}") from None
        data = _read_yaml(text, str(path))
        for key in data:
            if key not in ("rules", "inhibit", "aliases", "directions"):
                raise ConfigError(f"{path}: {key}: unknown key", hint="allowed: rules, inhibit, aliases, directions")
        overrides = data.get("rules", {})
        if not isinstance(overrides, dict):
            raise ConfigError(f"{path}: rules: expected a mapping of rule id to settings")
        origins.note(data, str(path))
        if "aliases" in data and not isinstance(data["aliases"], dict):
            raise ConfigError(f"{path}: aliases: expected a mapping of metric name to canonical name")
        if "directions" in data and (not isinstance(data["directions"], dict) or any(
                str(v).lower() not in ("higher", "lower") for v in data["directions"].values())):
            raise ConfigError(f"{path}: directions: expected a mapping of metric name to higher or lower")
        if "inhibit" in data:
            _build_inhibit(data["inhibit"], str(path))
            data = dict(data)
            data["inhibit"] = merged.get("inhibit", []) + data["inhibit"]
        merged = _merge(merged, data)
        files.append(str(path))
    rules: dict[str, RuleSpec] = {}
    for rid, raw in merged.get("rules", {}).items():
        known = coded.get(str(rid))
        rules[rid] = _build_rule(str(rid), raw, defaults.get(rid), origins, known.params if known else None)
    aliases = {str(k): str(v) for k, v in merged.get("aliases", {}).items()}
    directions = {str(k): str(v).lower() for k, v in merged.get("directions", {}).items()}
    return Config(preset, rules, _build_inhibit(merged.get("inhibit", []), origin), files, aliases, directions)
