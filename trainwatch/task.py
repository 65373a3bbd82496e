"""What kind of training a log comes from (pretraining, fine-tuning, RL, vision), from the evidence in it.

The task decides the preset, and so the ranges the level rules use: a final loss of 4 is normal when
pretraining from scratch and far too high for a chat fine-tune. The decision is made before the data
is fed, from each source's detection sample (`head`), and is kept simple enough to print: every clue
is a (task, weight, reason) and the task with the most weight wins; with no clue, fine-tuning.

Clues, strongest first: RL and EBFT metric keys, an RL trainer's config; detection losses, mAP and
segmentation metrics (vision); Megatron's `lm loss` and token counters, and a first loss near ln(vocab)
(pretraining, unless the run is a vision one); words in banners.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from trainwatch import adapters
from trainwatch.model import Sample
from trainwatch.names import Canonicalizer
from trainwatch.rules.base import SourceState


class _Clue:
    """A clue's pattern, with literals at least one of which every match contains. A sample holding none
    of them (most samples, for most clues) is not searched: `re` crawls through alternations at tens of
    MB/s, and a detection sample is a few hundred KB, a tenth of a second for the lot. Literals of a
    case-blind pattern (`(?i)`) are lower case and looked for in the folded sample (`_folded`)."""

    def __init__(self, pattern: str, *needles: str) -> None:
        self.pattern = re.compile(pattern)
        self.needles = needles
        self.blind = bool(self.pattern.flags & re.IGNORECASE)

    def _may(self, text: str) -> bool:
        hay = _folded(text) if self.blind else text
        return any(n in hay for n in self.needles)

    def search(self, text: str) -> re.Match[str] | None:
        return self.pattern.search(text) if self._may(text) else None

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self.pattern.finditer(text) if self._may(text) else iter(())


@functools.lru_cache(maxsize=4)
def _folded(text: str) -> str:
    """The sample folded so that every letter a case-blind `re` takes for an ASCII one is that letter:
    case folding does so but for the Turkish dotted and dotless i (U+0130 folds to `i` and a combining
    dot, U+0131 stays); dropping the dot and mapping U+0131 to `i` can only make more literals appear,
    never fewer."""
    return text.casefold().replace("\u0307", "").replace("\u0131", "i")


TASK_PRESET = {"pretrain": "pretrain", "sft": "sft", "rl": "grpo", "ebft": "ebft", "vision": "vision"}
TASK_NAMES = {"pretrain": "pretraining", "sft": "fine-tuning", "rl": "reinforcement learning",
              "ebft": "EBFT", "vision": "vision"}

_EBFT = _Clue(r"ebft/", "ebft/")
_RL = _Clue(r"reward_std|frac_reward_zero_std|rewards/|completions/mean_length|['\"]reward['\"]|"
            r"clip_ratio/|\bcritic/|\bactor/(?:pg_loss|entropy)",
            "reward", "completions/mean_length", "clip_ratio/", "critic/", "actor/")
_PREFERENCE = _Clue(r"rewards/(?:margins|accuracies|chosen|rejected)\b|logps/(?:chosen|rejected)\b",
                    "rewards/", "logps/")
_RL_ONLY = _Clue(r"reward_std|frac_reward_zero_std|completions/|clip_ratio/|\bcritic/|\bactor/",
                 "reward_std", "frac_reward_zero_std", "completions/", "clip_ratio/", "critic/", "actor/")
_KL = _Clue(r"['\"]kl['\"]\s*:|\bkl\s*[=:]\s*-?\d|/kl\b", "kl")
_VISION = _Clue(r"box_loss|cls_loss|dfl_loss|obj_loss|seg_loss|loss_box_reg|loss_bbox|loss_cls|"
                r"loss_rpn|loss_mask|mAP50|bbox_mAP|metrics/mAP|\bmAP\b",
                "box_loss", "cls_loss", "dfl_loss", "obj_loss", "seg_loss", "loss_box_reg", "loss_bbox", "loss_cls",
                "loss_rpn", "loss_mask", "mAP")
_SEGMENTATION = _Clue(r"(?i)\bm(?:ean[_ ]?)?iou\b|\bpix(?:el)?[_ ]?acc(?:uracy)?\b", "iou", "pix")
"""A segmentation metric (mIoU, mean IoU, pixel accuracy): a dense prediction over images, however high
its summed or per-pixel loss starts."""
_RL_CONFIG = _Clue(r"\bactor_rollout_ref\b|\badv_estimator\b|\bGRPO(?:Config|Trainer)\b|\bnum_generations\b",
                   "actor_rollout_ref", "adv_estimator", "GRPO", "num_generations")
"""What only an RL trainer's configuration names: verl's actor/rollout/reference section and its advantage
estimator (GRPO, GAE, RLOO...), TRL's GRPO config and its completions per prompt. A run that crashed before
its first step logs no reward yet, but its config already says what it trains."""
_TOKENS = _Clue(r"(?i)consumed tokens|tokens per iteration|tokens per step|tokens_seen|train/TokensSeen|"
                r"num_input_tokens_seen|global_tokens", "tokens")
_LM_LOSS = _Clue(r"\blm loss\b", "lm loss")
_PRETRAIN_WORDS = _Clue(r"(?i)\bpre-?train(?:ing)?\b|\bfrom scratch\b|pretrain_gpt", "pretrain", "pre-train",
                        "from scratch")
_SFT_WORDS = _Clue(r"(?i)\bsft\b|\bfine-?tun(?:e|ing|ed)\b|\binstruction[- ]tun|\bchat template\b|\blora\b|"
                   r"\bpeft\b|\bqlora\b|trainable%", "sft", "fine", "instruction", "chat template", "lora", "peft",
                   "trainable%")
_DOWNSTREAM = _Clue(r"(?i)\b(?:bleu|rouge)(?:[-_ ]?(?:\d|l\b|lsum\b))?", "bleu", "rouge")
_IMAGE_TOPK = _Clue(r"(?i)\bacc(?:@|_top)?[15]\b|_acc[15]\b|\btop-?[15](?:[ _]acc)", "acc", "top")
_LANGUAGE = _Clue(r"(?i)\bseq(?:uence)?[ _-]?len|\bmax_seq_length\b|\bcutoff_len\b|"
                  r"\btokeni[sz]er\b(?!['\"]?\s*[:=]\s*(?:None|null)\b)|"
                  r"\bchat[ _]template\b|\bperplexity\b|\bppl\b",
                  "seq", "max_seq_length", "cutoff_len", "tokeni", "chat", "template", "perplexity", "ppl")
_NOT_LANGUAGE = _Clue(r"(?i)\bwav2vec|\bhubert\b|\bwavlm\b|\bctc\b|\baudio_(?:pre)?training\b|\baudio_finetuning\b|"
                      r"(?<![a-z])action_(?:dim|horizon|chunk|space|sequence_keys)\b|\bproprio|"
                      r"\bstable[-_ ]?diffusion|\bdreambooth\b|\bunet2dconditionmodel\b|\bsdxl\b",
                      "wav2vec", "hubert", "wavlm", "ctc", "audio_", "action_", "proprio", "stable", "dreambooth",
                      "unet2dconditionmodel", "sdxl")
"""Objectives that are not a language model's even when a tokenizer is about: speech models (wav2vec,
HuBERT, CTC), robot policies that predict actions (a VLA prompts a tokenizer, yet its loss is the
actions'), and text-to-image diffusion (Stable Diffusion, DreamBooth, SDXL: a LoRA of a UNet whose loss
is the noise prediction's MSE, with a text encoder's tokenizer beside it)."""
_KERAS = _Clue(r"Layer \(type\)\s+Output Shape\s+Param #|\bval_acc(?:uracy)?\b", "Layer (type)", "val_acc")
_LOSS = re.compile(r"""(?<![\w/])(?:lm[ _])?loss['"]?\s*[:=]\s*['"]?(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)""")

