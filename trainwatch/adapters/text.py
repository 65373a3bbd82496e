"""Any text log with no metrics we know, e.g. a launcher's output: error signatures and tracebacks only.

It scores just over the threshold when the detection sample holds a traceback or a known error, so
that `check DIR` reports the crash in `torchrun.log` beside the rank logs; and it is the fallback for
any text file no adapter recognises (runner.open_source), so that a crash is never lost because its
metrics are in a format we do not read. The scanning itself is done for every line format by the
pipeline; this adapter only adds no metrics of its own.
"""

from __future__ import annotations

from trainwatch.adapters.base import Adapter
from trainwatch.adapters.signatures import SignatureScanner

SCORE = 0.31  # just over the detection threshold: any adapter that reads metrics wins over this one


class TextAdapter(Adapter):
    name = "text"
    description = "Any other text log: no metrics, only error signatures and whole tracebacks"
    example = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.22 GiB."

    @classmethod
    def score(cls, head: str, path: str) -> float:
        scanner = SignatureScanner(path)
        found = False
        for n, line in enumerate(head.split("\n"), 1):
            if scanner.feed(line, n):
                found = True
                break
        return SCORE if found or scanner.finish() else 0.0
