"""Fixes fitted to the run: the log's own advice first, nothing the run already does, its own numbers.

A rule's fixes are written for any run ("Halve the micro batch", "Clip the global grad-norm at 1.0").
Read against the run's configuration (trainwatch.runconfig) they can say more, or must say less: a
micro batch of 1 cannot be halved; a run that clips at 1.0 already does not need to be told to; a
sequence length of 16384 halves to 8192, not "1024 instead of 2048". A fix whose fact the log does not
state stays as written. Each fix is matched by what it says (so a user's own fixes are fitted too), then
the list loses repeats: a fix whose every topic an earlier fix already covers is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from trainwatch.runconfig import RunConfig

MEMORY_FACTS = frozenset({"micro_batch", "grad_accum", "seq_len", "attention", "grad_checkpointing",
                          "activation_checkpointing", "reshard", "zero_stage", "fsdp", "quant_bits",
                          "load_in_4bit", "load_in_8bit"})
STABILITY_FACTS = frozenset({"max_grad_norm", "lr", "warmup", "precision", "bf16", "fp16"})
ADVICE_FOR = {"oom": MEMORY_FACTS, "loss": STABILITY_FACTS}  # which advice is a lead for which family

USUAL_LR = {"adam": (1e-5, 1e-3), "lion": (1e-6, 3e-4), "sgd": (1e-3, 0.5), "adafactor": (1e-4, 1e-2)}
"""Peak learning rates each optimiser family is usually run with; an LR ten times above the top is far off."""
_OPTIM_NAMES = {"adam": "AdamW", "lion": "Lion", "sgd": "SGD", "adafactor": "Adafactor"}
FAR = 10.0
LR_NOT_TINY = 1e-5  # a peak LR at least this large answers "is the LR 0 or tiny?"
_LR_NOT_ZERO = re.compile(r"(?i)\bLR is not 0 or tiny\b")


@dataclass(frozen=True)
class RunView:
    """What the fitter knows of one run: its configuration, whether it trains a large language model (None:
    no evidence either way), and the peak LR its log shows (when the config does not say)."""

    config: RunConfig
    llm: bool | None = None
    logged_lr: float | None = None
    logged_warmup: int | None = None
    """The steps over which the logged LR rose to its peak at the run's start (None: the log shows none)."""
    hf_trainer: bool = False
    """The run is the HF Trainer's (its format, or what its log prints): only then are fixes told in its
    argument names (load_best_model_at_end, save_total_limit); a YOLO, Keras or fairseq run has none."""
    default_optimizer: str = ""
    """The optimiser the run uses when its log names none: `adam` where its trainer defaults to AdamW
    (the HF Trainer, an LLM run); empty where it could as well be SGD."""


def fit(family: str, fixes: tuple[str, ...], run: RunView) -> tuple[str, ...]:
    """The fixes for a finding of `family`, fitted to `run`, leads first, without repeats."""
    out: list[str] = _leads(family, run)
    for fix in fixes:
        fitted: str | None = fix
        for step in _STEPS:
            fitted = step(fitted, run) if fitted else None
        if fitted:
            out.append(fitted)
    return tuple(_without_repeats(out))


# -- leads -------------------------------------------------------------------------------------------

def _leads(family: str, run: RunView) -> list[str]:
    """The framework's advice about a fact of this family's kind, unless the run already follows it."""
    wanted = ADVICE_FOR.get(family, frozenset())
    out = []
    for a in run.config.advice:
        if a.fact not in wanted:
            continue
        if a.value is not None and run.config.get(a.fact) == a.value:
            continue  # already done
        now = run.config.facts.get(a.fact)
        state = f" (the run has {now.key}: {run.config.shown(a.fact)})" if now is not None else ""
        out.append(f"The log's own advice: {a.text}{state}")
    return out


# -- one step per topic: each returns the fix as fitted, or None to drop it ------------------------------

Step = Callable[[str, RunView], "str | None"]
_HALVE_BATCH = re.compile(r"(?i)^halve the micro batch")
_GRAD_CKPT = re.compile(r"(?i)^enable gradient checkpointing")
_SHORTEN = re.compile(r"(?i)^shorten the sequences")
_FLASH = re.compile(r"(?i)^use flash attention")
_QUANT = re.compile(r"(?i)^load the model quantised")
_SHARD = re.compile(r"(?i)^shard or offload optimi[sz]er states")
_CLIP = re.compile(r"(?i)(?:\s*[,;]\s*|\s+and\s+|\s+or\s+)?\bclip the (?:global )?grad-norm at 1(?:\.0)?"
                   r"(?:\s*\((?:max_grad_norm)[^)]*\))?(?:\s+and\s+)?")
