"""An optimisation blow-up is one incident: the root is dated where the chain began and tells it in one
line of logged values; the spikes, the divergence's own echoes and the NaN fold into it as info, and the
root comes first in the report, its JSON and the dashboard."""

from __future__ import annotations

import io
import math
from pathlib import Path

from rulekit import Run, healthy_loss, run_log

from tests.fixtures import blowup_repro
from trainwatch.model import Severity
from trainwatch.sinks import report
from trainwatch.view import snapshot as view
from trainwatch.view.model import EngineModel


def _repro(tmp_path: Path) -> Path:
    p = tmp_path / "blowup.log"
    p.write_text("\n".join(blowup_repro.lines()) + "\n")
    return p


def test_the_issue_blowup_is_one_incident_dated_at_its_first_jump(tmp_path):
    eng = run_log(_repro(tmp_path))
    found = eng.alerts(inhibited=False)
    root = found[0]
    assert root.rule == "loss.diverging" and root.severity is Severity.CRITICAL and root.first_step == 25
    assert root.incident == ("training blew up at step 25: grad_norm 1 -> 50, loss 1.204 -> 3.611 "
                             "(steps 24 -> 25), NaN from step 30")
    chain = {"grad.spike", "loss.spike", "loss.nonfinite", "grad.nonfinite"}
    echoes = [a for a in found if a.rule in chain]
    assert {a.rule for a in echoes} == chain
    assert all(a.echo_of == "loss.diverging at step 25" and a.severity is Severity.INFO for a in echoes)
    assert [a.rule for a in found[1:5]] == ["grad.spike", "loss.spike", "loss.nonfinite", "grad.nonfinite"]
    loud = [a for a in found if a.severity >= Severity.WARNING]
    assert len(loud) <= 3


def test_report_and_json_put_the_root_first_and_keep_the_exit_code(tmp_path):
    eng = run_log(_repro(tmp_path))
    doc = report.document(eng, [report.SourceInfo(str(_repro(tmp_path)), "keyvalue")], "sft", True)
    assert doc["exit_code"] == 2
    first = doc["findings"][0]
    assert first["id"] == "loss.diverging" and first["step"] == 25
    assert first["message"].startswith("training blew up at step 25: grad_norm 1 -> 50")
    assert doc["counts"]["critical"] + doc["counts"]["warning"] <= 3
    out = io.StringIO()
    report.write_text(doc, out)
    text = out.getvalue()
    assert text.index("loss.diverging") < text.index("grad.spike") < text.index("loss.nonfinite")
    assert "part of the incident above (loss.diverging at step 25)" in text


def test_the_dashboard_selects_the_root(tmp_path):
    snap = view.take(EngineModel(run_log(_repro(tmp_path))), selected=None, log_source=None)
    top = snap.alerts[0]
    assert top.rule == "loss.diverging" and top.step == 25 and top.message.startswith("training blew up")


def test_a_nan_after_a_recovered_divergence_is_its_own_finding():
    """A divergence that came back down ended its incident: a NaN much later is another story."""
    r = Run()
    losses = healthy_loss(60, seed=3)
    step = 0
    for v in losses:
        step += 1
        r.step(step, loss=v, grad_norm=1.0)
    for v in (8.0, 9.0, 10.0, 11.0, 12.0, 12.0):  # a divergence...
        step += 1
        r.step(step, loss=v, grad_norm=1.0)
    for v in healthy_loss(80, seed=4, start=1.1, end=1.0):  # ...that recovers
        step += 1
        r.step(step, loss=v, grad_norm=1.0)
    step += 1
    r.step(step, loss=math.nan, grad_norm=1.0)
    r.finish()
    found = {a.rule: a for a in r.engine.alerts()}
    assert "loss.diverging" in found and "loss.nonfinite" in found
    assert found["loss.nonfinite"].severity is Severity.CRITICAL and not found["loss.nonfinite"].echo_of


def test_folding_again_changes_nothing(tmp_path):
    eng = run_log(_repro(tmp_path))
    once = [a.to_dict() for a in eng.alerts()]
    twice = [a.to_dict() for a in eng.alerts()]
    assert once == twice


def test_the_chain_runs_back_link_by_link_and_names_what_went_nan():
    """A grad-norm spike while the loss still falls, then a loss spike as grad_norm goes NaN, then a NaN
    loss: each link began a logged step before the next, so all are one incident dated at the first, and
    the story says which metric went NaN where (no loss jump where the loss fell)."""
    r = Run()
    for step in range(1, 41):
        loss = 5.0 if step == 26 else 2.43 - 0.04 * step if step < 27 else math.nan
        r.step(step, loss=loss, grad_norm=1.0 if step < 25 else 50.0 if step == 25 else math.nan)
    r.finish()
    found = r.engine.alerts(inhibited=False)
    root = found[0]
    assert root.rule == "loss.nonfinite" and root.first_step == 25
    assert root.incident == ("training blew up at step 25: grad_norm 1 -> 50 (steps 24 -> 25), "
                             "grad_norm NaN from step 26, loss NaN from step 27")
    assert {a.rule for a in found if a.echo_of == "loss.nonfinite at step 25"} == {
        "grad.spike", "loss.spike", "grad.nonfinite"}
    assert [a.rule for a in found if a.severity >= Severity.WARNING] == ["loss.nonfinite"]


def test_a_nan_of_another_cause_folds_the_nans_that_began_with_it():
    """A bad sample: the loss, the grad norm and the eval loss are NaN at one step with no grad-norm spike
    before. One incident, rooted at the train loss; the others are its info echoes."""
    r = Run()
    for s, v in enumerate(healthy_loss(39), start=1):
        r.step(s, loss=v, grad_norm=0.8 + 0.01 * (s % 3))
    r.step(40, loss=math.nan, grad_norm=math.nan)
    r.sample("eval_loss", math.nan, 40)
    for s in range(41, 50):
        r.step(s, loss=math.nan, grad_norm=math.nan)
    found = r.engine.alerts(inhibited=False)
    loud = [a for a in found if a.severity >= Severity.WARNING]
    assert [(a.rule, a.finding.subject) for a in loud] == [("loss.nonfinite", "loss")]
    assert loud[0].incident.startswith("loss went non-finite at step 40, with grad_norm and eval_loss")
    assert {a.finding.subject for a in found if a.echo_of == "loss.nonfinite at step 40"} == {"grad_norm", "eval_loss"}


def test_the_end_of_the_run_does_not_count_its_last_nan_twice():
    """The rows counted each NaN grad norm; the judgement at the end re-reads the last one, adding none."""
    r = Run()
    for s in range(1, 21):
        r.step(s, loss=2.0 - s / 100, grad_norm=0.8)
    for s in range(21, 30):
        r.step(s, loss=2.0, grad_norm=math.nan)
    r.finish()
    assert r.alert("grad.nonfinite").count == 9


def test_one_metric_gone_non_finite_is_named() -> None:
    """Only grad_norm went Inf (the loss stayed finite): the story names it, never a bare 'Inf from step 12'."""
    from trainwatch.incident import _nonfinite_from

    class _A:  # the few fields the story reads of an alert
        def __init__(self, subject: str, step: int, value: float) -> None:
            self.episodes, self.first_step, self.rule = [], step, subject
            self.finding = type("F", (), {"evidence": {"value": value}, "subject": subject})()

    assert _nonfinite_from([_A("grad_norm", 12, float("inf"))]) == ["grad_norm Inf from step 12"]
    assert _nonfinite_from([_A("loss", 30, float("nan")), _A("grad_norm", 30, float("nan"))]) == ["NaN from step 30"]
