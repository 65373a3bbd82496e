"""Typed rule parameters: what a rule's parameter dataclass may declare, and YAML values checked and
converted against it. Defaults never live here or in the dataclass: the presets hold them, and
config.py merges the files before asking this module whether the result fits."""

from __future__ import annotations

import typing
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from functools import cache
from typing import Any

from trainwatch.errors import ConfigError

_SCALARS: dict[Any, tuple[str, str, str]] = {
    bool: ("bool", "true or false", "true/false values"), int: ("int", "a whole number", "whole numbers"),
    float: ("float", "a number", "numbers"), str: ("str", "a string", "strings"),
}
"""The types a parameter may be declared as: (name in `rules --json`, one in words, several in words)."""


def type_name(kind: Any) -> str | None:
    """`int`, `float`, `str`, `bool`, or `list[str]` (and the like) for `tuple[str, ...]`; None for a type
    YAML cannot give."""
    if kind in _SCALARS:
        return _SCALARS[kind][0]
    args = typing.get_args(kind)
    if typing.get_origin(kind) is tuple and len(args) == 2 and args[1] is Ellipsis and args[0] in _SCALARS:
        return f"list[{_SCALARS[args[0]][0]}]"
    return None


@cache
def param_fields(cls: type) -> tuple[tuple[str, Any], ...]:
    """A parameter dataclass's fields and their types, in declaration order (the order `trainwatch rules`
    prints). TypeError for a class that cannot be read from YAML, so the registry can skip such a plugin."""
    if not (isinstance(cls, type) and is_dataclass(cls)):
        raise TypeError(f"params {cls!r} is not a dataclass")
    hints = typing.get_type_hints(cls)
    out = []
    for f in fields(cls):
        if type_name(hints[f.name]) is None:
            raise TypeError(f"parameter {f.name!r} is declared {hints[f.name]!r}; "
                            "use bool, int, float, str or tuple[str, ...]")
        out.append((f.name, hints[f.name]))
    return tuple(out)


def param_items(params: Any) -> list[tuple[str, Any]]:
    """A spec's parameters as (name, value), declared order first: a dataclass's fields or a mapping's items."""
    if is_dataclass(params) and not isinstance(params, type):
        return [(f.name, getattr(params, f.name)) for f in fields(params)]
    return list(params.items())


def param_types(params: Any) -> dict[str, str]:
    """Each declared parameter's type by name (empty for a rule whose parameters are an untyped mapping)."""
    if is_dataclass(params) and not isinstance(params, type):
        return {name: type_name(kind) or "?" for name, kind in param_fields(type(params))}
    return {}


def shown(value: Any) -> str:
    """A value for an error line: its repr, cut short (a config value may be a whole pasted paragraph)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _scalar(value: Any, kind: Any) -> Any:
    """`value` as `kind`, or ValueError: an int does for a float and a whole float for an int; a YAML
    true is never a number."""
    if kind is bool:
        if isinstance(value, bool):
            return value
    elif isinstance(value, bool):
        pass
    elif kind is float and isinstance(value, (int, float)):
        return float(value)
    elif kind is int and isinstance(value, int):
        return value
    elif kind is int and isinstance(value, float) and value.is_integer():
        return int(value)
    elif kind is str and isinstance(value, str):
        return value
    raise ValueError(value)


def _convert(value: Any, kind: Any, where: str) -> Any:
    """`value` as the declared `kind` (lists become tuples), or the one error line that says what was wanted."""
    try:
        if typing.get_origin(kind) is not tuple:
            return _scalar(value, kind)
        if isinstance(value, (list, tuple)):
            return tuple(_scalar(v, typing.get_args(kind)[0]) for v in value)
    except ValueError:
        pass
    raise ConfigError(f"{where}: expected {_wanted(kind)}, got {shown(value)}")


def typed_params(cls: type, raw: dict[str, Any], at: Callable[[str], str], home: str) -> Any:
    """The rule's parameter dataclass filled from its merged YAML: every field must have a value there
    (defaults live in YAML, never in the class), each of the declared type."""
    values = {}
    for name, kind in param_fields(cls):
        if name in raw and raw[name] is None:  # `window:` with the value forgotten
            raise ConfigError(f"{at(name)}: missing value (expected {_wanted(kind)})",
                              hint="give it one, or leave the key out to keep the default")
        if name not in raw:
            raise ConfigError(f"{home}.{name}: missing parameter (expected {_wanted(kind)})",
                              hint=f"{cls.__qualname__} declares it; its default belongs with the rule's others")
        values[name] = _convert(raw[name], kind, at(name))
    return cls(**values)


def _wanted(kind: Any) -> str:
    if typing.get_origin(kind) is tuple:
        return f"a list of {_SCALARS[typing.get_args(kind)[0]][2]}"
    return str(_SCALARS[kind][1])