_CLIP_PHRASE = re.compile(r"(?i)\bclip the (?:global )?grad-norm at 1(?:\.0)?(?:\s*\(max_grad_norm[^)]*\))?")
_CLIP_ALONE = re.compile(r"(?i)^clip the (?:global )?grad-norm at 1(?:\.0)?")
_LOWER_LR = re.compile(r"(?i)\blower the (peak )?LR( 2-5x)?")
_RAISE_LR = re.compile(r"(?i)\braise the LR( 2-5x)?")
_WARMUP = re.compile(r"(?i)\bwarm ?up over 5-10% of the steps(?:\s*\(warmup_ratio: [^)]*\))?|\blengthen warmup")
_TO_BF16 = re.compile(r"(?i)switch fp16 to bf16|switch to bf16|train in bf16 instead of fp16")
_BARE_BF16 = re.compile(r"(?i)switch fp16 to bf16")  # said as a fact about the run, at the fix's start
_ACCUM = re.compile(r"(?i)^raise gradient accumulation")
_LLM_WORDS = re.compile(r"(?i)\b(?:lora|qlora|peft|full fine-tune|chat template|label masking|prompt(?: tokens)?|"
                        r"tokeni[sz]er|sample packing|max_seq_length|padding tokens|the sequences|pad token|quantised|"
                        r"target tokens)\b")
_PAREN = re.compile(r"\s*\(([^()]*)\)")
_LORA = re.compile(r"(?i)\b(?:q?lora|peft)\b")


def _micro_batch(fix: str, run: RunView) -> str | None:
    if not _HALVE_BATCH.search(fix):
        return fix
    mb = run.config.get("micro_batch")
    if mb is None:
        return fix
    if mb <= 1:
        return None  # a micro batch of 1 cannot be halved
    accum = run.config.get("grad_accum")
    acc = (f", {run.config.key('grad_accum')} {run.config.shown('grad_accum')} -> {accum * 2}"
           if isinstance(accum, int) and accum > 0 else "")
    return (f"Halve the micro batch ({run.config.key('micro_batch')} {run.config.shown('micro_batch')} -> {mb // 2}) "
            "and double gradient "
            f"accumulation{acc and ' (' + acc[2:] + ')'} (same effective batch)")


def _grad_ckpt(fix: str, run: RunView) -> str | None:
    if _GRAD_CKPT.search(fix) and (run.config.get("grad_checkpointing") is True
                                   or run.config.get("activation_checkpointing") is True):
        return None
    return fix


def _shorten(fix: str, run: RunView) -> str | None:
    if not _SHORTEN.search(fix):
        return fix
    n = run.config.get("seq_len")
    if isinstance(n, int) and n >= 2:
        return f"Shorten the sequences ({run.config.key('seq_len')} {run.config.shown('seq_len')} -> {n // 2})"
    return fix


def _flash(fix: str, run: RunView) -> str | None:
    if not _FLASH.search(fix):
        return fix
    att = run.config.get("attention")
    if att is None:
        return fix
    if "flash" in str(att).lower() or str(att).lower() in ("fa2", "fa3"):
        return None
    return f"Use flash attention ({run.config.key('attention')} {run.config.shown('attention')} -> flash_attention_2)"


def _quantised(fix: str, run: RunView) -> str | None:
    """A quantised model cannot have all its weights trained: a full fine-tune is told of adapters."""
    if not _QUANT.search(fix):
        return fix
    if run.config.quantized:
        return None
    tuner = run.config.get("tuner")
    if isinstance(tuner, str) and tuner.lower() == "full":
        return (f"Train adapters (LoRA, or QLoRA on a 4-bit model) instead of every weight "
                f"({run.config.key('tuner')} {run.config.shown('tuner')})")
    return fix


