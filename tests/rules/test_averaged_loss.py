"""An epoch's mean loss printed after its batch losses is its own series: the loss series stays per-step,
so "final loss" is the last batch loss the log printed, not the epoch's average (issue 23: numbers are the
log's own). A log whose only loss is an average still has it as its loss."""

from __future__ import annotations

from pathlib import Path

from rulekit import Run, run_log

from trainwatch.model import Sample


def _t5_shape(tmp_path: Path) -> Path:
    lines = ["2025-03-02 08:15:59,001 - INFO - Loading tokenizer t5-small for fine-tuning"]
    for epoch in (1, 2):
        for i in range(30):
            lines.append(f"2025-03-02 08:16:{i:02d},749 - INFO - Epoch {epoch} - Batch loss: {0.004 - i * 0.0001:.4f}")
        lines.append(f"2025-03-02 08:17:00,281 - INFO - Epoch {epoch} - Average Train Loss: 0.0123")
    p = tmp_path / "train.log"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_the_final_loss_is_the_last_batch_loss_not_the_epochs_average(tmp_path):
    eng = run_log(_t5_shape(tmp_path))
    loss = eng.store.get("loss", str(_t5_shape(tmp_path)))
    assert loss is not None and loss.last is not None
    assert abs(loss.last.value - 0.0011) < 1e-9  # the last `Batch loss`, not `Average Train Loss: 0.0123`
    assert all(abs(p.value - 0.0123) > 1e-9 for p in loss.recent)
    level = next(a for a in eng.alerts() if a.rule == "loss.level")
    assert "final loss 0.0011 at step" in level.finding.message


def test_names_synthetic_average_beside_a_per_step_loss():
    r = Run()
    for s in range(1, 40):
        r.engine.feed(Sample("step_loss", 2.0 - s * 0.01, step=s, source=r.source, line=s))
        if s % 10 == 0:
            r.engine.feed(Sample("epoch_loss", 9.9, step=s, source=r.source, line=s))
    loss = r.engine.store.get("loss", r.source)
    assert loss is not None and 9.9 not in [p.value for p in loss.recent]
    assert r.engine.store.get("epoch_loss", r.source) is not None


def test_an_average_alone_is_still_the_loss():
    r = Run()
    for s in range(1, 20):
        r.engine.feed(Sample("Avg.Loss", 2.0 - s * 0.01, step=s, source=r.source, line=s))
    assert r.engine.store.get("loss", r.source) is not None
