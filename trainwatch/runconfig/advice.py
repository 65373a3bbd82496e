"""The framework's own advice in the log: a warning that names the setting to change.

Trainers often say what to do (`please use activation_checkpointing in fsdp_config`, `Add
"activation_checkpointing": true to your fsdp_config`). Such a line is a lead: it knows the run better than
a generic list. It is kept when it recommends a setting of the fact catalogue (a verb of advice, then the
setting's name), with the value it advises when it gives one; whether it applies to a finding is the
fitter's call (trainwatch.runconfig.fit).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from trainwatch.runconfig import facts as catalogue
from trainwatch.runconfig.scan import Occurrence

MAX_TEXT = 240  # characters of the advice kept (a line may run on)
MAX_ADVICE = 8
_VERB = re.compile(r"(?i)\b(?:consider (?:using|setting|enabling)|please (?:use|set|enable)|"
                   r"we recommend(?: using| setting)?|recommended to (?:use|set|enable)|"
                   r"you (?:should|can|may want to) (?:use|set|enable)|"
                   r"try (?:setting|using|enabling)|add|set|enable)\b")
_PREFIX = re.compile(r"^(?:\s*\[[^\]]{0,80}\]:?)+\s*|^\s*\S*(?:Warning|WARNING|warn)\S*:\s*")
_NEAR = 80  # the setting must follow the verb within this many characters
_BY_KEY = {k: spec for spec in catalogue.SPECS for k in spec.keys}
_ADVISED = re.compile(r"""["'`]?\s*[:=]\s*["'`]?([\w.\-]+)""")


@dataclass(frozen=True)
class Advice:
    """One recommendation: the fact it is about, the value it advises (None: just "use it"), its words."""

    fact: str
    key: str
    value: Any
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"fact": self.fact, "key": self.key, "value": self.value, "text": self.text}


def find_advice(text: str, found: list[Occurrence]) -> list[Advice]:
    """Each fact's first piece of advice in `text`, in the order first given: a setting's name (among
    the keys `found`, see trainwatch.runconfig.scan.occurrences) with a verb of advice shortly before it
    on its line."""
    out: dict[str, Advice] = {}
    for m in found:
        spec = _BY_KEY.get(m.key)
        if spec is None or spec.name in out:
            continue
        lo = text.rfind("\n", 0, m.start) + 1
        if _VERB.search(text, max(lo, m.start - _NEAR), m.start) is None:
            continue
        hi = text.find("\n", m.end)
        line = text[lo:hi if hi >= 0 else len(text)]
        given = _ADVISED.match(text, m.end)
        value = spec.parse(given.group(1)) if given else None
        if value is None and spec.parse is catalogue.as_bool:
            value = True  # "use activation_checkpointing": turn it on
        out[spec.name] = Advice(spec.name, m.key, value, _said(line))
        if len(out) >= MAX_ADVICE:
            break
    return list(out.values())


def _said(line: str) -> str:
    t = _PREFIX.sub("", line).strip()
    return t if len(t) <= MAX_TEXT else t[:MAX_TEXT - 3].rstrip() + "..."
