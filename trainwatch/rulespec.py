"""A rule's settings as the config gives them: the typed spec, durations, inhibitions, and the check of one
rule's merged YAML against its parameter dataclass.

Below the rules (they read RuleSpec) and below the loader (trainwatch.config), which merges the files and asks
the rule registry for the coded rules' parameter classes: so neither the rules nor the registry import the
loader, and the loader imports them.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from trainwatch.errors import ConfigError
from trainwatch.model import Severity
from trainwatch.paramcheck import param_fields, shown, typed_params

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
