"""The loss trend rules on real logs from other people's runs (../shared/corpus, when present):
healthy runs get nothing from them, the LoRA run that diverges is dated where its loss began to rise,
and overfitting is found on sparse evaluations shaped like a real YOLO run's.

The corpus is third-party data and never copied here: each test skips, saying why, without it."""

from __future__ import annotations

import csv
import math
import random
from pathlib import Path

import pytest
from rulekit import Clock, Run

from trainwatch import runner
from trainwatch.model import AlertState, Severity
from trainwatch.session import make_engine

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
MINE = ("loss.spike", "loss.diverging", "loss.plateau", "loss.flat_from_start", "loss.overfit")


def _corpus(name: str) -> Path:
    p = CORPUS / name
    if not p.exists():
        pytest.skip(f"{name} is not in ../shared/corpus (the real-log corpus is not checked out here)")
    return p


def _episodes(path: Path, fmt: str | None = None) -> list:
    """Every alert of this file as it fired, in order (an alert that resolves and fires again is told
    once per episode), fed the way `check` feeds it."""
    src = runner.open_source(path, fmt)
    clock = Clock()
    eng = make_engine([src], None, None, clock=clock)
    fired: list = []
    eng.listeners.append(lambda c: fired.append((c.alert.rule, c.alert.severity, c.alert.first_step,
                                                 dict(c.alert.finding.evidence), c.alert.finding.message))
                         if c.state is AlertState.FIRING else None)
    text = path.read_text(encoding="utf-8", errors="replace")
    parser = src.parser
    records = (parser.document(text) if parser.adapter.whole_file
               else [r for i, line in enumerate(text.splitlines(), 1) for r in parser.feed(line, i)])
    for r in records + parser.finish():
        clock.t += 1.0
        eng.feed(r)
    eng.finish()
    return fired


@pytest.mark.parametrize("name,fmt", [
    ("swift-gemma4-fsdp2-full-epoch.log", "hf_console"),  # noisy per-step loss, cosine to 0
    ("slm-lightning-metrics-v0.csv", None),  # 140k steps, flattening near the end
    ("deepspeed-hf-mini-phi3-pretrain.log", None),  # flat over the last 20% while the LR anneals
    ("megatron-ds-qwen7b-pretrain-500it.log", "megatron"),
    ("chaos-economy-grpo-trainer_state.json", None),
    ("chaos-economy-grpo-unsloth-console.log", None),
    ("keras-csvlogger-en-jv-lstm.csv", None),  # val_loss still falling at its minimum
    ("keras-fit-verbose2-lstm.txt", None),  # five trainings one after another
    ("llm-pretrain-custom.log", None),
    ("lmsys-hf-trainer-console-tqdm.log", None),
])
def test_healthy_real_logs_get_no_loss_trend_finding(name, fmt):
    got = [(rule, step, msg) for rule, sev, step, _, msg in _episodes(_corpus(name), fmt)
           if rule in MINE and sev > Severity.INFO]
    assert got == []


def test_lora_divergence_is_dated_where_the_loss_began_to_rise():
    """Noisy loss around 6.9, then 9.2 -> 12.3 -> 15.8 -> 26.4 by step 119: critical from about step 90,
    not at the last episode (step ~2560); the later episodes (from ~1181, ~1446) are their own."""
    eps = [e for e in _episodes(_corpus("lyric-lora-diverging-trainer_state.json")) if e[0] == "loss.diverging"]
    assert eps and eps[0][1] is Severity.CRITICAL
    _rule, _, began, ev, msg = eps[0]
    assert 85 <= began <= 92, msg
    assert ev["step"] == began and f"step {began}" in msg  # message and evidence tell the same moment
    assert began < ev["detected_step"] <= 125
    later = [e[2] for e in eps[1:]]
    assert any(1170 <= s <= 1200 for s in later) and any(1420 <= s <= 1460 for s in later), later
    for _, _, s, ev, msg in eps:
        assert ev["step"] == s and f"step {s}" in msg


def _yolo(name: str) -> tuple[list[float], list[float]]:
    """Total train and val loss per epoch from an Ultralytics results.csv (box + cls + dfl)."""
    with _corpus(name).open(newline="") as fh:
        rows = list(csv.reader(fh))
    head = [h.strip() for h in rows[0]]
    train = [sum(float(v) for h, v in zip(head, r) if h.startswith("train/")) for r in rows[1:] if r]
    val = [sum(float(v) for h, v in zip(head, r) if h.startswith("val/")) for r in rows[1:] if r]
    return train, val


def _feed_epochs(train: list[float], val: list[float]) -> Run:
    r = Run()
    for epoch, (t, v) in enumerate(zip(train, val), start=1):
        r.step(epoch, loss=t)
        r.step(epoch, eval_loss=v)
    r.finish()
    return r


def test_real_yolo_run_whose_val_loss_never_returns_is_overfitting():
    """Val loss lowest at epoch 2 and never back, train loss falling over 102 epochs."""
    r = _feed_epochs(*_yolo("yolov8-wheat-weed-results.csv"))
    a = r.alert("loss.overfit")
    assert a.first_step == 2 and a.finding.evidence["step"] == 2
    assert a.finding.evidence["detected_step"] <= 12
    assert r.fired().count("loss.overfit") == 1  # one episode: it never returns


def test_real_yolo_run_with_noisy_falling_val_loss_is_not_overfitting():
    r = _feed_epochs(*_yolo("yolov8-fire-smoke-results.csv"))
    assert "loss.overfit" not in r.fired()


def test_synthetic_yolo_shaped_overfit_is_dated_at_the_eval_minimum():
    """The same shape without the corpus: val lowest at epoch 2, then noisy and higher; train falls."""
    rnd = random.Random(3)
    train = [3.46 - 1.1 * e / 100 + rnd.gauss(0, 0.06) for e in range(100)]
    val = [3.9, 3.66] + [3.95 + 0.15 * math.sin(e / 7) + rnd.gauss(0, 0.07) for e in range(98)]
    r = _feed_epochs(train, val)
    a = r.alert("loss.overfit")
    assert a.first_step == 2
    later = a.finding.evidence["later_evals"]
    assert len(later) >= 2 and all(v > 3.66 for _, v in later)


def test_val_loss_still_falling_at_its_minimum_is_not_overfitting():
    """Keras-like: val loss falls and flattens, its minimum near the end, tiny wiggles after it."""
    rnd = random.Random(4)
    train = [1.9 * math.exp(-e / 15) + 0.26 for e in range(63)]
    val = [0.6 * math.exp(-e / 10) + 0.8 + rnd.gauss(0, 0.002) for e in range(63)]
    r = _feed_epochs(train, val)
    assert "loss.overfit" not in r.fired()


def test_few_evals_need_a_clean_climb():
    """Four evals give no noise estimate: a climb in a row well above the minimum is overfitting, a
    wobble of the same size is not."""
    def run(evals: list[float]) -> Run:
        r = Run()
        for e, ev in enumerate(evals):
            for s in range(e * 10 + 1, e * 10 + 11):
                r.step(s, loss=2.2 - s * 0.02)
            r.step(e * 10 + 10, eval_loss=ev)
        return r

    a = run([2.0, 1.8, 1.85, 1.95]).alert("loss.overfit")
    assert a.first_step == 20 and a.finding.evidence["detected_step"] == 40
    assert "loss.overfit" not in run([2.0, 1.8, 1.9, 1.85]).fired()
    assert "loss.overfit" not in run([2.0, 1.8, 1.82, 1.85]).fired()  # +2.8%: too small to tell from noise
