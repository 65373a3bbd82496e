"""Fixes fitted to the run: leads first, nothing the run already does, its own numbers, no repeats, and
advice that fits the task."""

from __future__ import annotations

from pathlib import Path

from rulekit import Run

from trainwatch import config, runconfig
from trainwatch.model import EventKind
from trainwatch.runconfig.fit import RunView, fit

SPECS = config.load("sft").rules
OOM = SPECS["oom.cuda"].fixes
SWIFT = "\n".join([
    "[WARNING:swift] gradient_checkpointing is enabled with FSDP2. For better performance, consider using "
    'activation_checkpointing in fsdp_config instead. Add "activation_checkpointing": true to your fsdp_config.',
    "[INFO:swift] args: SftArguments(", "attn_impl=flash_attention_2,", "fsdp=full_shard auto_wrap,",
    "fsdp_config={'fsdp_version': 2, 'reshard_after_forward': False, 'activation_checkpointing': False},",
    "gradient_checkpointing=True,", "max_length=16384,", "per_device_train_batch_size=1,",
    "gradient_accumulation_steps=1,", "max_grad_norm=1.0,", "learning_rate=1e-05,", "bf16=True,", ")"])


def view(text: str, **kw) -> RunView:  # type: ignore[no-untyped-def]
    return RunView(runconfig.read(text), **kw)


def test_the_ms_swift_oom_run_gets_its_own_lead_first_and_nothing_it_already_does() -> None:
    fixes = fit("oom", OOM, view(SWIFT))
    assert fixes[0].startswith("The log's own advice: gradient_checkpointing is enabled with FSDP2")
    text = "\n".join(fixes)
    assert "Halve the micro batch" not in text  # batch 1
    assert "Enable gradient checkpointing" not in text
    assert "Use flash attention" not in text
    assert "max_length 16384 -> 8192" in text and "1024" not in text
    assert "reshard_after_forward false -> true" in text


def test_without_a_config_the_fixes_stay_as_written() -> None:
    assert fit("oom", OOM, view("")) == OOM


def test_a_run_that_does_not_do_it_yet_is_told_with_its_numbers() -> None:
    text = "TrainingArguments(\nper_device_train_batch_size=8,\ngradient_accumulation_steps=2,\n" \
           "attn_implementation=sdpa,\ngradient_checkpointing=False,\n)"
    fixes = fit("oom", OOM, view(text))
    assert fixes[0] == ("Halve the micro batch (per_device_train_batch_size 8 -> 4) and double gradient "
                        "accumulation (gradient_accumulation_steps 2 -> 4) (same effective batch)")
    assert "Enable gradient checkpointing" in fixes
    assert "Use flash attention (attn_implementation sdpa -> flash_attention_2)" in fixes


def test_the_lead_is_not_given_when_the_run_already_follows_it() -> None:
    done = SWIFT.replace("'activation_checkpointing': False", "'activation_checkpointing': True")
    assert not any(f.startswith("The log's own advice") for f in fit("oom", OOM, view(done)))
    assert not any(f.startswith("The log's own advice") for f in fit("loss", OOM, view(SWIFT)))  # a memory lead


def test_clipping_at_one_only_when_the_run_does_not_clip_that_tightly() -> None:
    spike = SPECS["grad.spike"].fixes
    assert not any("Clip" in f for f in fit("loss", spike, view("max_grad_norm: 1.0")))
    assert not any("Clip" in f for f in fit("loss", spike, view("Namespace(clip_max_norm=0.1)")))
    assert fit("loss", spike, view("max_grad_norm: 5.0"))[0].startswith(
        "Clip the global grad-norm at 1.0 (max_grad_norm 5.0 -> 1.0)")  # as the log wrote it
    assert "clipping is off: max_grad_norm 0.0" in fit("loss", spike, view("max_grad_norm: 0.0"))[0]
    rng = fit("loss", SPECS["grad.range"].fixes, view("max_grad_norm: 1.0"))
    assert rng[0] == "Too high: lower the LR 2-5x"  # the clause it already does is cut, the rest kept


def test_the_lr_numbers_come_from_the_run() -> None:
    fixes = fit("loss", ("Lower the peak LR 2-5x",), view("learning_rate: 7\noptim: adamw_torch"))
    assert fixes == ("LR 7 is far above AdamW's usual 1e-5..1e-3: lower the peak LR 2-5x (learning_rate 7 -> 2.3)",)
    unnamed = fit("loss", ("Lower the peak LR 2-5x",), view("lr: 0.02"))
    assert unnamed == ("Lower the peak LR 2-5x (lr 0.02 -> 6.7e-3)",)  # SGD's usual for all we know
    assert fit("loss", ("Lower the peak LR 2-5x",), view("lr: 0.02", default_optimizer="adam"))[0].startswith(
        "LR 0.02 is far above AdamW's usual")
    assert fit("loss", ("Lower the peak LR 2-5x",), view("lr: 70"))[0].startswith(
        "LR 70 is far above the usual range of any common optimiser")
    logged = fit("loss", ("Lower the peak LR 2-5x",), view("", logged_lr=3e-4))
    assert logged == ("Lower the peak LR 2-5x (peak LR 3e-4 -> 1e-4)",)  # usual for Adam: no "far above"
    sgd = fit("loss", ("Lower the peak LR 2-5x",), view("optimizer: sgd\nlr: 0.1"))
    assert not sgd[0].startswith("LR")


