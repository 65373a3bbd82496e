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
    assert cfg["micro_batch"] == {"value": 1, "key": "per_device_train_batch_size", "from": "Namespace",
                                  "logged": "1"}
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


def test_the_config_line_shows_each_fact_as_the_log_printed_it(tmp_path: Path) -> None:
    """A Megatron argument dump says `recompute_granularity ... full`, `params_dtype ... torch.bfloat16`,
    `clip_grad ... 1.0`: the header shows those words, not the readings the advice uses (true, bf16, 1)."""
    dump = "".join(f"  {k} {'.' * (40 - len(k))} {v}\n" for k, v in (
        ("clip_grad", "1.0"), ("lr", "1e-05"), ("micro_batch_size", "1"), ("params_dtype", "torch.bfloat16"),
        ("recompute_granularity", "full"), ("seq_length", "2048")))
    log = tmp_path / "train.log"
    log.write_text("------------------------ arguments ------------------------\n" + dump
                   + "-------------------- end of arguments ---------------------\n" + STEPS)
    doc = json.loads(check(log, "--json").stdout)
    cfg = doc["sources"][0]["config"]
    assert cfg["grad_checkpointing"]["value"] is True and cfg["grad_checkpointing"]["logged"] == "full"
    assert cfg["precision"]["value"] == "bf16" and cfg["precision"]["logged"] == "torch.bfloat16"
    [line] = [x for x in check(log).stdout.splitlines() if x.strip().startswith("config:")]
    shown = dict(part.split(" ", 1) for part in line.split("config:", 1)[1].strip().split(", "))
    assert shown == {"micro_batch_size": "1", "seq_length": "2048", "params_dtype": "torch.bfloat16",
                     "recompute_granularity": "full", "clip_grad": "1.0", "lr": "1e-05"}
    for key, value in shown.items():  # each one is found in the log as written
        assert f" {key} {'.' * (40 - len(key))} {value}\n" in log.read_text()
