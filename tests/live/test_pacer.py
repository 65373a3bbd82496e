"""The read pace of a busy glob, in simulated time: many files changing are each read at most once per
spacing, a few are read at every wake-up, and nothing deferred is ever dropped."""

from __future__ import annotations

from trainwatch.live.pacer import GATHER_FILES, GATHER_MAX_S, ReadPacer


def simulate(files: int, rate: float, seconds: float, read_cpu: float, tick: float = 0.5) -> dict[str, int]:
    """Reads per file when `files` files are each written `rate` times a second; each read costs read_cpu.
    A wake-up comes only when the file is not already pending (as the watcher keeps them)."""
    pacer = ReadPacer()
    reads = {f"f{i}": 0 for i in range(files)}
    pending: set[str] = set()
    t, next_tick, dt = 0.0, tick, 1.0 / rate
    while t < seconds:
        for path in reads:
            if path in pending:
                continue
            if pacer.admit(path, t):
                reads[path] += 1
                pacer.read(path, t, read_cpu)
            else:
                pending.add(path)
        for path in pacer.due(t):
            pending.discard(path)
            reads[path] += 1
            pacer.read(path, t, read_cpu)
        t += dt
        if t >= next_tick:
            pacer.retune()
            next_tick += tick
    return reads


def test_a_few_files_are_read_at_every_write():
    reads = simulate(files=GATHER_FILES - 1, rate=10, seconds=20, read_cpu=0.0005)
    assert all(n >= 199 for n in reads.values())


def test_many_busy_files_are_each_read_about_once_per_spacing():
    reads = simulate(files=200, rate=10, seconds=60, read_cpu=0.0005)
    per_file_per_s = sum(reads.values()) / 200 / 60
    assert per_file_per_s <= 1 / GATHER_MAX_S + 0.1  # 200 x 0.5 ms / 5%: the 2 s cap
    assert min(reads.values()) >= 60 / GATHER_MAX_S - 3  # and every file keeps being read


def test_cheap_reads_keep_the_least_spacing():
    reads = simulate(files=20, rate=10, seconds=60, read_cpu=0.00001)
    assert 1.5 <= sum(reads.values()) / 20 / 60 <= 2.2  # every 0.5 s


def test_a_deferred_file_is_read_when_due_even_if_the_pace_relaxes():
    pacer = ReadPacer()
    for i in range(100):
        pacer.admit(f"f{i % 20}", 0.0)
        pacer.read(f"f{i % 20}", 0.0, 0.01)
    assert pacer.retune() == GATHER_MAX_S
    assert not pacer.admit("f0", 0.1)  # deferred to 2.0
    assert pacer.next_due() == GATHER_MAX_S
    pacer.retune()  # only f0 woke: back to reading at once
    assert pacer.spacing == 0.0
    assert not pacer.admit("f0", 0.2)  # still due, not read twice
    assert pacer.due(1.9) == []
    assert pacer.due(2.0) == ["f0"]
    assert pacer.due(5.0) == []


def test_no_pace_when_the_watcher_ticks_fast():
    pacer = ReadPacer(least_s=0.0)
    for i in range(50):
        pacer.admit(f"f{i}", 0.0)
        pacer.read(f"f{i}", 0.0, 0.01)
    assert pacer.retune() == 0.0
    assert pacer.admit("f1", 0.01)


def test_the_safety_poll_skips_a_file_a_wake_up_just_read():
    pacer = ReadPacer()
    pacer.read("a", 10.0, 0.001)
    assert pacer.read_since("a", 9.0)
    assert not pacer.read_since("a", 10.5)
    assert not pacer.read_since("b", 0.0)