PRETRAIN_FIRST_LOSS = 6.5
"""A first loss at or above this is what a model starting from random weights gives: ln(vocab) is
9-12 for vocabularies of 8k-160k tokens. A fine-tune of a pretrained model starts far lower (1-3)."""
MAX_TOKEN_LOSS = 13.0
"""ln(vocab) stays under this for any real vocabulary (ln 400k = 12.9): a first loss above it is no
sign of training from scratch, but of a broken setup (a summed loss, wrong labels), whatever the task."""
MAX_LINES = 20_000  # lines of a detection sample parsed for the first loss


@dataclass
class TaskGuess:
    """The chosen task, its preset, and why (each reason is one clue, in words)."""

    task: str = "sft"
    reasons: list[str] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)
    precision: dict[str, str] = field(default_factory=dict)  # source name -> fp16/bf16 from its banner
    llm: dict[str, bool] = field(default_factory=dict)
    """Source name -> whether it trains a large language model, where the sample says (see `llm`)."""
    vocab: dict[str, int] = field(default_factory=dict)  # source name -> the vocabulary size its config gives

    @property
    def preset(self) -> str:
        return TASK_PRESET[self.task]

    @property
    def name(self) -> str:
        return TASK_NAMES[self.task]

    def why(self) -> str:
        return "; ".join(self.reasons) if self.reasons else "no clue for another task, the default"


