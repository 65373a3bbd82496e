"""A followed file that no adapter knows yet is read for errors, and re-detected as it grows."""

from __future__ import annotations

from pathlib import Path

from trainwatch.engine import Engine
from trainwatch.live.source import LiveSource
from trainwatch.model import AlertState

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "logs" / "hf_healthy.log"
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"


def banner(size: int) -> str:
    lines = [f"[INFO] config.{n}: value_{n} (from defaults.yaml)" for n in range(size // 40 + 1)]
    return "\n".join(lines) + "\n"


def test_banner_first_then_metrics_switches_to_the_metric_format(tmp_path: Path, engine: Engine) -> None:
    p = tmp_path / "run.log"
    p.write_text(banner(40_000) + OOM)  # a long start no adapter recognises, with one error in it
    notices: list[str] = []
    src = LiveSource(p, fmt=None, from_end=False, ring=50, notice=notices.append)
    src.poll(engine)
    assert src.opened is not None and src.opened.fallback
    assert any("errors only" in n for n in notices)
    oom = [a for a in engine.alerts() if a.rule == "oom.cuda"]
    assert len(oom) == 1 and oom[0].state is AlertState.FIRING

    with open(p, "a") as f:  # the trainer starts logging: the file grows by a third
        f.write(EXAMPLE.read_text())
    src.poll(engine)
    src.poll(engine)
    assert src.opened.format == "hf_console" and not src.opened.fallback
    assert any("now recognised as hf_console" in n for n in notices)
    assert engine.sources[str(p)].step is not None  # the metrics were read, from the start of the file
    assert [a.count for a in engine.alerts() if a.rule == "oom.cuda"] == [1]  # the replay did not repeat it
    ring = [n for n, _ in src.lines]
    assert ring == sorted(set(ring))  # the line ring holds each line once


def test_small_unknown_file_waits_for_more_lines(tmp_path: Path, engine: Engine) -> None:
    p = tmp_path / "run.log"
    p.write_text(banner(1_000))
    notices: list[str] = []
    src = LiveSource(p, fmt=None, from_end=False, ring=50, notice=notices.append)
    assert src.poll(engine) == 0 and src.opened is None and not src.gave_up
    assert any("waiting for more lines" in n for n in notices)


def test_a_file_waited_for_gets_its_config_read_when_it_appears(tmp_path: Path, engine: Engine) -> None:
    p = tmp_path / "run.log"
    src = LiveSource(p, fmt=None, from_end=False, ring=50, notice=lambda _n: None)
    assert src.poll(engine) == 0  # not there yet
    p.write_text("Namespace(per_device_train_batch_size=1, gradient_checkpointing=True)\n" + EXAMPLE.read_text()
                 + OOM)
    src.poll(engine)
    src.poll(engine)
    [oom] = [a for a in engine.alerts() if a.rule == "oom.cuda"]
    assert not any(f.startswith(("Halve the micro batch", "Enable gradient checkpointing")) for f in oom.fixes)