def _shard(fix: str, run: RunView) -> str | None:
    """The next step from where the run's sharding stands: FSDP that keeps gathered layers reshards
    them; ZeRO-1/2 moves to 3; fully sharded runs offload."""
    if not _SHARD.search(fix):
        return fix
    cfg = run.config
    stage, fsdp, reshard = cfg.get("zero_stage"), cfg.get("fsdp"), cfg.get("reshard")
    if fsdp is not None:
        if reshard is False:
            return (f"Reshard after forward ({cfg.key('reshard')} false -> true): with it off, FSDP keeps every "
                    "layer's gathered parameters until backward; else offload parameters to CPU")
        return "Offload parameters and optimiser states to CPU (FSDP cpu offload)"
    if isinstance(stage, int):
        if stage >= 3:
            return "Offload optimiser states and parameters to CPU (ZeRO-3 offload_optimizer / offload_param)"
        return f"Shard more: ZeRO stage {stage} -> 3, or offload optimiser states to CPU"
    return fix


def _clip(fix: str, run: RunView) -> str | None:
    """Clipping at 1.0 is advised only to a run that does not clip that tightly already."""
    if not _CLIP.search(fix):
        return fix
    v = run.config.get("max_grad_norm")
    if v is None:
        return fix
    key = run.config.key("max_grad_norm")
    if 0 < v <= 1.0:
        if _CLIP_ALONE.search(fix):
            return None
        rest = _CLIP.sub("", fix, count=1).strip(" ,;")
        return rest[:1].upper() + rest[1:] if rest and not rest.endswith(":") else None
    was = run.config.shown("max_grad_norm")
    said = f"clipping is off: {key} {was}" if v <= 0 else f"{key} {was} -> 1.0"
    m = _CLIP_PHRASE.search(fix)
    assert m is not None
    head = re.sub(r"\s*\(max_grad_norm[^)]*\)$", "", fix[:m.end()])
    rest = fix[m.end():]
    return head + f" ({said})" + (rest if rest.strip() else "")


def _lower_lr(fix: str, run: RunView) -> str | None:
    m = _LOWER_LR.search(fix)
    if m is None:
        return fix
    lr, key = _peak_lr(run)
    if lr is None:
        return fix
    note = f" ({key} {_lr_as_logged(lr, run)} -> {_num(float(f'{lr / 3:.2g}'))})"
    far = _far_above(lr, run)
    fixed = fix[:m.end()] + note + fix[m.end():]
    return f"{far}: {fixed[0].lower()}{fixed[1:]}" if far else fixed


def _raise_lr(fix: str, run: RunView) -> str | None:
    m = _RAISE_LR.search(fix)
    if m is None:
        return fix
    lr, key = _peak_lr(run)
    if lr is None or lr <= 0:
        return fix
    return fix[:m.end()] + f" ({key} {_lr_as_logged(lr, run)} -> {_num(float(f'{lr * 3:.2g}'))})" + fix[m.end():]


def _warmup(fix: str, run: RunView) -> str | None:
    m = _WARMUP.search(fix)
    if m is None:
        return fix
    w = run.config.get("warmup")
    if w is None:
        if run.logged_warmup is not None:  # the log shows one: a longer one is the lead, not "warm up"
            said = f"lengthen warmup (the logged LR rose to its peak over {run.logged_warmup} steps)"
            out = fix[:m.start()] + said + fix[m.end():]
            return out[0].upper() + out[1:] if m.start() == 0 else out
        return fix
    key = run.config.key("warmup")
    if w <= 0:
        return fix[:m.end()] + f" ({key} is 0)" + fix[m.end():]
    longer = f"{min(w * 2, 0.2):g}" if "ratio" in key or "fraction" in key else f"{w * 2:g}"
    said = f"lengthen warmup ({key} {run.config.shown('warmup')} -> {longer})"
    out = fix[:m.start()] + said + fix[m.end():]
    return out[0].upper() + out[1:] if m.start() == 0 else out


def _lr_shown(fix: str, run: RunView) -> str | None:
    """"Check that the LR is not 0 or tiny" where the log shows an LR well above that: the log answered it."""
    if _LR_NOT_ZERO.search(fix) is not None and run.logged_lr is not None and run.logged_lr >= LR_NOT_TINY:
        return None
    return fix