@dataclass
class SourceSample:
    """What the task guess reads of one source: its name, format and detection sample."""

    name: str
    format: str
    head: str
    head_start: int | None = None
    """How many characters at the start of `head` are the file's own start, unbroken (None: all of it)."""


@dataclass(frozen=True)
class FirstLoss:
    """The earliest training loss a detection sample holds, and whether it is the file's first: a sample
    of a long file skips most of it, so the earliest loss it holds past its head may be logged much later
    (and a step counted within the sample is no step of the run)."""

    value: float
    first: bool

    def said(self) -> str:
        if self.first:
            return f"first loss {self.value:.3g}"
        return f"loss {self.value:.3g}, the earliest sampled past the log's head (not necessarily its first)"


def guess(sources: Iterable[SourceSample]) -> TaskGuess:
    clues: list[tuple[str, float, str]] = []
    out = TaskGuess()
    for src in sources:
        clues.extend(_clues(src))
        p = precision(src.head)
        if p:
            out.precision[src.name] = p
        lang = llm(src.head)
        if lang is not None:
            out.llm[src.name] = lang
        v = vocab_size(src.head)
        if v is not None:
            out.vocab[src.name] = v
    scores: dict[str, float] = {}
    seen: set[tuple[str, str]] = set()
    for task, weight, why in clues:
        if (task, why) in seen:
            continue  # the same clue in several sources counts once
        seen.add((task, why))
        scores[task] = scores.get(task, 0.0) + weight
    out.scores = scores
    for task in ("ebft", "rl", "vision"):  # metric keys that only these tasks log decide alone
        if scores.get(task, 0.0) >= 3:
            out.task = task
            break
    else:
        if scores.get("pretrain", 0.0) >= 2 and scores.get("pretrain", 0.0) > scores.get("sft", 0.0):
            out.task = "pretrain"
    out.reasons = [why for task, _w, why in _dedup(clues) if task == out.task]
    return out


def annotate(state: SourceState, g: TaskGuess) -> None:
    """Puts the guess where rules and the report read it: the source's facts (task, why, precision)."""
    state.facts.setdefault("task", g.task)
    state.facts.setdefault("task_why", g.why())
    p = g.precision.get(state.name)
    if p:
        state.facts.setdefault("precision", p)
    if state.name in g.llm:
        state.facts.setdefault("llm", g.llm[state.name])
    v = g.vocab.get(state.name)
    if v is not None:
        state.facts.setdefault("vocab_size", v)


