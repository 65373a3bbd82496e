"""Reports a person can send: one self-contained HTML page or a Markdown summary of runs `check` judged.

Nothing here judges anything: the findings are `check`'s own documents, and the curves are read from
each run's engine store (`series.whole_run()`, the min/max buckets the store keeps of the whole run)."""
