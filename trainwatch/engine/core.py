"""The Engine: the calls its drivers make (feed, settle, tick, finish) and what they read back (alerts,
worst)."""

from __future__ import annotations

from collections.abc import Iterable

from trainwatch import incident
from trainwatch.alerts import AlertChange
from trainwatch.batch import Batch, BatchBuilder, from_records
from trainwatch.engine.rounds import Rounds
from trainwatch.model import Alert, Record, Sample, Severity


class Engine(Rounds):
    """Records in, alerts out (see trainwatch.engine). Its state is set up in engine.state.EngineState; the
    alert book (`book`) owns every alert's state."""

    def feed(self, record: Record) -> list[AlertChange]:
        """One record: a batch of one, judged at once."""
        if isinstance(record, Sample):
            return self.feed_batch(from_records(record.source, (record,)))
        return self._tell(self._judge_held()) + self._event(record)

    def feed_all(self, records: Iterable[Record], *, more: bool = False) -> list[AlertChange]:
        """Records in log order, of any sources: each run of one source's records goes in as one batch.

        `more`: as for `feed_batch`, the rows may wait for a later round (a live follower judges the rows
        of all its files in one round per its timer, not one per file per write)."""
        out: list[AlertChange] = []
        builder: BatchBuilder | None = None
        for r in records:
            if builder is None or r.source != builder.source:
                if builder is not None:
                    out.extend(self._feed(builder.build()))
                builder = BatchBuilder(r.source)
            builder.record(r)
        if builder is not None:
            out.extend(self._feed(builder.build()))
        out.extend(self._end_of_feed(more))
        return out

    def feed_batch(self, batch: Batch, *, more: bool = False) -> list[AlertChange]:
        """A batch in log order: its rows between events are judged together by the array rules.

        `more`: more of the same backlog follows at once, so the rows held at the batch's end may wait
        and be judged with the next batch's in one round, as if the two were one batch (which changes no
        finding: tests/test_batching.py). A round still ends where it would inside a batch: at
        ARRAY_FLUSH rows of a series, before an event rules must see in order, and at `settle`, `finish`,
        `tick` (a live follower's held rows wait no longer than its timer) or anything fed without
        `more`; and the rows wait only while no series holds half a round, so a batch of many rows is
        not cut in two by a round's end, and while all series together hold fewer than WAIT_ROWS. A
        backlog read in blocks (BACKLOG_BLOCK) pays the rules' fixed cost per round of thousands of rows,
        not per block."""
        out = self._feed(batch)
        out.extend(self._end_of_feed(more))
        return out

    def alerts(self, *, inhibited: bool = True) -> list[Alert]:
        """Every alert that fired, most severe first, then by step. With `inhibited=False`, only those
        told to the sinks: an alert that inhibition kept quiet all along (an echo of its cause) is left
        out, so a report says what a live follower said."""
        self.fold_incidents()
        found = self.book.all() if inhibited else (a for a in self.book.all() if a.told and not a.retracted)
        return incident.ordered(found, {name: st.restarts for name, st in self.sources.items() if st.restarts})

    def worst(self) -> Severity | None:
        self.fold_incidents()
        worst = None
        for a in self.book.all():
            if a.severity > Severity.INFO and not a.retracted and (worst is None or a.severity > worst):
                worst = a.severity
        return worst