def test_warmup_and_precision_from_the_run() -> None:
    fixes = fit("loss", SPECS["loss.diverging"].fixes, view("warmup_ratio: 0.05\nbf16: true\nmax_grad_norm: 1.0"))
    assert "Lengthen warmup (warmup_ratio 0.05 -> 0.1)" in fixes
    assert not any("bf16" in f for f in fixes)  # already bf16


def test_no_fix_twice_in_the_nonfinite_list() -> None:
    from trainwatch.rules.loss import BLOWUP_FIXES

    fixes = fit("loss", BLOWUP_FIXES + SPECS["loss.nonfinite"].fixes, view(""))
    assert sum("LR" in f for f in fixes) == 1
    assert sum("Clip" in f for f in fixes) == 1
    assert sum("bf16" in f for f in fixes) == 1
    assert len(fixes) == len(set(fixes))
    assert any("set_detect_anomaly" in f for f in fixes)  # a new topic is kept


def test_language_model_advice_stays_away_from_vision_runs() -> None:
    plateau = SPECS["loss.plateau"].fixes
    fixes = fit("loss", plateau, view("", llm=False))
    text = "\n".join(fixes)
    assert "LoRA" not in text and "label masking" not in text
    assert any(f.startswith("Raise the LR 2-5x") for f in fixes)  # its LoRA aside is cut, not the fix
    assert "LoRA" in "\n".join(fit("loss", plateau, view("lora_r=16")))
    high = SPECS["loss.level"].params.fixes_high
    assert not any("chat template" in f for f in fit("loss", high, view("", llm=False)))
    assert not any("Shorten the sequences" in f for f in fit("oom", OOM, view("", llm=False)))


def test_lora_advice_is_not_given_to_a_full_fine_tune() -> None:
    fixes = fit("loss", SPECS["loss.overfit"].fixes, view("tuner_type: full"))
    assert not any("LoRA" in f for f in fixes)
    quant = fit("oom", OOM, view("tuner_type: full"))
    assert not any(f.startswith("Load the model quantised") for f in quant)


def test_lora_advice_only_where_the_log_shows_adapters() -> None:
    overfit, plateau = SPECS["loss.overfit"].fixes, SPECS["loss.plateau"].fixes
    assert any("LoRA rank" in f for f in overfit)
    for shown in ("finetuning_type: lora", "lora_r=32, lora_alpha=64", "Unsloth: LoRA adapters",
                  "trainable params: 4,194,304 || all params: 6,742,609,920 || trainable%: 0.0622",
                  'File "/usr/lib/python3/site-packages/peft/tuners/lora.py", line 1'):
        assert any("LoRA rank" in f for f in fit("loss", overfit, view(shown))), shown
    for silent in ("", "learning_rate: 2e-5", "lora_rank=8\ntrain_type=full", "use_lora: false"):
        assert not any("LoRA" in f for f in fit("loss", overfit, view(silent))), silent
    raise_lr = next(f for f in fit("loss", plateau, view("")) if f.startswith("Raise the LR"))
    assert raise_lr == "Raise the LR 2-5x (full fine-tune 1e-5 to 5e-5)"  # the aside keeps its other item
    low = fit("loss", SPECS["grad.range"].fixes, view(""))
    assert any("trainable parameters (requires_grad)" in f for f in low)


def test_rl_advice_fits_the_algorithm_the_log_shows() -> None:
    stuck = SPECS["quality.no_progress"].fixes
    value_words = ("target network", "replay buffer", "epsilon", "environment step")
    grpo = "\n".join(fit("loss", stuck, view("{'completions/mean_length': 385.6, 'reward_std': 0.33, 'kl': 0.04}")))
    assert not any(w in grpo for w in value_words), grpo
    assert "Check that the completions of one prompt earn different rewards (reward_std above 0)" in grpo
    assert "RL:" not in grpo  # the run's own kind is said plainly
    dqn = "\n".join(fit("loss", stuck, view("|    exploration_rate | 0.998    |")))
    assert "target network syncs" in dqn and "completions" not in dqn and "entropy" not in dqn
    ppo = "\n".join(fit("loss", stuck, view("|    approx_kl | 0.012 |\n|    clip_range | 0.2 |")))
    assert "entropy that falls" in ppo and "target network" not in ppo and "completions" not in ppo
    llm = "\n".join(fit("loss", stuck, view("", llm=True)))  # a language model, its algorithm unnamed
    assert not any(w in llm for w in value_words) and "LLM RL: check that the completions" in llm
    unknown = fit("loss", stuck, view(""))
    assert any(f.startswith("Value-based RL: ") for f in unknown)  # told as a condition, not as a fact