def llm(text: str) -> bool | None:
    """Whether a log trains a large language model with LLM tooling (a transformer fine-tune, pretraining
    or RL): False on an image model's metrics (detection losses, mAP, top-1/top-5 accuracy) or a Keras
    run's marks (its model summary, `val_accuracy`), a speech model's or a robot policy's (`_NOT_LANGUAGE`);
    True on what only LLM runs print (a sequence length
    setting, a tokenizer, a chat template, perplexity, `lm loss`, token counters, RL metrics, fine-tuning
    words, BLEU/ROUGE); None without evidence. LLM advice (chat templates, tokens) is only given where
    this is not False, and the usual final loss of 0.5-2 only where it is True (or the trainer is an LLM's)."""
    if (_VISION.search(text) or _SEGMENTATION.search(text) or _IMAGE_TOPK.search(text) or _KERAS.search(text)
            or _NOT_LANGUAGE.search(text)):
        return False
    if (_LANGUAGE.search(text) or _LM_LOSS.search(text) or _TOKENS.search(text) or _RL.search(text)
            or _RL_CONFIG.search(text) or _SFT_WORDS.search(text) or _DOWNSTREAM.search(text)):
        return True
    return None


def _dedup(clues: list[tuple[str, float, str]]) -> list[tuple[str, float, str]]:
    seen, out = set(), []
    for c in clues:
        if (c[0], c[2]) not in seen:
            seen.add((c[0], c[2]))
            out.append(c)
    return out


def _clues(src: SourceSample) -> list[tuple[str, float, str]]:
    text = src.head
    out: list[tuple[str, float, str]] = []
    if _EBFT.search(text):
        out.append(("ebft", 5, "EBFT metrics (ebft/...)"))
    pref = _PREFERENCE.search(text)
    if pref and not _RL_ONLY.search(text):
        # DPO and its kin log implicit `rewards/...` but train like a fine-tune: no sampling, no reward spread
        out.append(("sft", 3, f"preference-tuning metrics ({pref.group(0)}), DPO-style"))
    elif (m := _RL.search(text)):
        out.append(("rl", 3, f"RL metrics ({m.group(0).strip(chr(39) + chr(34))})"))
    if _KL.search(text):
        out.append(("rl", 1, "a KL metric"))
    if (c := _RL_CONFIG.search(text)):
        out.append(("rl", 3, f"an RL trainer's config ({c.group(0)})"))
    hint = _format_hint(src.format)
    if hint in TASK_PRESET:
        out.append((hint, 3, f"the {src.format} format is {TASK_NAMES[hint]}'s"))
    found = sorted({v.group(0) for v in _VISION.finditer(text)})
    if found:
        out.append(("vision", 3 if len(found) >= 2 else 1.5, "detection losses or mAP (" + ", ".join(found[:3]) + ")"))
    seg = _SEGMENTATION.search(text)
    if seg:
        out.append(("vision", 3, f"a segmentation metric ({seg.group(0)})"))
    if src.format == "megatron" or _LM_LOSS.search(text):
        out.append(("pretrain", 1.5, "Megatron-style `lm loss` lines"))
    t = _TOKENS.search(text)
    if t:
        out.append(("pretrain", 1, f"a token counter ({t.group(0)})"))
    earliest = earliest_loss(src)
    if earliest is not None:
        first = earliest.value
        if PRETRAIN_FIRST_LOSS <= first <= MAX_TOKEN_LOSS and not (found or seg):
            # ln(vocab) is a token loss's starting level: a detector's or a segmenter's summed loss has no
            # vocabulary, and its level says nothing about training from scratch
            out.append(("pretrain", 2, f"{earliest.said()}, near ln(vocab): a model starting from scratch"))
        elif first < 4.0:
            out.append(("sft", 1, f"{earliest.said()}, far below a model starting from scratch"))
    d = _DOWNSTREAM.search(text)
    if d:
        out.append(("sft", 2.5, f"evaluated by {d.group(0)}: a model fine-tuned for a task, not pretrained"))
    w = _PRETRAIN_WORDS.search(text)
    if w:
        out.append(("pretrain", 1, f"the word '{w.group(0)}'"))
    w = _SFT_WORDS.search(text)
    if w:
        out.append(("sft", 1, f"the word '{w.group(0)}'"))
    return out