def _bf16(fix: str, run: RunView) -> str | None:
    """Advice to leave fp16 fits a run in fp16. A run the log shows in bf16 or fp32 is not told it; a
    run whose precision the log does not say is told it as a condition, never as a fact about it."""
    if not _TO_BF16.search(fix):
        return fix
    precision = run.config.precision
    if precision == "fp16":
        return fix
    if precision == "bf16":
        if re.search(r"(?i)\bfp32\b", fix):
            return "Try a short run in fp32 to rule precision out (the run is already bf16)"
        return None
    if precision == "fp32":
        return None
    m = _BARE_BF16.match(fix)
    return f"If it trains in fp16, switch to bf16{fix[m.end():]}" if m else fix


def _accum(fix: str, run: RunView) -> str | None:
    a = run.config.get("grad_accum")
    if not _ACCUM.search(fix) or not isinstance(a, int) or a <= 0:
        return fix
    return f"{fix} ({run.config.key('grad_accum')} {run.config.shown('grad_accum')} -> {a * 2})"


def _task(fix: str, run: RunView) -> str | None:
    """Language-model advice (chat templates, tokens) only where the run is, or may be, one; LoRA/PEFT
    advice only where the log shows adapters are trained. A fix about them is dropped; an aside about
    them in parentheses loses that item ("(full fine-tune 1e-5 to 5e-5, LoRA 1e-4 to 3e-4)")."""
    if run.llm is not False and run.config.adapters:
        return fix
    words = _LLM_WORDS if run.llm is False else _LORA
    fix = _PAREN.sub(lambda m: _aside_without(m.group(0), m.group(1), words), fix)
    return None if words.search(fix) else fix


def _aside_without(whole: str, inside: str, words: re.Pattern[str]) -> str:
    """A parenthesised aside without its items that speak of `words`; none left, no aside."""
    items = [i for i in inside.split(", ") if not words.search(i)]
    if len(items) == len(inside.split(", ")):
        return whole
    return whole[:whole.index("(")] + f"({', '.join(items)})" if items else ""


_HF_ARGS = re.compile(r"\b(?:load_best_model_at_end|metric_for_best_model|save_total_limit|save_only_model|"
                      r"resume_from_checkpoint|gradient_checkpointing_kwargs)\b")
"""Arguments of the HF Trainer alone: another framework keeps checkpoints and resumes by other names."""


def _framework(fix: str, run: RunView) -> str | None:
    """The HF Trainer's argument names only for its runs: elsewhere an aside naming one loses that item
    ("keep the best checkpoint (load_best_model_at_end)" -> "keep the best checkpoint"), and a fix that
    still names one is dropped, as it tells the run to set what it does not have."""
    if run.hf_trainer or not _HF_ARGS.search(fix):
        return fix
    fix = _PAREN.sub(lambda m: _aside_without(m.group(0), m.group(1), _HF_ARGS), fix)
    return None if _HF_ARGS.search(fix) else fix


_ALGORITHM = re.compile(r"(?i)^(value-based|policy-gradient|LLM) RL:\s*")
_KIND = {"value-based": "value", "policy-gradient": "policy", "llm": "llm"}


def _algorithm(fix: str, run: RunView) -> str | None:
    """A fix for one kind of RL ("Value-based RL: ...") fits only a run of that kind: said plainly where
    the log shows the algorithm, dropped where it shows another, kept with its prefix (a condition) where
    it shows none, unless the run is known to be, or not to be, a language model."""
    m = _ALGORITHM.match(fix)
    if m is None:
        return fix
    kind = _KIND[m.group(1).lower()]
    shown = run.config.rl
    if shown is not None:
        if shown != kind:
            return None
        rest = fix[m.end():]
        return rest[:1].upper() + rest[1:]
    if run.llm is not None and (kind == "llm") != run.llm:
        return None  # no language model is trained by DQN, and an LLM's RL is not an agent's in a game
    return fix


_STEPS: tuple[Step, ...] = (_algorithm, _task, _framework, _micro_batch, _grad_ckpt, _shorten, _flash, _quantised,
                            _shard, _clip, _bf16, _lower_lr, _raise_lr, _warmup, _accum, _lr_shown)


def _peak_lr(run: RunView) -> tuple[float | None, str]:
    lr = run.config.get("lr")
    if isinstance(lr, (int, float)):
        return float(lr), run.config.key("lr")
    if run.logged_lr is not None:
        return run.logged_lr, "peak LR"
    return None, ""


def _lr_as_logged(lr: float, run: RunView) -> str:
    """The LR as the config printed it when it came from there (`1e-05`), else the logged peak's number."""
    return run.config.shown("lr") if run.config.get("lr") is not None else _num(lr)


