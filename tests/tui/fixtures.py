"""A small engine fed by hand: deterministic runs for Pilot and snapshot tests.

The rules are range rules built in code (no presets needed), so these tests do not move when the
shipped presets change. The raw lines are in the HF Trainer console format, our own numbers.
"""

from __future__ import annotations

import math

from trainwatch.config import Config, RuleSpec
from trainwatch.engine import Engine
from trainwatch.model import Event, EventKind, Sample, Severity
from trainwatch.view.model import EngineModel

SOURCE = "runs/sft/train.log"
FIXES_LOSS = ("Lower the learning rate (halve it) and restart from the last good checkpoint.",
              "Turn on gradient clipping (max_grad_norm=1.0).",
              "Check the batch at this step for empty or corrupt samples.")


def config() -> Config:
    rules = {
        "loss.too_high": RuleSpec(id="loss.too_high", severity=Severity.CRITICAL, family="loss",
                                  title="Loss exploded", fixes=FIXES_LOSS, metric="loss", above=5.0),
        "grad.too_high": RuleSpec(id="grad.too_high", severity=Severity.WARNING, family="loss",
                                  title="Gradient norm spike", fixes=("Clip gradients (max_grad_norm=1.0).",),
                                  metric="grad_norm", above=10.0),
    }
    return Config(preset="sft", rules=rules, inhibit=[])


def clock() -> float:
    return 1000.0


def model() -> EngineModel:
    eng = Engine(config(), clock=clock)
    eng.source(SOURCE, "hf_console")
    m = EngineModel(eng)
    m.info_lines.append("no GPU telemetry: NVML not found")
    return m


def loss_at(step: int) -> float:
    return 2.5 * math.exp(-step / 40) + 0.6 + 0.05 * math.sin(step * 1.7)


def feed_step(m: EngineModel, step: int, *, loss: float | None = None, grad: float | None = None,
              extra: int = 0) -> None:
    loss = loss_at(step) if loss is None else loss
    grad = (1.0 + 0.2 * math.cos(step)) if grad is None else grad
    lr = 5e-5 * min(1.0, step / 10)
    values = {"loss": loss, "grad_norm": grad, "learning_rate": lr, "epoch": round(step / 100, 2)}
    for i in range(extra):
        values[f"extra/metric_{i:02d}"] = math.sin(step / (i + 2))
    line = "{" + ", ".join(f"'{k}': {v!r}" for k, v in values.items()) + "}"
    with m.lock:
        m.feed_line(SOURCE, step, line)
        for k, v in values.items():
            m.engine.feed(Sample(k, v, step=step, source=SOURCE, line=step))
        if step % 20 == 0:
            m.engine.feed(Sample("eval_loss", loss_at(step) + 0.1, step=step, source=SOURCE, line=step))
        m.engine.feed(Event(EventKind.PROGRESS, source=SOURCE, line=step, fields={"step": step, "total": 200}))


def healthy(steps: int = 60) -> EngineModel:
    m = model()
    for s in range(1, steps + 1):
        feed_step(m, s)
    return m


def critical(steps: int = 60) -> EngineModel:
    """A healthy run whose loss explodes at step 50, then goes NaN at 55."""
    m = model()
    for s in range(1, steps + 1):
        if s == 50:
            feed_step(m, s, loss=9.5, grad=42.0)
        elif s == 55:
            feed_step(m, s, loss=float("nan"), grad=float("nan"))
        elif s > 50:
            feed_step(m, s, loss=8.0 + s / 100, grad=30.0)
        else:
            feed_step(m, s)
    return m
