"""Every number a finding prints next to a step is the value the log holds at that step, or it says what
statistic it is instead ("median of 8 points"). Checked over generated logs: falling, flat, noisy,
spiking, blowing up, going NaN, with and without a grad-norm and a warmup, in the message, the evidence
(trainwatch.model.evidence_points) and the "last seen" pair of every alert."""

from __future__ import annotations

import math
import random
import re

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from rulekit import Run

from tests.examples import examples
from tests.fixtures import blowup_repro
from trainwatch.model import Alert, evidence_points

NUM = r"(?P<v>-?(?:\d+(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?|nan|NaN|inf|Inf)"
PAIRS = [re.compile(p) for p in (
    NUM + r" at step (?P<s>\d+)",
    r"step (?P<s>\d+) \(" + NUM + r"\)",
    NUM + r" \(step (?P<s>\d+)\)",
    r"at step (?P<s>\d+), value " + NUM,
)]
LABELS = re.compile(r"median|mean|average|smoothed|ema\b", re.I)

KINDS = ("fall", "flat", "noise", "spike", "blowup", "nan", "tiny", "rise", "resume")
segment = st.tuples(st.sampled_from(KINDS), st.integers(3, 40), st.floats(0.5, 20.0))


def make_log(segments: list[tuple[str, int, float]], seed: int, stride: int, warmup: bool,
             grad: bool) -> list[tuple[int, dict[str, float]]]:
    rng = random.Random(seed)
    rows: list[tuple[int, dict[str, float]]] = []
    level, g, step = 2.5, 1.0, 0
    for kind, n, scale in segments:
        if kind == "resume":  # the step goes back: a resume, with the loss a little higher
            step = max(0, step - int(scale) * stride * 5)
            level *= 1 + scale / 5
        for i in range(n):
            step += stride
            if kind == "fall":
                level *= 0.97
            elif kind == "rise":
                level *= 1.0 + scale / 100.0
            elif kind == "blowup" and i == 0:
                level, g = level * (2 + scale), g * 10 * scale
            elif kind == "blowup":
                level, g = level * 3, g * 3
            elif kind == "tiny":
                level = 0.01
            v = level * (1 + rng.gauss(0, 0.05 if kind != "noise" else 0.3))
            if kind == "spike" and i == n // 2:
                v *= scale
            if kind == "nan" and i >= n // 2:
                v = math.nan
            metrics = {"loss": v, "lr": 3e-4 * (min(1.0, len(rows) / 10) if warmup else 1.0)}
            if grad:
                metrics["grad_norm"] = g * (1 + rng.gauss(0, 0.1)) if v == v else math.nan
            if len(rows) % 10 == 9:  # an evaluation every ten points, rising once the train loss is low
                metrics["eval_loss"] = level * (1.1 + 0.02 * max(0, len(rows) - 60) / 10)
            rows.append((step, metrics))
        if kind in ("blowup", "tiny"):
            level, g = max(0.05, level), 1.0
            level = min(level, 1e6)
    return rows


def _close(printed: float, logged: float) -> bool:
    if math.isnan(printed) or math.isnan(logged):
        return math.isnan(printed) and math.isnan(logged)
    if math.isinf(printed) or math.isinf(logged):
        return printed == logged
    return abs(printed - logged) <= 1e-3 * max(abs(logged), 1e-12) + 1e-12


def _logged(rows: dict[int, list[float]], step: int, value: float) -> bool:
    """Whether some metric of the log holds `value` at `step` (a resumed run logs a step twice)."""
    return any(_close(value, v) for v in rows.get(step, []))


def by_step(rows: list[tuple[int, dict[str, float]]]) -> dict[int, list[float]]:
    out: dict[int, list[float]] = {}
    for step, metrics in rows:
        out.setdefault(step, []).extend(metrics.values())
    return out


def violations(alerts: list[Alert], rows: dict[int, list[float]]) -> list[str]:
    bad = []
    for a in alerts:
        f = a.finding
        for name, step, value, label in evidence_points(f.evidence):
            if not label and not _logged(rows, step, value):
                bad.append(f"{a.rule}: evidence {name}={value} at step {step} is not the logged value")
        stat = f.evidence.get("last_stat")
        if (a.last_step is not None and a.last_value is not None and not stat
                and not _logged(rows, a.last_step, a.last_value)):
            bad.append(f"{a.rule}: last seen at step {a.last_step}, value {a.last_value} is not logged")
        text = a.to_dict()["message"]
        for pattern in PAIRS:
            for m in pattern.finditer(text):
                before = text[max(0, m.start() - 45):m.start("v")]
                if LABELS.search(before):
                    continue
                step, value = int(m.group("s")), float(m.group("v"))
                if not _logged(rows, step, value):
                    bad.append(f"{a.rule}: message says {m.group(0)!r}, but the log holds "
                               f"{rows.get(step)} at step {step}: {text}")
        bad += _named(a, text, rows)
    return bad


