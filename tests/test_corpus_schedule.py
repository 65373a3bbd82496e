"""On real logs: schedules and precisions that are by design give no finding."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_task import CORPUS, check_json


@pytest.mark.parametrize("name, args, forbidden", [
    ("megatron-ds-qwen7b-pretrain-500it.log", ("--format", "megatron"), {"fp16.overflow"}),
    ("megatron-ds-ckpt-save-disk-full.log", ("--format", "megatron"), {"fp16.overflow"}),
    ("swift-gemma4-fsdp2-full-epoch.log", ("--format", "hf_console"), {"lr.zero", "lr.schedule"}),
    ("keras-csvlogger-en-jv-lstm.csv", (), {"lr.no_warmup", "lr.schedule", "lr.zero"}),
    ("yolov8-fire-smoke-results.csv", (), {"lr.no_warmup", "lr.schedule", "lr.zero"}),
])
def test_by_design_is_not_a_finding(name: str, args: tuple[str, ...], forbidden: set[str]) -> None:
    path: Path = CORPUS / name
    if not path.exists():
        pytest.skip(f"{path} not present (the shared corpus is only on machines that have it)")
    doc = check_json(path, *args)
    assert not forbidden & {f["id"] for f in doc["findings"]}
