"""A metric report printed as one JSON object among a console's lines.

StyleGAN2-ADA and StyleGAN3 print each evaluation of a snapshot as
`{"results": {"fid50k_full": 58.3}, "metric": "fid50k_full", ..., "snapshot_pkl": "network-snapshot-001360.pkl"}`
(the line their metric-*.jsonl files hold) between their `tick N kimg K ...` progress lines. Those runs print
no loss: the FID in these lines is the only word on how good the model is, so a reader that skips them
sees a run with nothing to judge. The results are measured on the snapshot just written, so they belong to
the last step the console printed.
"""

from __future__ import annotations

import json

MARK = '"results"'
MAX_RESULTS = 64  # a report holds a few metrics; a bigger `results` dict is some other document


def report_results(text: str) -> list[tuple[str, float]] | None:
    """The (metric, value) pairs of a one-line report whose `results` is a dict of numbers, or None."""
    if MARK not in text or text[-1:] != "}":
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    results = obj.get("results") if isinstance(obj, dict) else None
    if not isinstance(results, dict) or not 0 < len(results) <= MAX_RESULTS:
        return None
    pairs = [(str(k), float(v)) for k, v in results.items()
             if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return pairs if len(pairs) == len(results) else None  # (a dict of lists or strings: not a metric report)
