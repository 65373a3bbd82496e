"""speed.drop judges each attempt of a log on its own. A relaunch or a resume (the step counter goes back)
compiles and warms up again, and a throughput or a clock measured since the launch starts over: neither
is a slowdown of the run before it. A real slowdown later in the new attempt is still found, against
that attempt's own level, and told with the values logged at its steps."""

from __future__ import annotations

import random
from pathlib import Path

from trainwatch import runner
from trainwatch.model import Alert
from trainwatch.rules.stats import fmt
from trainwatch.session import LogClock, Session

CRASH = "Traceback (most recent call last):\nRuntimeError: NCCL timeout\n"


def check_text(tmp_path: Path, text: str) -> dict[str, Alert]:
    p = tmp_path / "run.log"
    p.write_text(text)
    src = runner.open_source(p)
    session = Session([src], clock=LogClock(0.0))
    session.read_file(src)
    return {a.rule: a for a in session.engine.alerts()}


def megatron(its: range, ms: list[float]) -> str:
    return "".join(f" iteration {it:8d}/    4000 | consumed samples: {it * 128:12d} | elapsed time per iteration "
                   f"(ms): {t:.1f} | learning rate: 3.000E-04 | global batch size:   128 | lm loss: "
                   f"{3.0 - it / 2000:.6E} | loss scale: 1.0 | grad norm: 0.912 | number of skipped iterations:   0 "
                   f"| number of nan iterations:   0 |\n" for it, t in zip(its, ms, strict=True))


def step_times(n: int, seed: int, first: tuple[float, ...] = ()) -> list[float]:
    """n step times near 512 ms, the first ones replaced by `first` (compilation, warm-up)."""
    rng = random.Random(seed)
    out = [512.0 + rng.uniform(-5, 5) for _ in range(n)]
    out[:len(first)] = [512.0 + f for f in first]
    return out


def test_the_warm_up_after_a_megatron_relaunch_is_no_slowdown(tmp_path: Path) -> None:
    first = megatron(range(10, 1210, 10), step_times(120, 1, (9000.0,)))
    resumed = megatron(range(1010, 2010, 10), step_times(100, 2, (9000.0, 3000.0, 1500.0)))
    alerts = check_text(tmp_path, first + CRASH + "> loading checkpoint at iteration 1000\n" + resumed)
    assert "resume.detected" in alerts  # the step went back: a second attempt
    assert "speed.drop" not in alerts


def test_a_throughput_measured_since_the_launch_starts_over_at_a_relaunch(tmp_path: Path) -> None:
    """tokens/s = tokens since the launch / seconds since the launch: a clock that starts again at 0 and
    counts the relaunch's start-up, so the throughput climbs from near 0 for many steps."""
    lines = []
    for lo, hi in ((1, 301), (201, 501)):
        elapsed, tokens = 0.0, 0
        for s in range(lo, hi):
            elapsed += 1.0 + (90.0 if s == lo else 0.0)
            tokens += 4096
            lines.append(f"Step {s}: loss={3.0 - s / 400:.4f}, lr=3.00e-04, tokens_per_sec={tokens / elapsed:.1f}\n")
        lines.append(CRASH if lo == 1 else "")
    alerts = check_text(tmp_path, "".join(lines))
    assert "resume.detected" in alerts
    assert "speed.drop" not in alerts


def test_an_elapsed_clock_named_time_that_starts_again_at_a_relaunch_is_no_slowdown(tmp_path: Path) -> None:
    """A bare `time` that only grows is a clock; its fall to 0 at a relaunch does not make it a duration,
    so the relaunched attempt's clock running faster when its steps get slower is no slowdown either."""
    lines = []
    for lo, hi in ((50, 5050), (2550, 7550)):
        clock = 0.0
        for s in range(lo, hi, 50):
            clock += 160.0 if s > 5550 else 39.0
            lines.append(f"Iter(train) [{s:5d}/10000]  lr: 1.0000e-02  eta: 1:00:00  time: {clock:.4f}  "
                         f"data_time: 0.0035  memory: 3000  loss: {1.5 - s / 20000:.4f}\n")
        lines.append(CRASH if lo == 50 else "")
    alerts = check_text(tmp_path, "".join(lines))
    assert "resume.detected" in alerts
    assert "speed.drop" not in alerts


def test_a_slowdown_later_in_the_relaunched_attempt_is_found_at_its_own_step(tmp_path: Path) -> None:
    """After the relaunch the run is steady at 512 ms, then every step takes 3x as long from iteration
    1610: found there, against the attempt's own level, with the value logged at that iteration."""
    first = megatron(range(10, 1210, 10), step_times(120, 3, (9000.0,)))
    ms = step_times(100, 4, (9000.0, 3000.0, 1500.0))
    ms[60:] = [3 * t for t in ms[60:]]  # iteration 1610 on
    alerts = check_text(tmp_path, first + CRASH + megatron(range(1010, 2010, 10), ms))
    a = alerts["speed.drop"]
    assert a.finding.began_step == 1610
    assert f"step_time_ms rose to {fmt(ms[60])} at step 1610;" in a.finding.message
    assert 500 < a.finding.evidence["baseline"] < 520  # the attempt's level, not its warm-up