def test_an_alert_carries_the_fitted_fixes_of_its_sources_config() -> None:
    r = Run()
    state = r.engine.source(r.source, "hf_console")
    state.facts["run_config"] = runconfig.read(SWIFT)
    r.event(EventKind.ERROR, step=3, signature="oom.cuda", text="torch.OutOfMemoryError: CUDA out of memory.")
    fixes = r.alert("oom.cuda").fixes
    assert fixes[0].startswith("The log's own advice")
    assert not any(f.startswith(("Halve the micro batch", "Enable gradient checkpointing")) for f in fixes)


def test_loss_level_says_nothing_of_a_run_that_is_not_a_language_model() -> None:
    def level_fired(fmt: str, llm: bool | None) -> bool:
        r = Run()
        facts = r.engine.source(r.source, fmt).facts
        if llm is not None:
            facts["llm"] = llm
        for s in range(1, 41):
            r.step(s, loss=7.9)
        r.finish()
        return "loss.level" in r.fired()

    assert not level_fired("jsonl", False)  # the log says it is no language model
    assert not level_fired("keyvalue", None)  # nothing says it is one: no usual range to hold it to
    assert level_fired("keyvalue", True)
    assert level_fired("hf_console", None)  # the HF Trainer's console, saying nothing else


def test_leaving_fp16_is_advice_for_a_run_in_fp16_only() -> None:
    fixes = SPECS["loss.diverging"].fixes
    assert any(f.startswith("Switch fp16 to bf16") for f in fixes)  # the preset's wording, as a fact
    unknown = fit("loss", fixes, view(""))
    assert not any(f.startswith("Switch fp16") for f in unknown)
    assert any(f.startswith("If it trains in fp16, switch to bf16") for f in unknown)
    assert any(f.startswith("Switch fp16 to bf16") for f in fit("loss", fixes, view("fp16: true")))
    assert not any("bf16" in f for f in fit("loss", fixes, view("mixed_precision: fp32")))


def test_a_finding_made_during_warmup_quotes_the_runs_peak_once_the_run_has_ended(tmp_path: Path) -> None:
    """grpo_tiny warms its LR up to 3e-3 (lines 11 on); its reward finding is made at line 10, where the
    LR logged so far is 1e-3. A live alert can quote only that; the report of the whole run quotes 3e-3."""
    import json
    import re
    import subprocess
    import sys

    text = (Path(__file__).resolve().parents[2] / "examples" / "logs" / "grpo_tiny.log").read_text()
    # its entropy kept high to the end, so the early entropy finding stands (the real run's falls back)
    log = tmp_path / "grpo_tiny.log"
    log.write_text(re.sub(r"('entropy': '?)[0-9.]+", r"\g<1>2.5", text))
    doc = json.loads(subprocess.run([sys.executable, "-m", "trainwatch", "check", "--json", str(log)],
                                    capture_output=True, text=True, timeout=120).stdout)
    quoted = [f for finding in doc["findings"] for f in finding["fixes"] if "peak LR" in f]
    assert quoted and all("peak LR 3e-3 -> 1e-3" in f for f in quoted), quoted


def test_what_the_logged_lr_shows_answers_the_fixes_that_ask_for_it() -> None:
    """A warmup the log shows (the LR rose over its first 19 steps) makes 'warm up' a longer warmup, and a
    logged peak LR of 3e-3 answers 'check that the LR is not 0 or tiny'."""
    view = RunView(runconfig.RunConfig(), logged_lr=3e-3, logged_warmup=19)
    out = fit("loss", ("Warm up over 5-10% of the steps", "Check that the LR is not 0 or tiny"), view)
    assert out == ("Lengthen warmup (the logged LR rose to its peak over 19 steps)",)
    asked = ("Warm up over 5-10% of the steps", "Check that the LR is not 0 or tiny")
    assert fit("loss", asked, RunView(runconfig.RunConfig())) == asked


def test_hf_trainer_argument_names_only_for_a_run_of_the_hf_trainer() -> None:
    """A YOLO or fairseq run is not told to set load_best_model_at_end: the aside goes, the advice stays;
    the HF Trainer's run keeps the name, and a config dump of its arguments shows that trainer."""
    overfit = SPECS["loss.overfit"].fixes
    other = fit("loss", overfit, view("epoch,train/box_loss,val/box_loss\n"))
    assert other[0] == "Stop earlier: fewer epochs or max_steps, or keep the best checkpoint"
    assert not any("load_best_model_at_end" in f for f in other)
    assert "load_best_model_at_end" in fit("loss", overfit, view("", hf_trainer=True))[0]
    assert runconfig.read("TrainingArguments(\nper_device_train_batch_size=4,\n)").hf_trainer
    assert not runconfig.read("{'epoch': 1, 'update': 0.25, 'loss': '0.264'}").hf_trainer
