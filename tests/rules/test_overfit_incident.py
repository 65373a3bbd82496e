"""One overfitting incident, one finding: the eval loss's rule and the task metric's, tripped by the same
run, fold into one root that tells the other's evidence and gives their fixes once (trainwatch/incident.py)."""

from __future__ import annotations

import random

from rulekit import Run

from trainwatch.model import Severity
from trainwatch.runconfig.fit import topics
from trainwatch.sinks import report


def _run(n: int, **evals: list[float]) -> Run:
    r = Run()
    for e in range(n):
        for s in range(e * 10 + 1, e * 10 + 11):
            r.step(s, loss=3.5 - s * 0.005)
        for name, values in evals.items():
            r.sample(name, values[e], e * 10 + 10)
    r.finish()
    return r


def _overfitting() -> Run:
    rnd = random.Random(5)
    acc = [(60 + 3 * e if e <= 8 else 84 - 1.2 * (e - 8)) + rnd.gauss(0, 0.3) for e in range(20)]
    loss = [(2.0 - 0.1 * e if e <= 8 else 1.2 + 0.08 * (e - 8)) + rnd.gauss(0, 0.005) for e in range(20)]
    return _run(20, val_acc=acc, eval_loss=loss)


def test_the_eval_loss_and_the_task_metric_overfitting_are_one_finding() -> None:
    doc = report.document(_overfitting().engine, [], "sft", preset_auto=False)
    told = {f["id"]: f for f in doc["findings"]}
    assert {"loss.overfit", "quality.overfit"} <= set(told)
    roots = [f for f in doc["findings"] if f["id"] in ("loss.overfit", "quality.overfit") and not f["echo_of"]]
    assert len(roots) == 1 and roots[0]["severity"] == "warning"
    root = roots[0]
    echo = told["quality.overfit" if root["id"] == "loss.overfit" else "loss.overfit"]
    assert echo["severity"] == "info" and echo["echo_of"] == f"{root['id']} at step {root['step']}"
    assert echo["id"] in root["message"]  # the echo's evidence is told in the root's story
    assert doc["counts"]["warning"] == 1
    said = [t for f in root["fixes"] for t in topics(f)[:1]]
    assert "stop_early" in said and len(said) == len(set(said))  # each fix once, the echo's included


def test_a_model_that_never_learnt_is_the_root_and_is_not_told_to_keep_its_best_checkpoint() -> None:
    """Accuracy at chance (0.5-0.8 %) the whole run while the eval loss climbs and the train loss falls: not
    learning is the root; the rising eval loss and a 'best' at chance are its echoes."""
    rnd = random.Random(4)
    acc1 = [0.64, 0.56, 0.76] + [rnd.choice([0.48, 0.56, 0.64, 0.7]) for _ in range(25)]
    acc5 = [rnd.choice([2.2, 2.5, 2.6]) for _ in range(28)]
    loss = [7.1 + 0.16 * e for e in range(28)]
    doc = report.document(_run(28, acc1=acc1, acc5=acc5, eval_loss=loss).engine, [], "sft", preset_auto=False)
    told = {f["id"]: f for f in doc["findings"]}
    root = told["quality.not_learning"]
    assert root["severity"] == "warning" and not root["echo_of"] and "loss.overfit" in root["message"]
    assert told["loss.overfit"]["severity"] == "info"
    assert told["loss.overfit"]["echo_of"] == f"quality.not_learning at step {root['step']}"
    assert not any("Stop earlier" in f or "best checkpoint" in f for f in root["fixes"])


def test_folding_again_changes_nothing() -> None:
    engine = _overfitting().engine
    first = [(a.rule, a.severity, a.echo_of, a.incident, a.fixes) for a in engine.alerts()]
    again = [(a.rule, a.severity, a.echo_of, a.incident, a.fixes) for a in engine.alerts()]
    assert first == again and any(s is Severity.INFO and e for _, s, e, _, _ in first)



def test_a_live_follower_is_told_the_later_rule_as_an_echo_of_the_root() -> None:
    """As the report folds it, so does a follower (tail, run): the rule that fires second is told as an info
    echo naming the root, not as a second warning."""
    rnd = random.Random(5)
    acc = [(60 + 3 * e if e <= 8 else 84 - 1.2 * (e - 8)) + rnd.gauss(0, 0.3) for e in range(20)]
    loss = [(2.0 - 0.1 * e if e <= 8 else 1.2 + 0.08 * (e - 8)) + rnd.gauss(0, 0.005) for e in range(20)]
    r = Run()
    told: list[tuple[str, Severity, str]] = []
    r.engine.listeners.append(lambda c: told.append((c.alert.rule, c.alert.severity, c.alert.echo_of))
                              if c.state.name == "FIRING" else None)
    for e in range(20):
        for s in range(e * 10 + 1, e * 10 + 11):
            r.step(s, loss=3.5 - s * 0.005)
        r.sample("val_acc", acc[e], e * 10 + 10)
        r.sample("eval_loss", loss[e], e * 10 + 10)
    r.finish()
    loud = [(rule, echo) for rule, sev, echo in told if rule in ("loss.overfit", "quality.overfit")
            and sev > Severity.INFO]
    assert len(loud) == 1 and not loud[0][1]
    assert any(echo for rule, sev, echo in told if sev is Severity.INFO)
