"""`check` reports the run's configuration per source and fits the OOM fixes to it, end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

STEPS = "".join(f"Step {s}: loss={2.5 - s * 0.01:.4f}, lr=1.00e-05, grad_norm=1.{s % 7}\n" for s in range(1, 30))
HEAD = ("Namespace(per_device_train_batch_size=1, gradient_accumulation_steps=8, max_seq_length=8192, "
        "attn_implementation='flash_attention_2', gradient_checkpointing=True, max_grad_norm=1.0, bf16=True)\n")
OOM = ("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "79.18 GiB of which 1.40 GiB is free.\n")


def check(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.run([sys.executable, "-m", "trainwatch", "check", str(path), *extra], capture_output=True,
                          text=True, env=env, timeout=120)


def test_config_facts_per_source_and_fitted_oom_fixes(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(HEAD + STEPS + OOM)
    proc = check(log, "--json")
    doc = json.loads(proc.stdout)
    cfg = doc["sources"][0]["config"]
    assert cfg["micro_batch"] == {"value": 1, "key": "per_device_train_batch_size", "from": "Namespace"}
    assert cfg["seq_len"]["value"] == 8192 and cfg["grad_checkpointing"]["value"] is True
    [oom] = [f for f in doc["findings"] if f["id"] == "oom.cuda"]
    text = "\n".join(oom["fixes"])
    assert "Halve the micro batch" not in text and "Enable gradient checkpointing" not in text
    assert "Use flash attention" not in text
    assert "max_seq_length 8192 -> 4096" in text
    plain = check(log).stdout
    assert "config: per_device_train_batch_size 1, gradient_accumulation_steps 8, max_seq_length 8192" in plain


def test_a_log_without_a_config_has_an_empty_one_and_the_fixes_as_written(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(STEPS + OOM)
    doc = json.loads(check(log, "--json").stdout)
    assert doc["sources"][0]["config"] == {}
    [oom] = [f for f in doc["findings"] if f["id"] == "oom.cuda"]
    assert oom["fixes"][0].startswith("Halve the micro batch and double gradient accumulation")