def _named(a: Alert, text: str, rows: dict[int, list[float]]) -> list[str]:
    """'tokens_per_sec 316.3' in a finding dated at a step reads as the metric's value at that step: it is
    the logged one, or a label says what statistic it is, or a step of its own follows it (an incident's
    'loss 1.204 -> 3.611 (steps 24 -> 25)' is checked by its own test)."""
    f = a.finding
    metric = f.evidence.get("metric") if isinstance(f.evidence.get("metric"), str) else f.subject
    if not metric or f.step is None:
        return []
    bad = []
    for m in re.finditer(r"(?<![\w/])" + re.escape(metric) + r" (?:= )?" + NUM + r"(?![\w.])", text):
        after = text[m.end():m.end() + 24]
        if LABELS.search(text[max(0, m.start() - 45):m.start()]) or re.match(r" (?:at step|\(step|->)", after):
            continue
        since = re.match(r" from step (\d+)", after)  # 'loss NaN from step 90': the value at that step
        if not _logged(rows, int(since.group(1)) if since else f.step, float(m.group("v"))):
            bad.append(f"{a.rule}: message says {m.group(0)!r} in a finding at step {f.step}, where the log "
                       f"holds {rows.get(f.step)}: {text}")
    return bad


def run(rows: list[tuple[int, dict[str, float]]]) -> list[Alert]:
    r = Run(fmt="hf_console")  # a language model's trainer: every rule that states a number may speak
    for step, metrics in rows:
        r.step(step, **metrics)
    r.finish()
    return r.engine.alerts()


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow],
          phases=(Phase.explicit, Phase.reuse, Phase.generate))  # an engine per example: shrinking is slow
@given(st.lists(segment, min_size=1, max_size=6), st.integers(0, 10**6), st.sampled_from((1, 1, 5, 10)),
       st.booleans(), st.booleans())
def test_every_step_value_pair_a_finding_prints_is_the_logs_own(segments, seed, stride, warmup, grad):
    rows = make_log(segments, seed, stride, warmup, grad)
    assert violations(run(rows), by_step(rows)) == []


def test_the_issue_blowup_prints_only_its_own_numbers():
    """The four wrong numbers of issue 23: the rise began at 25 (3.611), the low is a median and says so,
    the latest value is step 29's 292.5, and the final loss is NaN with the last finite one named."""
    rows = [(s, {"loss": loss, "lr": 3e-4, "grad_norm": g}) for s, loss, g in blowup_repro.rows()]
    alerts = run(rows)
    assert violations(alerts, by_step(rows)) == []
    div = next(a for a in alerts if a.rule == "loss.diverging")
    assert "began rising at step 25 (3.611)" in div.finding.message
    assert "the median of 8 points up to step 24: 1.39" in div.finding.message
    assert (div.last_step, div.last_value) == (29, 292.4586)
    level = next(a for a in alerts if a.rule == "loss.level")
    assert "final loss NaN at step 40; last finite 292.5 at step 29" in level.finding.message


FINAL = re.compile(r"final loss (?:is )?(?P<v>\S+?)[,;) ]")


def _final_losses(path) -> tuple[set[str], float]:
    """Every value a report calls the final loss, and the last logged loss as the report writes it."""
    import io
    from pathlib import Path

    from rulekit import run_log

    from trainwatch.sinks import report

    eng = run_log(Path(path))
    doc = report.document(eng, [report.SourceInfo(str(path), "x")], "sft", True)
    out = io.StringIO()
    report.write_text(doc, out)
    last = doc["sources"][0]["metrics"]["loss"]["last"]
    return {m.group("v") for m in FINAL.finditer(out.getvalue())}, float(last)


def test_a_trainer_state_report_has_one_final_loss_the_last_logged():
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "runs" / "hf_high_lr" / "trainer_state.json"
    finals, last = _final_losses(path)
    assert finals and all(abs(float(v) - last) <= 1e-3 * abs(last) for v in finals), (finals, last)


def test_a_final_loss_that_is_nan_says_so(tmp_path):
    p = tmp_path / "blowup.log"  # (a fine-tune's banner: its final loss is judged against the usual range)
    p.write_text("\n".join(["Loading tokenizer and model for fine-tuning", *blowup_repro.lines()]) + "\n")
    finals, _ = _final_losses(p)
    assert finals == {"NaN"}