def _format_hint(fmt: str) -> str:
    try:
        return adapters.get(fmt).task_hint
    except Exception:  # an unknown or broken plugin format gives no hint
        return ""


def earliest_loss(src: SourceSample) -> FirstLoss | None:
    """The first finite training loss in the sample: read by the source's own adapter, else by a pattern.
    It is the file's `first` only when it lies in the part of the sample that is the file's own start."""
    lines = src.head.splitlines()
    start_lines = len(lines) if src.head_start is None else len(src.head[:src.head_start].splitlines())
    whole, found = _adapter_loss(src, src.head, lines)
    if found is not None:
        value, line = found
        return FirstLoss(value, src.head_start is None or (not whole and line <= start_lines))
    m = _LOSS.search(src.head)
    if m:
        v = float(m.group(1))
        if not math.isfinite(v):
            return None
        return FirstLoss(v, src.head_start is None or m.end() <= src.head_start)
    return None


def _adapter_loss(src: SourceSample, text: str, lines: list[str]) -> tuple[bool, tuple[float, int] | None]:
    """Whether the source's adapter reads whole documents, and the first finite loss it reads in `text`
    (its value and line), if any."""
    canon = Canonicalizer()
    whole = False
    try:
        adapter = adapters.get(src.format)(src.name)
        whole = adapter.whole_file
        if whole:
            records = list(adapter.parse_document(text))
        else:
            records = []
            for i, line in enumerate(lines[:MAX_LINES], 1):
                records.extend(adapter.parse(line, i))
                if any(isinstance(r, Sample) and canon(r.name) == "loss" for r in records[-8:]):
                    break
    except Exception:  # a partial document or an odd line: the pattern has a go
        records = []
    for r in records:
        if isinstance(r, Sample) and canon(r.name) == "loss" and math.isfinite(r.value):
            return whole, (r.value, r.line)
    return whole, None


_FP16 = _Clue(r"(?i)\bfp16['\"]?\s*[:=.]+\s*['\"]?True\b|--fp16\b(?!\S)|"
              r"dtype['\"]?\s*[:=]\s*['\"]?(?:torch\.)?float16\b|\bmixed_precision['\"]?\s*[:=]\s*['\"]?fp16\b|"
              r"\bprecision['\"]?\s*[:=]\s*['\"]?16(?:-mixed)?(?![\w.])", "fp16", "float16", "precision")
_BF16 = _Clue(r"(?i)\bbf16['\"]?\s*[:=.]+\s*['\"]?True\b|--bf16\b|dtype['\"]?\s*[:=]\s*['\"]?(?:torch\.)?bfloat16\b|"
              r"\bmixed_precision['\"]?\s*[:=]\s*['\"]?bf16\b", "bf16", "bfloat16")


_VOCAB = re.compile(r"""(?i)\b(?:vocab(?:ulary)?[_ ]size|n_vocab)['"]?\s*(?:[:=]|\bof\b|\bis\b)?\s*"""
                    r"""['"]?(\d{2,7})\b""")


def vocab_size(text: str) -> int | None:
    """The vocabulary size a config dump or banner gives (`vocab_size: 50257`, `found vocab_size = 65`,
    `"vocab_size": 32000`), when every mention agrees within 10%; None when none does or two disagree."""
    found = {int(m.group(1)) for m in _VOCAB.finditer(text)}
    if not found or max(found) > 1.1 * min(found):
        return None
    v = max(found)  # a tokenizer's size and its padded embedding's (50257, 50304): ln of either is the same
    return v if v >= 2 else None


def precision(text: str) -> str | None:
    """fp16 or bf16 when a banner or argument dump says so (and not both), else None."""
    fp16, bf16 = bool(_FP16.search(text)), bool(_BF16.search(text))
    if fp16 and not bf16:
        return "fp16"
    if bf16 and not fp16:
        return "bf16"
    return None
