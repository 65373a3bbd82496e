"""A loss printed in parts (`Train step:100/9000,Loc Loss: 0.68,Cls Loss: 0.70,Tot Loss: 0.69`): each part is a
series of its own, the total is the loss, and a part that rises while the total falls is told."""

from __future__ import annotations

import math
import random
from pathlib import Path

from rulekit import run_log

from tests.adapters.helpers import run, series
from trainwatch.adapters.keyvalue import KeyValueAdapter


def _detector_log(cls_train, cls_val, n: int = 300, every: int = 30) -> list[str]:  # type: ignore[no-untyped-def]
    """A training line every 100 steps and a validation line every `every` lines; cls_*(i) the class part."""
    rng = random.Random(7)
    lines = []
    for i in range(1, n + 1):
        loc = 0.7 * math.exp(-i / 80) + 0.25 + rng.gauss(0, 0.01)
        cls = cls_train(i) + rng.gauss(0, 0.01)
        lines.append(f"2021-03-04 10:{i // 60 % 60:02d}:{i % 60:02d},100 INFO     Train step:{100 * i}/{100 * n},"
                     f"Loc Loss: {loc:.4f},Cls Loss: {cls:.4f},Tot Loss: {(loc + cls) / 2:.4f}")
        if i % every == 0:
            vloc, vcls = 0.6 * math.exp(-i / 80) + 0.26, cls_val(i)
            lines.append(f"2021-03-04 10:{i // 60 % 60:02d}:{i % 60:02d},500 INFO     Validation: Loc Loss: "
                         f"{vloc:.4f},Cls Loss: {vcls:.4f},Tot Loss: {(vloc + vcls) / 2:.4f}")
    return lines


def test_parts_glued_by_commas_are_series_of_their_own_at_the_step_the_train_line_counts() -> None:
    recs = run(KeyValueAdapter(""), ["Train step:100/900,Loc Loss: 0.6838,Cls Loss: 0.7057,Tot Loss: 0.6948",
                                     "Train step:200/900,Loc Loss: 0.6616,Cls Loss: 0.6932,Tot Loss: 0.6774",
                                     "Validation: Loc Loss: 0.4162,Cls Loss: 0.6681,Tot Loss: 0.5422"])
    assert series(recs, "Loc Loss") == [(100, 0.6838), (200, 0.6616)]
    assert series(recs, "Cls Loss") == [(100, 0.7057), (200, 0.6932)]
    assert series(recs, "Tot Loss") == [(100, 0.6948), (200, 0.6774)]  # (the total: canonically the loss)
    assert series(recs, "validation Cls Loss") == [(200, 0.6681)]
    # a thousands separator or a list keeps its commas
    recs = run(KeyValueAdapter(""), ["step 1: loss: 0.5, tokens: 1,024", "step 2: loss: 0.4, tokens: 2,048"])
    assert series(recs, "tokens") == [(1, 1024.0), (2, 2048.0)]


def test_a_class_part_creeping_up_to_chance_while_the_total_falls_is_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text("\n".join(_detector_log(lambda i: 0.66 + 0.03 * i / 300, lambda i: 0.668 + 0.04 * i / 300))
                    + "\n")
    got = [a for a in run_log(path).alerts() if a.rule == "loss.component_rising"]
    assert len(got) == 1
    f = got[0].finding
    assert f.subject == "Cls Loss" and f.evidence["total"] == "loss" and f.evidence["also"] == ["validation Cls Loss"]
    assert f.evidence["first_third"] < f.evidence["middle_third"] < f.evidence["last_third"]
    assert "ln 2" in f.message
    # a class part that learns with the rest, or one flat within its noise, is no finding
    for name, cls in (("learns.log", lambda i: 0.3 + 0.4 * math.exp(-i / 60)), ("flat.log", lambda i: 0.5)):
        path = tmp_path / name
        path.write_text("\n".join(_detector_log(cls, cls)) + "\n")
        assert not [a for a in run_log(path).alerts() if a.rule == "loss.component_rising"], name
    # nor a VAE's KL part, which rises by design as the decoder starts to use the latent code
    path = tmp_path / "vae.log"
    path.write_text("\n".join(f"step {i}: loss: {2.0 * math.exp(-i / 50) + 0.5:.4f}, recon_loss: "
                              f"{2.0 * math.exp(-i / 50) + 0.3:.4f}, kl_loss: {0.1 + 0.2 * i / 200:.4f}"
                              for i in range(1, 201)) + "\n")
    assert not [a for a in run_log(path).alerts() if a.rule == "loss.component_rising"]

