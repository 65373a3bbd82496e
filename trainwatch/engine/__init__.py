"""The engine: records in, alerts out. Plain synchronous Python, no threads, no UI, no wall clock.

Sources and adapters hand it batches (`feed_batch`: a block of a log's backlog, a few live lines; `feed`
and `feed_all` make batches of records); a live driver also calls `tick` on its timer so time-based
rules (the stall detector) can judge silence. Between two events that rules answer, a batch's rows
are settled and stored a stretch at a time and judged by the array rules together; row rules see
only the rows their gate lets through, each with the store as it was at that row. Time comes from
the injected clock, so tests run hours of simulated time instantly.

The Engine is built in layers, each a module that adds methods to the one below:
- `state`: everything the engine holds (the store, the sources, the alert book, the routing tables);
- `metrics`: metric names to ids and their rules, and the caps on names;
- `progress`: each source's step, phase and clock over a stretch of rows, and what events tell;
- `dispatch`: the rules asked (row, array, event, tick, end), their answers recorded in the book;
- `rounds`: the scheduler that cuts batches into stretches and rounds;
- `core`: the Engine's calls (feed, settle, alerts, worst).
"""

from trainwatch.engine.core import Engine
from trainwatch.engine.dispatch import ANY
from trainwatch.engine.metrics import MAX_SERIES, MAX_SERIES_PER_SOURCE
from trainwatch.engine.rounds import ARRAY_FLUSH, WAIT_ROWS
from trainwatch.engine.state import ADAMW_TRAINERS, Listener

__all__ = ["ADAMW_TRAINERS", "ANY", "ARRAY_FLUSH", "MAX_SERIES", "MAX_SERIES_PER_SOURCE", "WAIT_ROWS", "Engine",
           "Listener"]
