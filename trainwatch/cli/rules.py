"""`trainwatch rules`: the rules and thresholds in force after presets and config files."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from trainwatch import config, paramcheck, runner
from trainwatch.config import RuleSpec


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("rules", help="show the rules and thresholds in force",
                       description="Show every rule with its severity and thresholds after presets and --config.")
    p.add_argument("--preset", default="sft", metavar="NAME", help="sft (default), grpo, ebft, pretrain or vision")
    p.add_argument("--config", action="append", metavar="FILE", help="YAML overrides (repeatable)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--all", action="store_true", help="include disabled rules")
    p.set_defaults(run=run)


def describe(spec: RuleSpec) -> dict[str, Any]:
    d: dict[str, Any] = {"id": spec.id, "enabled": spec.enabled, "severity": spec.severity.label,
                         "family": spec.family, "title": spec.title}
    if spec.is_range:
        d["metric"] = spec.metric
        if spec.above is not None:
            d["above"] = spec.above
        if spec.below is not None:
            d["below"] = spec.below
    if not spec.for_.zero:
        d["for"] = str(spec.for_)
    if not spec.keep_firing_for.zero:
        d["keep_firing_for"] = str(spec.keep_firing_for)
    d.update((k, list(v) if isinstance(v, tuple) else v) for k, v in paramcheck.param_items(spec.params)
             if k != "signature")
    d["fixes"] = list(spec.fixes)
    return d


def settings(spec: RuleSpec) -> dict[str, str]:
    """A rule's settings as `key: value` text, in the presets' order (thresholds, `for`, parameters)."""
    d = describe(spec)
    out = {}
    for k, v in d.items():
        if k in ("id", "enabled", "severity", "family") or k.startswith(("fixes", "title")):
            continue  # (titles and fixes, also those of a direction or case, are text for people, not settings)
        out[k] = ",".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)
    return out


def run(args: argparse.Namespace) -> int:
    cfg = config.load(args.preset, runner.config_files(args.config))
    specs = [s for s in cfg.rules.values() if s.enabled or args.all]
    if args.json:
        rules = []
        for s in specs:
            d = describe(s)
            types = paramcheck.param_types(s.params)
            if types:  # each parameter's declared type, in the declared order (as the values are)
                d["param_types"] = types
            rules.append(d)
        json.dump({"preset": cfg.preset, "files": cfg.files, "rules": rules}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    out = sys.stdout
    out.write(f"preset {cfg.preset}; from {', '.join(cfg.files)}\n\n")
    for s in sorted(specs, key=lambda s: (s.family, s.id)):
        # fixes by case (loss.level's low/high) are text for people, in --json
        shown = ", ".join(f"{k}={v}" for k, v in settings(s).items())
        off = "" if s.enabled else "  (disabled)"
        out.write(f"{s.id:28} {s.severity.label:8} {s.family:7} {s.title}{off}\n")
        if shown:
            out.write(f"{'':28} {shown}\n")
    return 0
