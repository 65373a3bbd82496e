"""An example format plugin: one Adapter subclass and one entry point, nothing in trainwatch changes."""

from __future__ import annotations

import re
from collections.abc import Iterable

from trainwatch.adapters.base import Adapter, to_float
from trainwatch.model import Record, Sample

_FIELD = re.compile(r"\|\s*([a-z_]+)\s+([-+0-9.eE]+|nan|inf)\s*(?=\||$)")


class FairseqAdapter(Adapter):
    name = "fairseq"
    description = "fairseq legacy console lines with '|'-separated fields"
    example = "| epoch 001 | loss 7.12 | ppl 139.1 | wps 2150 | lr 0.0005 | gnorm 1.3 | num_updates 100"

    @classmethod
    def score(cls, head: str, path: str) -> float:
        lines = [ln for ln in head.splitlines()[:200] if ln.startswith("| epoch")]
        return 0.9 if len(lines) >= 1 else 0.0

    def parse(self, line: str, lineno: int) -> Iterable[Record]:
        if not line.startswith("| epoch"):
            return ()
        fields = {k: to_float(v) for k, v in _FIELD.findall(line)}
        step = fields.pop("num_updates", None)
        return [Sample(k, v, step=int(step) if step is not None else None, source=self.source, line=lineno)
                for k, v in fields.items() if v is not None and k != "epoch"]
