"""Rule parameters are typed: each coded rule's dataclass declares names and types, the YAML holds the
values. In every preset the YAML must give exactly the declared parameters, each of its declared type,
and the config must hand the rules instances of those dataclasses."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Any

import pytest

from trainwatch import config, paramcheck
from trainwatch.errors import ConfigError
from trainwatch.rules.base import Rule
from trainwatch.rules.registry import _OURS, registry


def _builtin() -> dict[str, type[Rule]]:
    registry()  # imports every built-in rule module, so each has registered itself
    return dict(_OURS)


def _merged_yaml(preset: str) -> dict[str, Any]:
    """The rules section as base.yaml, base-live.yaml and the preset write it, before any checking."""
    merged: dict[str, Any] = {}
    for name in config._base_files():
        merged = config._merge(merged, config._read_yaml(config._packaged(f"presets/{name}"), name))
    merged = config._merge(merged, config._read_yaml(config.preset_text(preset), preset))
    return merged["rules"]


def _fits(value: Any, kind: Any) -> bool:
    """Exactly the declared type, as our own YAML must write it (`5.0` for a float, a list for a tuple)."""
    if typing.get_origin(kind) is tuple:
        item = typing.get_args(kind)[0]
        return isinstance(value, list) and all(type(v) is item for v in value)
    return type(value) is kind


@pytest.mark.parametrize("preset", config.PRESETS)
def test_every_builtin_rules_yaml_defaults_are_exactly_its_dataclass(preset: str) -> None:
    raw = _merged_yaml(preset)
    problems = []
    for rid, cls in _builtin().items():
        assert rid in raw, f"{rid} is registered but has no YAML"
        given = [k for k in raw[rid] if k not in config.META_KEYS]
        if cls.params is None:
            if given:
                problems.append(f"{rid}: YAML parameters {given} but {cls.__name__} declares none")
            continue
        declared = dict(paramcheck.param_fields(cls.params))
        missing, extra = set(declared) - set(given), set(given) - set(declared)
        if missing or extra:
            problems.append(f"{rid}: missing {sorted(missing)}, extra {sorted(extra)}")
        problems += [f"{rid}.{k}: {raw[rid][k]!r} is not {paramcheck.type_name(t)}" for k, t in declared.items()
                     if k in raw[rid] and not _fits(raw[rid][k], t)]
    assert not problems


@pytest.mark.parametrize("preset", config.PRESETS)
def test_rules_get_instances_of_their_dataclass(preset: str) -> None:
    specs = config.load(preset).rules
    for rid, cls in _builtin().items():
        if cls.params is None:
            assert specs[rid].params == {}, rid
            continue
        params = specs[rid].params
        assert type(params) is cls.params, rid
        for name, kind in paramcheck.param_fields(cls.params):
            value = getattr(params, name)
            assert isinstance(value, tuple if typing.get_origin(kind) is tuple else kind), (rid, name)


def test_the_dataclasses_hold_no_defaults_and_cannot_be_changed() -> None:
    for rid, cls in _builtin().items():
        if cls.params is None:
            continue
        assert cls.params.__dataclass_params__.frozen, rid  # type: ignore[attr-defined]
        with_default = [f.name for f in dataclasses.fields(cls.params)
                        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING]
        assert not with_default, f"{rid}: defaults belong in the YAML, not in {cls.params.__name__}: {with_default}"


def test_user_values_are_converted_once_at_load(tmp_path: Path) -> None:
    f = tmp_path / "tw.yaml"
    f.write_text("rules:\n  loss.spike: {ratio: 3, window: 30.0}\n"
                 "  run.ended_early: {not_fatal: [fp16.overflow]}\n")
    rules = config.load("sft", [f]).rules
    spike = rules["loss.spike"].params
    assert spike.ratio == 3.0 and type(spike.ratio) is float  # an int does for a float
    assert spike.window == 30 and type(spike.window) is int  # a whole float does for an int
    assert rules["run.ended_early"].params.not_fatal == ("fp16.overflow",)


@pytest.mark.parametrize("body, said", [
    ("loss.spike: {window: 2.5}", "rules.loss.spike.window: expected a whole number, got 2.5"),
    ("loss.spike: {ratio: true}", "rules.loss.spike.ratio: expected a number, got True"),
    ("rl.reward_zero: {metric_glob: 3}", "rules.rl.reward_zero.metric_glob: expected a string, got 3"),
    ("run.ended_early: {not_fatal: [1]}", "rules.run.ended_early.not_fatal: expected a list of strings, got [1]"),
    ("grad.nonfinite: {window: 3}", "rules.grad.nonfinite.window: unknown key"),
])
def test_each_wrong_value_names_file_rule_and_parameter(tmp_path: Path, body: str, said: str) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(f"rules:\n  {body}\n")
    with pytest.raises(ConfigError) as exc:
        config.load("sft", [f])
    assert str(exc.value).startswith(f"{f}: {said}")


def test_a_pasted_paragraph_is_cut_short_in_the_error(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("rules:\n  loss.spike: {ratio: '" + "x" * 500 + "'}\n")
    with pytest.raises(ConfigError) as exc:
        config.load("sft", [f])
    assert len(str(exc.value)) < len(str(f)) + 120 and str(exc.value).endswith("...")
