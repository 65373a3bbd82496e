"""An alert judged against a moving baseline (a spike over the recent median, a drop below the run's own
level) stops holding once that baseline has caught up. It is then told as stopped, not resolved, unless
the metric came back to where it was."""

from __future__ import annotations

from rulekit import Run, loss_run

from trainwatch.model import AlertState


def final(r: Run, rule: str):
    return next(a for a in r.engine.alerts() if a.rule == rule)


def test_a_loss_that_jumps_and_stays_up_is_not_a_resolved_spike():
    losses = [2.0 - 0.01 * i for i in range(40)] + [40.0 + 0.1 * i for i in range(60)]
    a = final(loss_run(losses), "loss.spike")
    assert a.state is AlertState.RESOLVED  # it stopped holding...
    assert a.stopped and "did not come back" in a.stopped  # ...without recovering
    assert "before the spike" in a.stopped


def test_a_spike_that_comes_back_resolves():
    losses = [2.0 - 0.01 * i for i in range(40)] + [40.0, 38.0] + [1.6 - 0.001 * i for i in range(60)]
    a = final(loss_run(losses), "loss.spike")
    assert a.state is AlertState.RESOLVED and not a.stopped


def throughput(values: list[float]) -> Run:
    r = Run()
    for i, v in enumerate(values):
        r.step(i + 1, loss=2.0 - 0.001 * i, tokens_per_sec=v)
    r.finish()
    return r


def test_a_throughput_that_stays_slow_is_not_a_resolved_drop():
    a = final(throughput([1000.0 + (i % 3) for i in range(60)] + [300.0 + (i % 3) for i in range(200)]),
              "speed.drop")
    assert a.stopped and "did not come back" in a.stopped and "tokens_per_sec" in a.stopped


def test_a_throughput_that_comes_back_resolves():
    a = final(throughput([1000.0 + (i % 3) for i in range(60)] + [300.0] * 10 + [1000.0] * 60), "speed.drop")
    assert a.state is AlertState.RESOLVED and not a.stopped


def test_the_episode_that_ended_without_recovering_says_why():
    r = loss_run([2.0 - 0.01 * i for i in range(40)] + [40.0 + 0.1 * i for i in range(60)])
    record = next(a for a in r.engine.alerts() if a.rule == "loss.spike")
    last = record.episodes[-1].to_dict()
    assert last["resolved"] and "did not come back" in last["stopped"]
