"""Presets and user config: YAML in, validated dataclasses out, errors that name the file and key.

Resolution order: presets/base.yaml, then the chosen preset (sft, grpo, ebft, pretrain), then
./trainwatch.yaml when present, then --config. Later files change any key of earlier ones. A coded
rule's parameters are then checked against its parameter dataclass (trainwatch.paramcheck) and handed
to it typed; an error names the file that last set the key.
"""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from trainwatch import yamltext

from trainwatch.errors import ConfigError
from trainwatch.model import Severity
from trainwatch.paramcheck import param_fields, shown, typed_params

PRESETS = ("sft", "grpo", "ebft", "pretrain", "vision")
META_KEYS = {"enabled", "severity", "family", "title", "fixes", "for", "keep_firing_for", "metric", "above",
             "below", "summary", "kind"}
FAMILIES = ("loss", "oom", "speed", "hang", "resume", "rl", "gpu", "data", "run")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|secs|seconds?|m|min|minutes?|h|hours?|steps?)?\s*$")
_UNIT_S = {"s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1, "m": 60, "min": 60, "minute": 60,
           "minutes": 60, "h": 3600, "hour": 3600, "hours": 3600}


@dataclass(frozen=True)
class Duration:
    """Prometheus's `for`: a number of logged steps, or seconds (`30s`, `5m`)."""

    steps: int = 0
    seconds: float = 0.0

    @property
    def zero(self) -> bool:
        return not self.steps and not self.seconds

    def __str__(self) -> str:
        if self.seconds:
            return f"{self.seconds:g}s"
        return f"{self.steps} steps" if self.steps else "0"


@dataclass
class RuleSpec:
    """One rule as the presets and config define it."""

    id: str
    severity: Severity
    family: str
    title: str
    fixes: tuple[str, ...] = ()
    enabled: bool = True
    for_: Duration = Duration()
    keep_firing_for: Duration = Duration()
    metric: str = ""  # set for range rules
    above: float | None = None
    below: float | None = None
    summary: str = ""
    params: Any = field(default_factory=dict)
    """An instance of the rule's parameter dataclass (`Rule.params`), or, for a rule that declares none,
    a mapping of the YAML's values."""

    @property
    def is_range(self) -> bool:
        return bool(self.metric)


@dataclass(frozen=True)
class Inhibit:
    """Alertmanager's inhibit rule: while `source` fires, `targets` with equal labels stay quiet."""

    source: str
    targets: tuple[str, ...]
    equal: tuple[str, ...] = ("source",)


@dataclass
class Config:
    preset: str
    rules: dict[str, RuleSpec]
    inhibit: list[Inhibit]
    files: list[str] = field(default_factory=list)  # where it came from, for `trainwatch rules`
    aliases: dict[str, str] = field(default_factory=dict)
    directions: dict[str, str] = field(default_factory=dict)  # metric name -> higher|lower (data/quality.yaml)


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


def parse_duration(value: Any, where: str) -> Duration:
    if isinstance(value, bool):
        raise ConfigError(f"{where}: expected a number of steps or a time like '30s', got {value!r}")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ConfigError(f"{where}: must not be negative")
        return Duration(steps=int(value))
    if isinstance(value, str):
        m = _DURATION.match(value)
        if m:
            n, unit = float(m.group(1)), (m.group(2) or "steps")
            if unit.startswith("step"):
                return Duration(steps=int(n))
            return Duration(seconds=n * _UNIT_S[unit])
    raise ConfigError(f"{where}: expected a number of steps or a time like '30s' or '5m', got {value!r}")


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where}: expected a number, got {value!r}")
    return float(value)


def check_plugin_defaults(rid: str, defaults: dict[str, Any], where: str, params: type | None) -> None:
    """A third-party rule's `defaults` checked as our YAML is (and against its `params` dataclass when it
    declares one); ConfigError, naming `where`, when they would not load."""
    origins = _Origins()
    origins.note({"rules": {rid: defaults}}, where)
    _build_rule(rid, defaults, defaults, origins, params)


@dataclass
class _Origins:
    """Which file last set each rule's keys, so that an error names the file to fix."""

    keys: dict[tuple[str, str], str] = field(default_factory=dict)
    last: dict[str, str] = field(default_factory=dict)  # the last file that names the rule
    first: dict[str, str] = field(default_factory=dict)  # the first: where its defaults are

    def note(self, data: dict[str, Any], where: str) -> None:
        rules = data.get("rules")
        if not isinstance(rules, dict):
            return
        for rid, body in rules.items():
            self.first.setdefault(str(rid), where)
            self.last[str(rid)] = where
            for key in body if isinstance(body, dict) else ():
                self.keys[(str(rid), str(key))] = where

    def of(self, rid: str, key: str = "") -> str:
        return self.keys.get((rid, key)) or self.last.get(rid, "presets/base.yaml")

    def home(self, rid: str) -> str:
        return self.first.get(rid, "presets/base.yaml")


