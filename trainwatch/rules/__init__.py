"""Rules built from the config: coded rules by id (trainwatch.rules.registry), range rules from YAML alone.

A new coded rule is one module with a Rule subclass marked `@register("its.id")` whose `params` names
its parameter dataclass (types only), its module named in registry.BUILTIN_MODULES, and its defaults,
title and fixes in presets/base.yaml.
"""

from __future__ import annotations

from trainwatch.rules.base import Rule
from trainwatch.rules.range import RangeRule
from trainwatch.rulespec import Config, RuleSpec


def coded_class(rule_id: str) -> type[Rule] | None:
    """The class that answers for a coded rule id: ours (registered with @register) or a plugin's."""
    from trainwatch.rules.registry import registry  # here: the rule modules import this package

    return registry().get(rule_id)


def build_rule(spec: RuleSpec) -> Rule | None:
    if spec.is_range:
        return RangeRule(spec)
    cls = coded_class(spec.id)
    if cls is not None:
        return cls(spec)
    if spec.params.get("signature") or spec.id in _signature_ids():
        from trainwatch.rules.signature import SignatureRule

        return SignatureRule(spec)
    return None


def _signature_ids() -> set[str]:
    try:
        from trainwatch.adapters.signatures import signature_ids
    except ImportError:  # the scanner is optional for rules; without it no id is a signature
        return set()
    return signature_ids()


def build_rules(config: Config) -> list[Rule]:
    rules = []
    for spec in config.rules.values():
        if not spec.enabled:
            continue
        rule = build_rule(spec)
        if rule is not None:
            rules.append(rule)
    return rules
