"""Following real files appended by real child processes, through real watchdog observers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from trainwatch.live.watcher import Watcher
from trainwatch.model import AlertState

from .conftest import append, wait_until


def lines_of(w: Watcher, path: Path) -> list[str]:
    return [t for _, t in w.recent_lines(str(path), 1000)]


def step_of(w: Watcher, path: Path) -> int | None:
    with w.lock:
        st = w.engine.sources.get(str(path))
        return st.step if st else None


@pytest.fixture(params=["inotify", "poll"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def make(paths: list[Path | str], mode: str = "inotify", **kw) -> Watcher:  # type: ignore[no-untyped-def]
    kw.setdefault("fmt", "keyvalue")
    w = Watcher([str(p) for p in paths], gpu=False, poll=(mode == "poll"),
                poll_interval=0.1 if mode == "poll" else None, **kw)
    w.start()
    return w


def test_backlog_then_follow(tmp_path: Path, mode: str) -> None:
    log = tmp_path / "run.log"
    log.write_text("Step 1: loss=2.45, lr=1e-4\nStep 2: loss=2.40, lr=1e-4\n")
    w = make([log], mode)
    try:
        assert step_of(w, log) == 2  # the backlog is read before start() returns
        append(log, "Step 3: loss=2.30, lr=1e-4")
        wait_until(lambda: step_of(w, log) == 3, what="step 3")
        assert lines_of(w, log)[-1] == "Step 3: loss=2.30, lr=1e-4"
        assert w.recent_lines(str(log), 1) == [(3, "Step 3: loss=2.30, lr=1e-4")]
    finally:
        w.stop()


def test_nan_alert_fires_live(tmp_path: Path, mode: str) -> None:
    log = tmp_path / "run.log"
    log.write_text("Step 1: loss=2.45, lr=1e-4\n")
    w = make([log], mode)
    fired = []
    w.add_listener(lambda c: fired.append(c.alert.rule) if c.state is AlertState.FIRING else None)
    try:
        append(log, "Step 2: loss=nan, lr=1e-4")
        wait_until(lambda: "loss.nonfinite" in fired, what="the NaN alert")
    finally:
        w.stop()


def test_from_end_skips_backlog_but_keeps_line_numbers(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text("Step 1: loss=nan, lr=1e-4\nStep 2: loss=2.40, lr=1e-4\n")
    w = make([log], from_end=True)
    try:
        assert step_of(w, log) is None and not [a for a in w.engine.alerts() if a.rule == "loss.nonfinite"]
        append(log, "Step 3: loss=2.30, lr=1e-4")
        wait_until(lambda: step_of(w, log) == 3)
        assert w.recent_lines(str(log), 5) == [(3, "Step 3: loss=2.30, lr=1e-4")]
    finally:
        w.stop()


def test_partial_line_held_until_newline(tmp_path: Path, mode: str) -> None:
    log = tmp_path / "run.log"
    log.write_text("Step 1: loss=2.45, lr=1e-4\n")
    w = make([log], mode)
    try:
        append(log, "Step 2: loss=2.4", newline=False)
        append(log, "Step 2b: marker", newline=False)  # still no newline: nothing may be parsed
        append(log, "")  # the newline
        wait_until(lambda: len(lines_of(w, log)) == 2)
        assert lines_of(w, log)[-1] == "Step 2: loss=2.4Step 2b: marker"
    finally:
        w.stop()


def test_carriage_return_progress_is_seen_before_the_newline(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("Step 1: loss=2.45, lr=1e-4\n")
    w = make([log])
    try:
        append(log, "\rprogress 1\rprogress 2\rStep 5: loss=2.0, lr=1e-4\rpartial", newline=False)
        wait_until(lambda: step_of(w, log) == 5, what="the redrawn step")
        assert not any("partial" in t for t in lines_of(w, log))
    finally:
        w.stop()


def test_truncation_copytruncate(tmp_path: Path, mode: str) -> None:
    log = tmp_path / "run.log"
    log.write_text("".join(f"Step {i}: loss=2.0, lr=1e-4\n" for i in range(1, 20)))
    w = make([log], mode)
    try:
        assert step_of(w, log) == 19
        with open(log, "r+") as f:
            f.truncate(0)
        append(log, "Step 20: loss=1.9, lr=1e-4")
        wait_until(lambda: step_of(w, log) == 20, what="the line after truncation")
        assert w.recent_lines(str(log), 1) == [(1, "Step 20: loss=1.9, lr=1e-4")]
        assert any("truncated" in t for t in w.info_lines)
    finally:
        w.stop()


def test_rotation_finishes_old_file_then_follows_new(tmp_path: Path, mode: str) -> None:
    log = tmp_path / "run.log"
    log.write_text("Step 1: loss=2.0, lr=1e-4\n")
    w = make([log], mode)
    try:
        append(log, "Step 2: loss=2.0, lr=1e-4")
        os.rename(log, tmp_path / "run.log.1")
        append(tmp_path / "run.log.1", "Step 3: loss=2.0, lr=1e-4")  # the writer still holds the old file
        append(log, "Step 4: loss=1.9, lr=1e-4")  # a new file under the old name
        wait_until(lambda: step_of(w, log) == 4, what="the rotated file")
        texts = lines_of(w, log)
        assert "Step 2: loss=2.0, lr=1e-4" in texts
        assert texts[-1] == "Step 4: loss=1.9, lr=1e-4"
    finally:
        w.stop()


def test_deleted_file_returns(tmp_path: Path, mode: str) -> None:
    log = tmp_path / "run.log"
    log.write_text("Step 1: loss=2.0, lr=1e-4\n")
    w = make([log], mode)
    try:
        log.unlink()
        wait_until(lambda: any("removed" in t for t in w.info_lines), what="the removal notice")
        append(log, "Step 7: loss=1.9, lr=1e-4")
        wait_until(lambda: step_of(w, log) == 7, what="the returned file")
    finally:
        w.stop()


def test_file_that_does_not_exist_yet(tmp_path: Path, mode: str) -> None:
    log = tmp_path / "later.log"
    w = make([log], mode, fmt=None)  # the format is detected once enough lines have arrived
    try:
        assert any("does not exist yet" in t for t in w.info_lines)
        append(log, "Step 1: loss=2.0, lr=1e-4")
        append(log, "Step 2: loss=1.9, lr=1e-4")
        append(log, "Step 3: loss=nan, lr=1e-4")
        wait_until(lambda: step_of(w, log) == 3, what="the new file")
        wait_until(lambda: any(a.rule == "loss.nonfinite" for a in w.engine.alerts()))
    finally:
        w.stop()


def test_glob_and_directory_pick_up_new_files_with_their_own_labels(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "rank0.log").write_text("Step 1: loss=2.0, lr=1e-4\n")
    w = make([str(out / "rank*.log")])
    try:
        append(out / "rank3.log", "Step 1: loss=2.0, lr=1e-4")
        wait_until(lambda: step_of(w, out / "rank3.log") == 1, what="the new rank file")
        labels = {s.name: s.label for s in w.sources()}
        assert labels[str(out / "rank3.log")] == "rank 3" and labels[str(out / "rank0.log")] == "rank 0"
    finally:
        w.stop()
    d = tmp_path / "run"
    d.mkdir()
    w = make([d], fmt=None)
    try:
        state = {"log_history": [{"loss": 2.0, "step": 10, "epoch": 0.1, "learning_rate": 1e-4}]}
        (d / "trainer_state.json").write_text(json.dumps(state))
        wait_until(lambda: step_of(w, d / "trainer_state.json") == 10, what="trainer_state.json")
        state["log_history"].append({"loss": float("nan"), "step": 20, "epoch": 0.2, "learning_rate": 1e-4})
        tmp = d / "tmp.json.partial"
        tmp.write_text(json.dumps(state))
        os.replace(tmp, d / "trainer_state.json")  # re-written whole, as the Trainer does
        wait_until(lambda: step_of(w, d / "trainer_state.json") == 20, what="the re-read document")
        loss = w.engine.store.get("loss", str(d / "trainer_state.json"))
        assert loss is not None and [p.step for p in loss.recent] == [10, 20]  # no duplicates
    finally:
        w.stop()


def test_inotify_limit_falls_back_to_polling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from watchdog.observers import Observer

    def full(*a, **k):  # type: ignore[no-untyped-def]
        raise OSError(errno.ENOSPC, "inotify watch limit reached")

    monkeypatch.setattr(Observer, "schedule", full)
    log = tmp_path / "run.log"
    log.write_text("Step 1: loss=2.0, lr=1e-4\n")
    w = make([log])
    try:
        assert w.poll is True and any("inotify watch limit" in t for t in w.info_lines)
        append(log, "Step 2: loss=2.0, lr=1e-4")
        wait_until(lambda: step_of(w, log) == 2, what="a line found by polling")
    finally:
        w.stop()


def test_unreadable_file_is_reported_and_the_rest_followed(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    bad = tmp_path / "bad.log"
    bad.write_text("Step 1: loss=2.0\n")
    bad.chmod(0)
    good = tmp_path / "good.log"
    good.write_text("Step 1: loss=2.0, lr=1e-4\n")
    w = make([bad, good])
    try:
        assert any("bad.log" in t and "cannot read" in t for t in w.info_lines)
        append(good, "Step 2: loss=2.0, lr=1e-4")
        wait_until(lambda: step_of(w, good) == 2)
    finally:
        w.stop()


def test_stop_reads_what_was_written_last(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text("Step 1: loss=2.0, lr=1e-4\n")
    w = make([log], "poll")
    append(log, "Step 2: loss=2.0, lr=1e-4")
    w.stop()
    assert step_of(w, log) == 2
    w.stop()  # idempotent


def test_a_backlog_larger_than_one_poll_is_read_in_pieces_and_completely(tmp_path, monkeypatch) -> None:
    """A long backlog is read at most POLL_BYTES per poll (memory stays bounded) and the follower says
    more is waiting until the end is reached; every line arrives once, in order."""
    from trainwatch.sources import tail

    monkeypatch.setattr(tail, "POLL_BYTES", 2 * tail.READ_CHUNK)
    path = tmp_path / "big.log"
    line = b"x" * 99 + b"\n"
    n = (5 * tail.READ_CHUNK) // len(line)
    path.write_bytes(line * n)
    follower = tail.FileFollower(path)
    got, polls = [], 0
    while True:
        chunk = follower.poll()
        polls += 1
        got.extend(no for no, _ in chunk.lines)
        if not follower.more:
            break
    assert got == list(range(1, n + 1))
    assert polls >= 3


def test_the_backlog_comes_as_bytes_then_lines_follow_with_the_same_numbers(tmp_path, monkeypatch) -> None:
    """With raw_backlog the complete lines already in the file come as bytes (the byte path reads them,
    as `check` does), in pieces of at most POLL_BYTES; an unfinished last line with redraws is handed
    over as the line path would, and what is appended later comes line by line, numbered on."""
    from trainwatch.sources import tail

    monkeypatch.setattr(tail, "POLL_BYTES", 2 * tail.READ_CHUNK)
    path = tmp_path / "big.log"
    line = b"x" * 99 + b"\n"
    n = (5 * tail.READ_CHUNK) // len(line)
    path.write_bytes(line * n + b"\rbar 1\rbar 2\rpart")
    follower = tail.FileFollower(path, raw_backlog=True)
    raw, lines = b"", []
    while True:
        chunk = follower.poll()
        if chunk.raw:
            assert chunk.raw_first == raw.count(b"\n") + 1
            assert chunk.raw_lines == [piece.count(b"\n") for piece in chunk.raw]
            raw += b"".join(chunk.raw)
        lines.extend(chunk.lines)
        if not follower.more:
            break
    assert raw == line * n
    assert lines == [(n + 1, "\rbar 1\rbar 2")]  # the redraws of the unfinished line, under its number
    with open(path, "ab") as f:
        f.write(b"ial\nnext\n")
    chunk = follower.poll()
    assert not chunk.raw and chunk.lines == [(n + 1, "part" + "ial"), (n + 2, "next")]


def test_after_a_truncation_the_backlog_is_read_line_by_line(tmp_path: Path) -> None:
    from trainwatch.sources import tail

    path = tmp_path / "run.log"
    path.write_bytes(b"a\nb\nc\n")
    follower = tail.FileFollower(path, raw_backlog=True)
    assert b"".join(follower.poll().raw) == b"a\nb\nc\n"
    path.write_bytes(b"d\n")
    chunk = follower.poll()
    assert chunk.restarted and not chunk.raw and chunk.lines == [(1, "d")]


def test_a_backlog_read_as_bytes_fills_the_ring_and_the_source(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text("".join(f"Step {i}: loss={3 - i / 100:.2f}, lr=1e-4\n" for i in range(1, 301)))
    w = make([log], ring_lines=50)
    try:
        assert step_of(w, log) == 300
        assert w.recent_lines(str(log), 2) == [(299, "Step 299: loss=0.01, lr=1e-4"),
                                                (300, "Step 300: loss=0.00, lr=1e-4")]
        with w.lock:
            st = w.engine.sources[str(log)]
            assert (st.lines, st.last_line) == (300, "Step 300: loss=0.00, lr=1e-4")
        append(log, "Step 301: loss=0.00, lr=1e-4")
        wait_until(lambda: step_of(w, log) == 301, what="step 301")
        assert w.recent_lines(str(log), 1) == [(301, "Step 301: loss=0.00, lr=1e-4")]
    finally:
        w.stop()


@pytest.mark.parametrize("how", ["removed", "rotated"])
def test_a_file_let_go_of_mid_backlog_is_read_to_its_end_then_nothing_waits(tmp_path, monkeypatch,
                                                                            how: str) -> None:
    """Removed (or rotated away) while more than a poll of its backlog was unread: the open descriptor
    reads the old file to its end over the next polls, every line of it, and only then is it let go of
    and said so; after that the follower must not say more is waiting (the watcher woke it again without
    end, and `stop`, which reads until nothing waits, never returned)."""
    from trainwatch.sources import tail

    monkeypatch.setattr(tail, "POLL_BYTES", 2 * tail.READ_CHUNK)
    path = tmp_path / "big.log"
    data = (b"x" * 99 + b"\n") * ((6 * tail.READ_CHUNK) // 100)
    path.write_bytes(data)
    follower = tail.FileFollower(path, raw_backlog=True)
    first = follower.poll()
    assert first.raw and follower.more
    got, notices, lines = b"".join(first.raw), [], []
    if how == "removed":
        path.unlink()
    else:
        path.rename(tmp_path / "big.log.1")
        path.write_bytes(b"fresh\n")
    for _ in range(10):
        chunk = follower.poll()
        got += b"".join(chunk.raw)
        notices += chunk.notices
        lines += [t for _, t in chunk.lines]
        if not follower.more:
            break
    assert got == data
    said = [n for n in notices if ("removed" if how == "removed" else "rotation") in n]
    assert len(said) == 1
    assert not follower.more
    again = follower.poll()
    assert not again.raw and not follower.more
    lines += [t for _, t in again.lines]
    assert lines == (["fresh"] if how == "rotated" else [])  # the new file follows the old one's end


@pytest.mark.parametrize("pad", [0, 90_000])
def test_a_backlog_of_many_polls_leaves_the_files_last_lines_in_the_ring(tmp_path, monkeypatch, pad: int) -> None:
    """The ring is filled once the backlog is read, from the last pieces of as many polls as its lines
    need (long lines: a poll holds fewer lines than the ring), as if every poll's last lines had gone in."""
    from trainwatch.sources import tail

    monkeypatch.setattr(tail, "POLL_BYTES", 2 * tail.READ_CHUNK)
    log = tmp_path / "run.log"
    n = 60 if pad else (6 * tail.READ_CHUNK) // 40
    lines: list[str] = []
    for i in range(1, n + 1):
        lines.append(f"Step {i}: loss={3 - i / n:.2f}, lr=1e-4")
        if pad:
            lines.append("#" * pad)  # a line no metric is read from, only kept
    log.write_text("".join(line + "\n" for line in lines))
    w = make([log], ring_lines=50)
    try:
        wait_until(lambda: step_of(w, log) == n, what=f"step {n}")
        total = len(lines)
        assert w.recent_lines(str(log), 50) == [(i, lines[i - 1]) for i in range(total - 49, total + 1)]
    finally:
        w.stop()


def test_a_log_replaced_by_a_directory_is_said_once_each_way(tmp_path: Path) -> None:
    from trainwatch.sources.tail import FileFollower

    log = tmp_path / "run.log"
    log.write_text("step 1 loss=2.0\n")
    f = FileFollower(log)
    assert [text for _, text in f.poll().lines] == ["step 1 loss=2.0"]
    log.unlink()
    log.mkdir()
    notices = [n for _ in range(12) for n in f.poll().notices]
    assert len(notices) == 1 and "cannot read" in notices[0] and "directory" in notices[0].lower()
    log.rmdir()
    log.write_text("step 2 loss=1.9\n")
    back = [f.poll() for _ in range(3)]
    assert [n for c in back for n in c.notices if "readable again" in n or "appeared" in n][:1]
    assert [text for c in back for _, text in c.lines] == ["step 2 loss=1.9"]