def _build_rule(rid: str, raw: Any, defaults: dict[str, Any] | None, origins: _Origins,
                params: type | None = None) -> RuleSpec:
    """One rule's spec from its merged YAML; `params` is the rule's parameter dataclass, if it has one."""
    where = f"{origins.of(rid)}: rules.{rid}"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping, got {type(raw).__name__}")

    def at(key: str) -> str:
        return f"{origins.of(rid, key)}: rules.{rid}.{key}"

    is_range = "metric" in raw
    if defaults is None and not is_range:
        raise ConfigError(f"{where}: unknown rule", hint="a new rule needs 'metric' and 'above' or 'below'")
    # a list, not a set: parameters keep the declared (or the YAML's) order, so `trainwatch rules` prints
    # the same text on every run whatever the hash seed
    known_params = ([name for name, _ in param_fields(params)] if params is not None
                    else [k for k in (defaults or {}) if k not in META_KEYS])
    for key in raw:
        if key not in META_KEYS and key not in known_params:
            raise ConfigError(f"{at(key)}: unknown key", hint=_allowed(str(key), known_params))
    try:
        severity = Severity.parse(str(raw.get("severity", "warning")))
    except ValueError as exc:
        raise ConfigError(f"{at('severity')}: {exc}") from None
    family = raw.get("family", "loss")
    if family not in FAMILIES:
        raise ConfigError(f"{at('family')}: unknown family {family!r}", hint="one of " + ", ".join(FAMILIES))
    fixes = raw.get("fixes", [])
    if not isinstance(fixes, list) or not all(isinstance(f, str) for f in fixes):
        raise ConfigError(f"{at('fixes')}: expected a list of strings")
    enabled = raw.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError(f"{at('enabled')}: expected true or false, got {shown(enabled)}")
    if params is not None:
        typed = typed_params(params, raw, at, f"{origins.home(rid)}: rules.{rid}")
    else:
        typed = _untyped_params(known_params, raw, defaults or {}, at)
    spec = RuleSpec(
        id=rid, severity=severity, family=family, title=str(raw.get("title", rid)), fixes=tuple(fixes),
        enabled=enabled, summary=str(raw.get("summary", "")), params=typed,
        for_=parse_duration(raw.get("for", 0), at("for")),
        keep_firing_for=parse_duration(raw.get("keep_firing_for", 0), at("keep_firing_for")),
    )
    if is_range:
        metric = raw.get("metric")
        if not isinstance(metric, str) or not metric:
            raise ConfigError(f"{at('metric')}: expected a metric name")
        spec.metric = metric
        spec.above = _number(raw["above"], at("above")) if raw.get("above") is not None else None
        spec.below = _number(raw["below"], at("below")) if raw.get("below") is not None else None
        if spec.above is None and spec.below is None:
            raise ConfigError(f"{where}: a range rule needs 'above' or 'below'")
    return spec


def _allowed(key: str, params: list[str]) -> str:
    """The hint for an unknown key: the nearest known name (a typo, most often) and the whole list."""
    close = difflib.get_close_matches(key, params + sorted(META_KEYS), n=1, cutoff=0.75)
    listed = "parameters: " + (", ".join(params) if params else "none")
    return (f"did you mean {close[0]!r}? " if close else "") + listed + "; settings: " + ", ".join(sorted(META_KEYS))


def _untyped_params(names: list[str], raw: dict[str, Any], defaults: dict[str, Any],
                    at: Callable[[str], str]) -> dict[str, Any]:
    """A rule without a parameter dataclass (a third party's, say): each value of the kind of its default."""
    params: dict[str, Any] = {}
    for k in names:
        v = raw.get(k)
        dv = defaults.get(k)
        if isinstance(dv, (int, float)) and not isinstance(dv, bool):
            v = _number(v, at(k))
            if isinstance(dv, int) and float(v).is_integer():
                v = int(v)
        elif isinstance(dv, bool) and not isinstance(v, bool):
            raise ConfigError(f"{at(k)}: expected true or false, got {shown(v)}")
        elif isinstance(dv, list) and not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
            raise ConfigError(f"{at(k)}: expected a list of strings")
        params[k] = v
    return params


def _build_inhibit(raw: Any, origin: str) -> list[Inhibit]:
    if not isinstance(raw, list):
        raise ConfigError(f"{origin}: inhibit: expected a list")
    out = []
    for i, item in enumerate(raw):
        where = f"{origin}: inhibit[{i}]"
        if not isinstance(item, dict) or "source" not in item or "targets" not in item:
            raise ConfigError(f"{where}: expected a mapping with 'source' and 'targets'")
        targets = item["targets"]
        if not isinstance(targets, list):
            raise ConfigError(f"{where}.targets: expected a list of rule ids")
        out.append(Inhibit(str(item["source"]), tuple(map(str, targets)), tuple(item.get("equal", ["source"]))))
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
    from trainwatch.rules.registry import plugin_defaults, registry  # here: the rules import this module

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
