"""LR and loss-scale rules that know what schedules and precisions do on purpose."""

from __future__ import annotations

import math

from rulekit import Run

from trainwatch.model import EventKind, Severity


def cosine(step: int, total: int, peak: float = 1e-5, warmup: int = 10) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    frac = (step - warmup) / (total - warmup)
    return round(peak * 0.5 * (1 + math.cos(math.pi * frac)), 8)  # printed to 8 places, as loggers do


def test_cosine_to_zero_at_the_end_without_a_known_total_is_not_lr_zero():
    r = Run()
    total = 2000
    for s in range(1, total + 1):
        r.step(s, lr=cosine(s, total))
    assert any(cosine(s, total) == 0.0 for s in range(total - 20, total))  # the printed LR does reach 0
    assert "lr.zero" not in r.fired()


def test_a_decay_that_ends_halfway_is_lr_zero_dated_where_it_began():
    r = Run()
    for s in range(1, 400):
        r.step(s, lr=cosine(s, 200) if s < 200 else 0.0)
    a = r.alert("lr.zero")
    assert a.first_step is not None and 190 <= a.first_step <= 200
    assert a.finding.evidence["step"] == a.first_step


def test_an_abrupt_drop_to_zero_is_lr_zero_even_at_the_end_when_no_total_is_known():
    r = Run()
    for s in range(1, 101):
        r.step(s, lr=1e-4 if s < 99 else 0.0)
    assert "lr.zero" not in r.fired()  # only two zero points: `for: 3`
    r.step(101, lr=0.0)
    a = r.alert("lr.zero")
    assert (a.first_step, a.found_step) == (99, 101)  # dated where it began, fired when `for` was met
    assert a.to_dict()["found_step"] == 101


def test_reduce_on_plateau_halvings_are_by_design():
    r = Run()
    lr = 5e-3
    for epoch in range(63):
        if epoch in (23, 31, 38, 54, 59, 62):
            lr /= 2
        r.step(epoch, lr=lr, epoch=float(epoch), loss=2.0 - epoch * 0.01)
    assert not [f for f in r.fired() if f.startswith("lr.")]


def test_no_warmup_not_judged_on_epoch_level_logs_and_said_once_elsewhere():
    epochs = Run()
    for e in range(20):
        epochs.step(e, epoch=float(e), lr=0.07 * (1 - e / 25))  # YOLO's warmup bias decays by design
    assert "lr.no_warmup" not in epochs.fired()
    rows = Run()  # train and validation rows of one epoch share its step (Lightning's per-epoch CSV)
    for e in range(20):
        rows.step(e * 100, epoch=float(e), lr=0.07 * (1 - e / 25))
        rows.step(e * 100, epoch=float(e))
    assert "lr.no_warmup" not in rows.fired()
    keras = Run()  # Keras' CSVLogger: the epoch is the step, a validation result on every row
    for e in range(20):
        keras.step(e, lr=5e-3, loss=1.9 - e * 0.05, eval_loss=1.4 - e * 0.02)
    assert "lr.no_warmup" not in keras.fired()
    sparse = Run()  # per-step records with an evaluation now and then: judged
    for s in range(20):
        sparse.step(s, lr=5e-3, loss=1.9 - s * 0.05)
        if s % 10 == 9:
            sparse.step(s, eval_loss=1.4)
    assert "lr.no_warmup" in sparse.fired()
    lightning = Run()  # one row per logged step, the epoch column a whole number that rarely moves
    for s in range(1, 60):
        lightning.step(s, epoch=float(s // 20), lr=3e-4 * (1 - s / 100))
    assert lightning.fired().count("lr.no_warmup") == 1
    steps = Run()
    for s in range(1, 60):
        steps.step(s, epoch=s / 100, lr=3e-4 * (1 - s / 100))
    assert steps.fired().count("lr.no_warmup") == 1
    assert steps.alert("lr.no_warmup").count == 1


def test_constant_loss_scale_of_one_is_bf16_not_an_overflow():
    r = Run("pretrain")
    for s in range(1, 200):
        r.step(s, **{"loss scale": 1.0, "lm loss": 9.0 - s * 0.01})
    assert "fp16.overflow" not in r.fired()


def test_constant_low_loss_scale_with_an_fp16_banner_is_judged():
    r = Run()
    r.engine.source("run.log").facts["precision"] = "fp16"
    for s in range(1, 5):
        r.step(s, **{"loss scale": 1.0})
    assert "fp16.overflow" in r.fired()


def test_overflow_messages_are_fp16_evidence_in_themselves():
    r = Run()
    for s in range(100, 108):
        r.event(EventKind.ERROR, step=s, signature="fp16.overflow", loss_scale=1024.0)
    assert "fp16.overflow" in r.fired()


def test_an_lr_printed_as_zero_while_the_loss_falls_is_rounding_not_a_fault():
    """`lr={lr:.4f}` prints a 3e-5 LR as 0.0000 on every line; the falling loss says it is not 0."""
    r = Run()
    for s in range(1, 60):
        r.step(s, loss=3.0 * 0.97 ** s, lr=0.0)
    assert "lr.zero" not in r.fired()
    r2 = Run()
    for s in range(1, 80):
        r2.step(s, loss=3.0, lr=0.0)
    assert r2.alert("lr.zero").severity is Severity.CRITICAL


def test_an_lr_printed_with_few_decimals_and_rounded_to_zero_is_no_finding():
    """`lr:0.0001` then `lr:0.0000` (`{lr:.4f}` of a warmup from 0 and a cosine's tail): the log cannot
    tell a small LR from 0, so nothing is said; printed in full, the same drop is lr.zero, and so is one
    constant LR printed with four decimals cut to 0 (no sign of rounding: no levels, no 0 before it)."""
    rounded, full, cut = Run(), Run(), Run()
    for s in range(1, 400):
        lr = cosine(s, 400, peak=1.4e-4)
        rounded.step(s, lr=round(lr, 4), loss=3.0 - s / 400)
        full.step(s, lr=lr if s < 200 else 0.0, loss=3.0 - s / 400)
        cut.step(s, lr=1e-4 if s < 200 else 0.0, loss=3.0 - s / 400)
    assert "lr.zero" not in rounded.fired()
    assert full.alert("lr.zero").severity is Severity.CRITICAL
    assert cut.alert("lr.zero").first_step == 200


def test_a_step_schedule_down_to_one_round_value_then_zero_is_lr_zero():
    """0.01, then 0.001, then 0 (or 1e-4, 1e-5, 0): round values printed as they are, one level each, not a
    schedule coming down through the print's last decimal; the 0 is a real 0, and a critical."""
    for levels in ((0.01, 0.001), (1e-4, 1e-5)):
        r = Run()
        for s in range(1, 701):
            lr = levels[0] if s <= 300 else levels[1] if s <= 400 else 0.0
            r.step(s, lr=lr, loss=3.0)
        a = r.alert("lr.zero")
        assert a is not None and a.severity is Severity.CRITICAL and a.first_step == 401