def _far_above(lr: float, run: RunView) -> str:
    """'LR 7 is far above AdamW's usual 1e-5..1e-3' when it is, by the run's optimiser; when neither the
    log nor the trainer names one, only an LR far above every common optimiser's range is called so."""
    optim = str(run.config.get("optimizer") or run.default_optimizer).lower()
    family = next((f for f in USUAL_LR if f in optim), None) if optim else None
    if family is not None:
        low, high = USUAL_LR[family]
        if lr <= FAR * high:
            return ""
        return f"LR {_num(lr)} is far above {_OPTIM_NAMES[family]}'s usual {_num(low)}..{_num(high)}"
    if optim or lr <= FAR * max(high for _, high in USUAL_LR.values()):
        return ""
    return f"LR {_num(lr)} is far above the usual range of any common optimiser (AdamW 1e-5..1e-3, SGD up to 0.5)"


def _num(v: float) -> str:
    """1e-5 as people write it (not 1e-05); 0.01 to 9999 as decimals."""
    if v != 0 and (abs(v) < 0.01 or abs(v) >= 1e4):
        mant, exp = f"{v:.1e}".split("e")
        return f"{mant.rstrip('0').rstrip('.')}e{int(exp)}"
    return f"{v:g}"


# -- repeats ---------------------------------------------------------------------------------------------

_TOPICS = {
    "lr_down": re.compile(r"(?i)\blower (?:the )?(?:peak )?(?:LR|learning rate)|far above"),
    "lr_up": re.compile(r"(?i)\braise the (?:LR|learning rate)"),
    "clip": re.compile(r"(?i)\bclip(?:ping)? the (?:global )?grad"),
    "warmup": re.compile(r"(?i)\bwarm ?up\b|\bwarmup\b"),
    "bf16": re.compile(r"(?i)\bbf16\b"),
    "fp32": re.compile(r"(?i)\bfp32\b"),
    "anomaly": re.compile(r"(?i)set_detect_anomaly"),
    "batch": re.compile(r"(?i)\b(?:inspect|look at|find) the (?:failing )?batch|\bbatch of (?:that|the failing) step"),
    "data": re.compile(r"(?i)\bcheck the data\b"),
    "stop_early": re.compile(r"(?i)\bstop earlier\b"),
    "weight_decay": re.compile(r"(?i)\braise weight decay\b"),
    "more_data": re.compile(r"(?i)\bget more (?:\(or more varied\) )?(?:training )?data\b"),
}


OPPOSITE = {"lr_up": "lr_down", "lr_down": "lr_up"}
"""Topics whose fixes contradict each other: told one, a fix of the other is not told as well."""
_CONDITIONAL = re.compile(r"(?i)^(?:if|when|where|unless)\b")


def topics(fix: str) -> list[str]:
    """The topics a fix speaks of, in the order it names them (its first is what it is about)."""
    found = [(m.start(), name) for name, rx in _TOPICS.items() if (m := rx.search(fix))]
    return [name for _, name in sorted(found)]


class Given:
    """The fixes told so far, by their words and their topics: a fix with the same words, or about what a
    fix told already covers (its first topic is covered: "Train in bf16 instead of fp16, or fp32..." after
    "With fp16, switch to bf16"), is a repeat. One finding's list uses one; a report, one per run."""

    def __init__(self) -> None:
        self.text: set[str] = set()
        self.covered: set[str] = set()

    def against(self, fix: str) -> str | None:
        """The topic told already that `fix` says the opposite of ("raise the LR" after "lower the LR"),
        None when it does not, or says it only as a condition ("If it fell slowly: raise the LR")."""
        t = topics(fix)
        opposite = OPPOSITE.get(t[0]) if t else None
        if opposite is None or opposite not in self.covered or _CONDITIONAL.match(fix):
            return None
        return opposite

    def new(self, fix: str) -> bool:
        """Whether `fix` says something not yet told; if so, it counts as told from now on."""
        norm = re.sub(r"\W+", " ", fix).strip().lower()
        t = topics(fix)
        if norm in self.text or (t and t[0] in self.covered):
            return False
        self.text.add(norm)
        self.covered.update(t)
        return True


def _without_repeats(fixes: list[str]) -> list[str]:
    """Each fix once (see Given)."""
    given = Given()
    return [fix for fix in fixes if given.new(fix)]
