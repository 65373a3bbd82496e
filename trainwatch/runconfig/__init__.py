"""The run's own configuration, as its log prints it: facts that advice can be fitted to.

`read(text)` gives a RunConfig: each fact (micro batch, sequence length, attention, precision, gradient
checkpointing, FSDP or ZeRO stage, reshard, max_grad_norm, LR, warmup, optimizer...) with its value, the
key the run used for it and where it was said; and the advice the framework itself printed (`advice`).
Nothing here is guessed: a fact the log does not state is absent, and fixes that depend on it stay general.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from trainwatch.runconfig import facts as catalogue
from trainwatch.runconfig.advice import Advice, find_advice
from trainwatch.runconfig.scan import Pair, occurrences, pairs

__all__ = ["Advice", "Fact", "RunConfig", "read"]

_KEYS = frozenset(k for spec in catalogue.SPECS for k in spec.keys + spec.weak)
_DS_ZERO = re.compile(r""""zero_optimization"\s*:\s*\{[^{}]*?"stage"\s*:\s*"?([0-3])\b""", re.S)
_DS_BF16 = re.compile(r""""(bf16|fp16)"\s*:\s*\{\s*"enabled"\s*:\s*(true|false)\b""", re.I)


@dataclass(frozen=True)
class Fact:
    """One fact: its value, the key the run named it by, and where (a dump's name, or the shape).

    `value` is read for the advice (`full` recompute is on: True; `torch.bfloat16` is bf16); `logged` is
    the value as the log printed it, which is what a reader is shown: a fact shown must be findable in
    the log as written, never a reading of it (`recompute_granularity true` where the log says `full`)."""

    value: Any
    key: str
    where: str
    line: int = 0
    logged: str = ""  # empty only for a Fact made by hand

    def __post_init__(self) -> None:
        if self.logged.count("(") != self.logged.count(")"):  # a nested repr cut at its first comma
            object.__setattr__(self, "logged", "")  # (`FSDPConfig(use_orig_params=True`): shown by value

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "key": self.key, "from": self.where, "logged": self.logged}


_LORA_MARK = re.compile(r"(?i)\b(?:q?lora|peft)\b|\btrainable%|"
                        r"\blora_(?:r|rank|alpha|dim)\b['\"]?\s*[:=]\s*['\"]?[1-9]")
"""What a run that trains adapters prints: the words (PEFT's own module paths, `LoRA adapters`, its
`trainable%`), or a LoRA rank or alpha that is set. A `lora_rank=8` beside `train_type=full` is a default:
the tuner decides."""
_NOT_ADAPTERS = frozenset({"full", "freeze", "none"})
_HF_TRAINER_MARK = re.compile(r"\*{5} Running training \*{5}|\bTrainingArguments\(|\bSeq2SeqTrainingArguments\b|"
                              r"\bper_device_train_batch_size\b|\btransformers\.trainer\b")
"""What the HF Trainer (and the trainers built on it: TRL, LLaMA-Factory, Axolotl) prints: its banner, its
arguments' dump, or its own argument names."""
RL_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("llm", re.compile(r"(?i)completions/|\breward_std\b|frac_reward_zero_std|\brewards/\w|num_generations|"
                       r"\bgrpo\b|actor_rollout_ref|response_length/")),
    ("value", re.compile(r"(?i)exploration_rate|\bepsilon_(?:start|end|decay|greedy)|replay[_ ]buffer|"
                         r"target_update|\bDQN\b|learning_starts|\bq_values?\b")),
    ("policy", re.compile(r"(?i)\bapprox_kl\b|\bclip_range\b|\bexplained_variance\b|\bentropy_loss\b|"
                          r"policy_gradient_loss|\bPPO\b|\bA2C\b")),
)
"""The RL algorithm a log shows, first match wins: an LLM trained by RL (GRPO, PPO on completions: its
completions and reward metrics), a value-based agent (DQN: exploration rate, replay buffer, target
network), or a policy-gradient agent in an environment (PPO, A2C)."""