def test_an_alerts_latest_value_is_the_one_logged_at_its_latest_step():
    """lr.no_warmup is about the first LR (step 1) and is found at the fifth point: the latest value it
    shows is not step 1's value under step 5's number."""
    rows = [(s, {"loss": 2.0 - 0.01 * s, "lr": 3e-4 * (1 - 0.01 * (s - 1))}) for s in range(1, 40)]
    alerts = run(rows)
    a = next(a for a in alerts if a.rule == "lr.no_warmup")
    assert a.last_value is None or _logged(by_step(rows), a.last_step, a.last_value)
    assert violations(alerts, by_step(rows)) == []


def test_a_long_plateaus_level_is_the_median_of_its_logged_points_not_of_bucket_means():
    """Past window_max points the plateau is judged on the run's bucket means; the level it shows is
    still the median of the logged points (3.0 here, where one point in ten is 3.9: the bucket means
    sit near 3.09), at the step it is shown with."""
    rows = [(s, {"loss": 3.5 - 0.01 * s if s <= 50 else (3.9 if s % 10 == 0 else 3.0)}) for s in range(1, 6001)]
    a = next(a for a in run(rows) if a.rule == "loss.plateau")
    assert a.last_step == 6000 and a.last_value == 3.0
    assert "median" in a.finding.evidence["last_stat"] and "(median of the last" in a.finding.message
    # where it began is the median of its first points, said so, and it is that median of the logged values
    m = re.search(r"of where it began \(" + NUM + r", the median of its first (?P<n>\d+) points\)", a.finding.message)
    assert m is not None, a.finding.message
    first = sorted(v["loss"] for _, v in rows[:int(m.group("n"))])
    k = len(first)
    assert _close(float(m.group("v")), (first[(k - 1) // 2] + first[k // 2]) / 2)


def test_the_headers_last_value_that_is_nan_gives_the_last_finite_one_with_its_step(tmp_path):
    """`last:` is the last logged value; when that is NaN it says so and names the last finite value and
    its step, both as logged (a loss falling, then NaN for its last ten steps)."""
    import io

    from rulekit import run_log

    from trainwatch.sinks import report

    rows = [(s, 2.5 * 0.97 ** s if s <= 50 else math.nan) for s in range(1, 61)]
    p = tmp_path / "train.log"
    p.write_text("".join(f"Step {s}: loss={v:.4f}, lr=3e-4, grad_norm={1.0 if v == v else math.nan:.3f}\n"
                         for s, v in rows))
    doc = report.document(run_log(p), [report.SourceInfo(str(p), "x")], "sft", True)
    loss = doc["sources"][0]["metrics"]["loss"]
    assert loss["last"] == "nan" and loss["last_step"] == 60
    assert (loss["last_finite_step"], loss["last_finite"]) == (50, float(f"{rows[49][1]:.4f}"))
    out = io.StringIO()
    report.write_text(doc, out)
    [line] = [x for x in out.getvalue().splitlines() if x.strip().startswith("last:")]
    m = re.search(r"loss nan \(10 non-finite; the last finite " + NUM + r" at step (?P<s>\d+)\)", line)
    assert m is not None, line
    assert int(m.group("s")) == 50 and _close(float(m.group("v")), rows[49][1])


def test_the_headers_last_value_logged_before_the_last_step_says_its_own_step(tmp_path):
    """`last:` stands beside the source's last step: a metric last logged earlier (an eval every 50 steps,
    an LR printed once in a config echo) names the step it was logged at, and one logged at the last
    step names none."""
    import io

    from rulekit import run_log

    from trainwatch.sinks import report

    p = tmp_path / "train.log"
    p.write_text("".join(f"Step {s}: loss={2.5 * 0.97 ** s:.4f}, grad_norm=1.000\n"
                         + (f"Step {s}: eval_loss={2.0 - s / 100:.4f}\n" if s % 50 == 0 else "")
                         for s in range(1, 71)))
    doc = report.document(run_log(p), [report.SourceInfo(str(p), "x")], "sft", True)
    assert doc["sources"][0]["metrics"]["eval_loss"]["last_step"] == 50
    out = io.StringIO()
    report.write_text(doc, out)
    [line] = [x for x in out.getvalue().splitlines() if x.strip().startswith("last:")]
    m = re.search(r"eval_loss " + NUM + r" \(step (?P<s>\d+)\)", line)
    assert m is not None, line
    assert int(m.group("s")) == 50 and _close(float(m.group("v")), 1.5)
    assert "(step" not in line.split("last:")[1].split(",")[0]  # the loss, logged at the last step
