"""The catalogue of run facts: which keys each trainer uses for it, and how its value reads.

A fact is one thing the advice depends on (the micro batch, the sequence length, whether gradient
checkpointing is on, ...). Frameworks name it differently: `per_device_train_batch_size` (HF),
`micro_batch_size` (Megatron, axolotl), `train_micro_batch_size_per_gpu` (DeepSpeed). The first keys of
a fact are its own names; a `weak` key (a bare `batch_size`, `lr`) counts only when no own name is there.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Parse = Callable[[str], Any]
_NONE = {"", "none", "null", "nil", "auto", "[]", "{}"}


def as_int(raw: str) -> int | None:
    v = as_float(raw)
    return int(v) if v is not None and v.is_integer() and v >= 0 else None


def as_float(raw: str) -> float | None:
    try:
        v = float(raw.strip().lower().replace("_", ""))
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def as_bool(raw: str) -> bool | None:
    t = raw.strip().lower()
    if t in ("true", "1", "yes", "on", "full", "selective", "unsloth", "true_"):
        return True
    if t in ("false", "0", "no", "off", "none", "null", "disabled"):
        return False
    return None


def as_text(raw: str) -> str | None:
    t = raw.strip()
    return None if t.lower() in _NONE or t.startswith(("{", "[")) or "(" in t or "=" in t else t


TUNERS = frozenset({"full", "freeze", "lora", "qlora", "dora", "adalora", "longlora", "loha", "lokr", "ia3", "vera",
                    "boft", "llamapro", "adapter", "prefix", "prompt", "p_tuning", "reft", "bone"})


def as_tuner(raw: str) -> str | None:
    """How the weights are trained (full, lora, qlora...); other words under these keys (DeepSpeed's
    autotuning `tuner_type: gridsearch`) are not a fine-tuning method."""
    t = raw.strip().lower()
    return t if t in TUNERS else None


def as_attention(raw: str) -> str | None:
    """flash_attention_2, sdpa, eager... as written; a bare flag (`use_flash_attn: true`) reads as `flash`."""
    b = as_bool(raw)
    if b is not None:
        return "flash" if b else None
    t = as_text(raw)
    if t is None or t.lower() in ("disabled",):
        return None
    return t


def as_precision(raw: str) -> str | None:
    t = raw.strip().lower().removeprefix("torch.")
    if t in ("bf16", "bfloat16", "bf16-mixed", "bf16-true"):
        return "bf16"
    if t in ("fp16", "float16", "half", "16", "16-mixed"):
        return "fp16"
    if t in ("fp32", "float32", "32", "32-true", "no"):
        return "fp32"
    return None


_SETTINGS_REPR = re.compile(r"[A-Z][A-Za-z0-9_]*\(")


def as_fsdp(raw: str) -> str | None:
    """The sharding strategy TrainingArguments' `fsdp` names (`full_shard auto_wrap`), or None when off;
    a JSON file path (ms-swift's override) reads as on, with the details in fsdp_config."""
    t = raw.strip().lower()
    if t in _NONE or as_bool(t) is False or _SETTINGS_REPR.match(raw.strip()):
        return None  # (`FSDPConfig(use_orig_params=True, ...)`: FSDP's settings, printed whether it is used or not)
    if as_bool(t) is True:
        return "on"
    for word in ("full_shard", "shard_grad_op", "hybrid_shard", "no_shard", "fsdp2", "fsdp"):
        if word in t:
            return word
    return "on" if t.endswith(".json") else None


_ZERO_NAME = re.compile(r"(?:zero|_z)_?([0-3])(?![0-9])")


def as_zero(raw: str) -> int | None:
    """A ZeRO stage from a number or a config name (`zero3`, `ds_z3_config.json`)."""
    v = as_int(raw)
    if v is not None:
        return v if v <= 3 else None
    m = _ZERO_NAME.search(raw.lower())
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class FactSpec:
    name: str
    keys: tuple[str, ...]
    parse: Parse
    weak: tuple[str, ...] = ()  # generic names, used only when none of `keys` is in the log
    any_on: bool = False
    """Several names of one switch (checkpoint_activations, recompute_granularity; warmup_steps and
    warmup_ratio): a reading that turns it on beats one that leaves it off, as the trainer takes it."""


SPECS: tuple[FactSpec, ...] = (
    FactSpec("micro_batch", ("per_device_train_batch_size", "micro_batch_size", "train_micro_batch_size_per_gpu",
                             "micro_batch"), as_int, weak=("batch_size",)),
    FactSpec("grad_accum", ("gradient_accumulation_steps", "grad_accum", "accumulate_grad_batches",
                            "gradient_accumulation"), as_int),
    FactSpec("seq_len", ("max_seq_length", "max_length", "cutoff_len", "sequence_len", "seq_length", "max_seq_len",
                         "model_max_length"), as_int),
    FactSpec("attention", ("attn_implementation", "attn_impl", "flash_attn", "use_flash_attn", "flash_attention",
                           "use_flash_attention_2", "attention_implementation", "sdp_attention"), as_attention),
    FactSpec("precision", ("torch_dtype", "mixed_precision", "precision", "params_dtype"), as_precision),
    FactSpec("bf16", ("bf16",), as_bool),
    FactSpec("fp16", ("fp16",), as_bool),
    FactSpec("grad_checkpointing", ("gradient_checkpointing", "grad_checkpointing", "use_gradient_checkpointing",
                                    "checkpoint_activations", "recompute_granularity", "recompute_activations"),
             as_bool, any_on=True),
    FactSpec("fsdp", ("fsdp",), as_fsdp),
    FactSpec("fsdp_version", ("fsdp_version",), as_int),
    FactSpec("activation_checkpointing", ("activation_checkpointing", "fsdp_activation_checkpointing"), as_bool),
    FactSpec("reshard", ("reshard_after_forward", "fsdp_reshard_after_forward", "fsdp_reshard"), as_bool),
    FactSpec("zero_stage", ("zero_optimization_stage", "zero_stage", "deepspeed"), as_zero),
    FactSpec("max_grad_norm", ("max_grad_norm", "clip_grad", "gradient_clipping", "clip_max_norm", "grad_clip",
                               "gradient_clip_val", "clip_grad_norm"), as_float),
    FactSpec("lr", ("learning_rate",), as_float, weak=("lr",)),
    FactSpec("warmup", ("warmup_ratio", "warmup_steps", "lr_warmup_fraction", "lr_warmup_iters", "warmup_iters",
                        "lr_warmup_steps", "num_warmup_steps", "warmup_epochs"), as_float, any_on=True),
    FactSpec("optimizer", ("optim", "optimizer"), as_text),
    FactSpec("quant_bits", ("quantization_bit", "quant_bits"), as_int),
    FactSpec("load_in_4bit", ("load_in_4bit",), as_bool),
    FactSpec("load_in_8bit", ("load_in_8bit",), as_bool),
    FactSpec("tuner", ("tuner_type", "train_type", "finetuning_type", "adapter", "peft_type"), as_tuner),
    # a classifier's classes: 1/K is the accuracy of a guess (quality.not_learning's chance level)
    FactSpec("num_classes", ("num_classes", "n_classes", "nb_classes", "num_labels", "n_labels", "number_of_classes",
                             "num_class", "nclass", "nclasses"), as_int),
)
