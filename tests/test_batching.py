"""Any cutting of the same records into batches gives the same findings: whole, one at a time, random cuts.

The array rules judge the rows held since they last did; this proves that how many rows arrive at
once (a gigabyte's backlog or a live line) changes nothing they report."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.rules.rowref.harness import feed_in_cuts
from trainwatch import runner
from trainwatch.model import Record, Sample
from trainwatch.rules.base import Rule
from trainwatch.session import LogClock, make_engine

ROOT = Path(__file__).resolve().parents[1]
LOGS = sorted(p for p in (ROOT / "examples/logs").glob("*") if p.suffix in (".log", ".jsonl"))


def records_of(path: Path) -> tuple[runner.OpenSource, list[Record]]:
    src = runner.open_source(path)
    out: list[Record] = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            out.extend(src.parser.feed(line.rstrip("\n"), lineno))
    out.extend(src.parser.finish())
    return src, out


def findings(src: runner.OpenSource, records: list[Record], cuts: list[int] | None) -> str:
    """Feeds copies of the records (the engine settles steps on them) in batches cut at `cuts`;
    None feeds them one at a time."""
    clock = LogClock(1_000_000.0)
    engine = make_engine([src], None, None, clock=clock)
    feed_in_cuts(engine, src.name, records, cuts)
    engine.finish(src.name)
    return json.dumps([a.to_dict() for a in engine.alerts()], indent=1, default=str)  # NaN == NaN as text


@pytest.mark.parametrize("log", LOGS, ids=[p.name for p in LOGS])
def test_findings_do_not_depend_on_how_records_are_batched(log: Path) -> None:
    src, records = records_of(log)
    whole = findings(src, records, [])
    assert findings(src, records, None) == whole
    rng = random.Random(log.name)
    cuts = [rng.randrange(len(records)) for _ in range(40)]
    assert findings(src, records, cuts) == whole


def _schedules(tmp: Path) -> list[Path]:
    """JSON-lines runs that reach the row rules' rare rows: an LR that drops to 0 mid-run and comes back,
    a step counter that goes back with the warmup restarting, and a warmup replayed without it."""
    def write(name: str, rows: list[tuple[int, float, float]]) -> Path:
        path = tmp / name
        path.write_text("".join(json.dumps({"step": s, "loss": loss, "lr": lr}) + "\n" for s, loss, lr in rows))
        return path

    def lr_at(s: int) -> float:
        return 1e-3 * s / 30 if s <= 30 else 1e-3 * (1 - (s - 30) / 400)

    zero = [(s, 3.0 - s / 200, 0.0 if 100 <= s < 120 else lr_at(s)) for s in range(1, 301)]
    back = [(s, 3.0 - s / 200, lr_at(s)) for s in range(1, 201)] + \
        [(s, 2.5 - s / 300, lr_at(s - 120)) for s in range(120, 260)]
    replay = [(s, 3.0 - s / 400, lr_at(s) if s <= 380 else lr_at(s - 365)) for s in range(1, 420)]
    return [write("zero.jsonl", zero), write("back.jsonl", back), write("replay.jsonl", replay)]


@pytest.mark.parametrize("log", [*LOGS, "zero.jsonl", "back.jsonl", "replay.jsonl"],
                         ids=[*(p.name for p in LOGS), "zero", "back", "replay"])
def test_row_rule_gates_leave_out_only_rows_that_change_nothing(log: Path | str, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A row rule's gate lets a backlog skip the rows it cannot answer: with every gate open (each row
    shown to every row rule) the findings are the same, to the last field."""
    if isinstance(log, str):
        log = next(p for p in _schedules(tmp_path) if p.name == log)
    src, records = records_of(log)
    gated = findings(src, records, [])
    monkeypatch.setattr(Rule, "gate", lambda self, ctx, series, step, value: None)
    for cls in {type(r) for r in make_engine([src], None, None).rules}:
        if "gate" in vars(cls):
            monkeypatch.setattr(cls, "gate", Rule.gate)
    assert findings(src, records, []) == gated


@pytest.mark.parametrize("log", LOGS, ids=[p.name for p in LOGS])
def test_a_backlog_judged_in_rounds_finds_what_blocks_judged_one_by_one_find(log: Path) -> None:
    """`check` and `tail`'s backlog feed their blocks with `more`, so rows wait to be judged with the next
    blocks' rows: the same findings as judging each block at once, and the rows really did wait."""
    data = log.read_bytes()
    blocks = [data[i:i + 2048] for i in range(0, len(data), 2048)]
    out = []
    waited = False
    for more in (False, True):
        src = runner.open_source(log)
        engine = make_engine([src], None, None, clock=LogClock(1_000_000.0))
        for batch in src.parser.read_blocks(blocks):
            engine.feed_batch(batch, more=more)
            waited |= bool(engine._held)
        engine.settle()
        engine.feed_all(src.parser.finish())
        engine.finish(src.name)
        out.append(json.dumps([a.to_dict() for a in engine.alerts()], indent=1, default=str))
    assert out[0] == out[1]
    assert waited


@pytest.mark.parametrize("log", LOGS, ids=[p.name for p in LOGS])
def test_the_store_lists_metrics_in_log_order_however_batched(log: Path) -> None:
    """`check --json` lists a source's metrics in the store's order: the order the log first gives them,
    whether the backlog came as one batch, one record at a time or in blocks of any size (a metric that
    row rules watch was made first when its batch also held earlier metrics)."""
    src, records = records_of(log)
    orders = []
    for cuts in ([], None):
        engine = make_engine([src], None, None, clock=LogClock(1_000_000.0))
        feed_in_cuts(engine, src.name, records, cuts)
        orders.append([s.name for s in engine.store])
    first: dict[str, None] = {}
    for r in records:
        if isinstance(r, Sample):
            first.setdefault(engine.canon(r.name), None)
    assert orders[0] == orders[1] == list(first)


def test_rows_waiting_for_the_next_block_stay_bounded_over_all_series(tmp_path: Path) -> None:
    """A backlog of many metrics fed with `more`: the rows left waiting after each block, over all its
    series together, stay under WAIT_ROWS (each waiting row is held in its series' arrays), and the
    blocks are still judged with more than one block's rows waiting between rounds."""
    from trainwatch import engine as engine_module

    path = tmp_path / "wide.jsonl"
    path.write_text("".join(json.dumps({"step": s, **{f"layer{i}/norm": 1.0 + i + s * 1e-3 for i in range(60)}})
                            + "\n" for s in range(1, 3001)))
    src = runner.open_source(path)
    engine = make_engine([src], None, None, clock=LogClock(1_000_000.0))
    data = path.read_bytes()
    waited = 0
    for batch in src.parser.read_blocks(data[i:i + 65536] for i in range(0, len(data), 65536)):
        engine.feed_batch(batch, more=True)
        held = sum(h.n for h in engine._held.values())
        assert held < engine_module.WAIT_ROWS
        waited = max(waited, held)
    assert waited > 0
    engine.settle()
    assert not engine._held