@dataclass
class RunConfig:
    facts: dict[str, Fact] = field(default_factory=dict)
    advice: list[Advice] = field(default_factory=list)
    lora_mark: bool = False
    """The log shows LoRA/PEFT in its words (`_LORA_MARK`), whatever its tuner setting says."""
    rl: str | None = None
    """The RL algorithm's kind the log shows (`RL_KINDS`: llm, value, policy), None when it shows none."""
    hf_trainer: bool = False
    """The log shows the HF Trainer at work (`_HF_TRAINER_MARK`): its argument names fit the run."""

    def get(self, name: str) -> Any:
        f = self.facts.get(name)
        return f.value if f is not None else None

    def shown(self, name: str) -> str:
        """The fact's value as the log printed it (`full`, `torch.bfloat16`, `1.0`), for any text a reader
        is shown; the reading (`get`) is for deciding. Empty when the log does not state the fact."""
        f = self.facts.get(name)
        if f is None:
            return ""
        if f.logged:
            return f.logged
        return ("true" if f.value else "false") if isinstance(f.value, bool) else str(f.value)

    def key(self, name: str, default: str = "") -> str:
        f = self.facts.get(name)
        return f.key if f is not None else default

    @property
    def precision(self) -> str | None:
        p = self.get("precision")
        if self.get("bf16") is True:
            return "bf16"
        if self.get("fp16") is True:
            return "fp16"
        return p if isinstance(p, str) else None

    @property
    def quantized(self) -> bool | None:
        bits = self.get("quant_bits")
        if isinstance(bits, int) and bits in (2, 3, 4, 8):
            return True
        flags = [self.get("load_in_4bit"), self.get("load_in_8bit")]
        if True in flags:
            return True
        return False if False in flags or bits is not None else None

    @property
    def adapters(self) -> bool:
        """Whether the log shows the run trains LoRA/PEFT adapters: advice about a LoRA rank or PEFT
        wiring fits only such a run. The tuner setting decides where the log gives one; else the marks."""
        tuner = self.get("tuner")
        if isinstance(tuner, str):
            return tuner.lower() not in _NOT_ADAPTERS
        return self.lora_mark

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {name: f.to_dict() for name, f in self.facts.items()}
        if self.advice:
            out["advice"] = [a.to_dict() for a in self.advice]
        return out


def read(text: str) -> RunConfig:
    keys = occurrences(text, _KEYS)
    found = pairs(text, keys)
    cfg = RunConfig()
    for spec in catalogue.SPECS:
        fact = _choose(spec, found)
        if fact is not None:
            cfg.facts[spec.name] = fact
    _from_json_sections(text, cfg)
    cfg.advice = find_advice(text, keys)
    cfg.lora_mark = _LORA_MARK.search(text) is not None
    cfg.hf_trainer = _HF_TRAINER_MARK.search(text) is not None
    cfg.rl = next((kind for kind, rx in RL_KINDS if rx.search(text)), None)
    return cfg


def _choose(spec: catalogue.FactSpec, found: list[Pair]) -> Fact | None:
    """The most trusted reading of a fact: own names before weak ones, then the shape's trust, then the
    last said. The same name given different values in places trusted alike (an RL config's actor and
    critic sections, attempts with different settings) leaves the fact unknown. For a switch with several
    names (`any_on`), a reading that turns it on wins: warmup_steps=0 beside warmup_ratio=0.1 is unused."""
    best: tuple[tuple[int, ...], Fact] | None = None
    said: dict[tuple[tuple[int, ...], str], set[Any]] = {}  # values per (tier, key): two differing is doubt
    for p in found:
        key = p.key.replace("-", "_")
        if key in spec.keys:
            rank = 1
        elif key in spec.weak:
            rank = 0
        else:
            continue
        value = spec.parse(p.raw)
        if value is None:
            continue
        nonzero = 1 if not spec.any_on or value else 0
        order = (rank, nonzero, p.trust, p.pos)
        said.setdefault((order[:3], key), set()).add(value)
        if best is None or order > best[0]:
            best = (order, Fact(value, key, p.where, p.line, p.raw))
    if best is None or len(said[(best[0][:3], best[1].key)]) > 1:
        return None  # one name, several values at the same trust (an actor's and a critic's LR): unsure
    return best[1]


def _from_json_sections(text: str, cfg: RunConfig) -> None:
    """What a DeepSpeed JSON config says in nested sections: the ZeRO stage and `"bf16": {"enabled": true}`."""
    if "zero_stage" not in cfg.facts or cfg.facts["zero_stage"].key == "deepspeed":
        found = list(_DS_ZERO.finditer(text))
        if found:
            m = found[-1]
            cfg.facts["zero_stage"] = Fact(int(m.group(1)), "zero_optimization.stage", "JSON config",
                                           logged=m.group(1))
    for m in _DS_BF16.finditer(text):
        name = m.group(1).lower()
        if name not in cfg.facts:
            cfg.facts[name] = Fact(m.group(2).lower() == "true", f"{name}.enabled", "JSON config",
                                  logged=m.group(2))
