"""The task decides the preset: pretraining, fine-tuning, RL and vision told apart from the evidence."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trainwatch import task

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"


def g(head: str, fmt: str = "keyvalue") -> task.TaskGuess:
    return task.guess([task.SourceSample("run.log", fmt, head)])


def test_first_loss_near_ln_vocab_is_pretraining() -> None:
    guess = g("".join(f"step {s}: loss={10.8 - s * 0.01:.3f}\n" for s in range(1, 30)))
    assert guess.preset == "pretrain"
    assert "first loss 10.8" in guess.why()


def test_low_first_loss_is_fine_tuning_by_default() -> None:
    guess = g("".join(f"step {s}: loss={1.9 - s * 0.01:.3f}\n" for s in range(1, 30)))
    assert guess.preset == "sft"


def test_reward_keys_are_rl_and_detection_losses_are_vision() -> None:
    assert g("{'loss': 0.01, 'reward': 0.5, 'reward_std': 0.2, 'kl': 0.001}\n", "hf_console").preset == "grpo"
    head = "epoch, train/box_loss, train/cls_loss, train/dfl_loss, metrics/mAP50(B)\n0, 1.6, 3.3, 2.1, 0.15\n"
    assert g(head, "csv").preset == "vision"


def test_dpo_rewards_are_preference_tuning_not_rl() -> None:
    """TRL's DPOTrainer logs implicit rewards (rewards/chosen, rewards/margins) but is a fine-tune."""
    head = ("{'loss': 0.6931, 'grad_norm': 5.1, 'learning_rate': 5e-07, 'rewards/chosen': 0.0, "
            "'rewards/rejected': 0.0, 'rewards/accuracies': 0.0, 'rewards/margins': 0.0, "
            "'logps/chosen': -310.2, 'logps/rejected': -290.4, 'epoch': 0.01}\n")
    guess = g(head, "hf_console")
    assert guess.preset == "sft" and "DPO" in guess.why()
    grpo = head.replace("'rewards/margins': 0.0,", "'rewards/margins': 0.0, 'reward_std': 0.3,")
    assert g(grpo, "hf_console").preset == "grpo"


def test_precision_from_banners() -> None:
    assert task.precision("  fp16 ........ True\n  bf16 ........ False\n") == "fp16"
    assert task.precision("  fp16 ........ False\n  bf16 ........ True\n") == "bf16"
    assert task.precision("torchrun train.py --fp16 --lr 1e-4") == "fp16"
    assert task.precision("model loaded with dtype: torch.float16") == "fp16"
    assert task.precision("Trainer(precision=16-mixed)") == "fp16"
    assert task.precision("eval precision: 16.5%") is None
    assert task.precision("nothing about it") is None


def check_json(path: Path, *extra: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "trainwatch", "check", "--json", *extra, str(path)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode in (0, 1, 2), proc.stderr
    return json.loads(proc.stdout)


def test_report_header_says_task_and_why() -> None:
    doc = check_json(ROOT / "examples/logs/grpo_tiny.log")
    assert doc["preset"] == "grpo" and doc["task"]["id"] == "rl" and "RL metrics" in doc["task"]["why"]
    proc = subprocess.run([sys.executable, "-m", "trainwatch", "check", str(ROOT / "examples/logs/grpo_tiny.log")],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert "preset grpo for reinforcement learning (RL metrics" in proc.stdout.splitlines()[0]


@pytest.mark.parametrize("name, args, preset", [
    ("deepspeed-hf-mini-phi3-pretrain.log", (), "pretrain"),
    ("olmo-150m-train.log", (), "pretrain"),
    ("megatron-ds-qwen7b-pretrain-500it.log", ("--format", "megatron"), "pretrain"),
    ("chaos-economy-grpo-trainer_state.json", (), "grpo"),
    ("chaos-economy-grpo-unsloth-console.log", (), "grpo"),
    ("yolov8-fire-smoke-results.csv", (), "vision"),
    ("swift-gemma4-fsdp2-full-epoch.log", ("--format", "hf_console"), "sft"),
    ("keras-csvlogger-en-jv-lstm.csv", (), "sft"),
])
def test_real_logs_get_their_task(name: str, args: tuple[str, ...], preset: str) -> None:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"{path} not present (the shared corpus is only on machines that have it)")
    doc = check_json(path, *args)
    assert doc["preset"] == preset, doc["task"]


def test_pretraining_level_is_not_judged_against_fine_tuning_ranges() -> None:
    path = CORPUS / "deepspeed-hf-mini-phi3-pretrain.log"
    if not path.exists():
        pytest.skip(f"{path} not present (the shared corpus is only on machines that have it)")
    doc = check_json(path)
    assert "loss.level" not in {f["id"] for f in doc["findings"]}


def megatron_log(tmp_path: Path, banner: str) -> Path:
    lines = [banner]
    for it in range(1, 21):
        lines.append(f" iteration {it:8d}/     100 | consumed samples: {it * 128:12d} | learning rate: 3.000E-04 |"
                     f" global batch size:   128 | lm loss: {9.0 - it * 0.05:.6E} | loss scale: 1.0 |"
                     " grad norm: 0.912 | number of skipped iterations:   0 | number of nan iterations:   0 |")
    p = tmp_path / "train.log"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_precision_banner_reaches_the_loss_scale_rule(tmp_path: Path) -> None:
    fp16 = check_json(megatron_log(tmp_path, "  fp16 ............................................ True"),
                      "--format", "megatron")
    assert "fp16.overflow" in {f["id"] for f in fp16["findings"]}
    bf16 = check_json(megatron_log(tmp_path, "  bf16 ............................................ True"),
                      "--format", "megatron")
    assert "fp16.overflow" not in {f["id"] for f in bf16["findings"]}
    assert bf16["task"]["id"] == "pretrain"


def test_a_first_loss_above_any_ln_vocab_is_no_sign_of_pretraining() -> None:
    """ln(vocab) is under 13 for any real vocabulary: a first loss of 19.9 is a broken fine-tune."""
    guess = g("".join(f"step {s}: loss={19.9 - s * 0.01:.3f}\n" for s in range(1, 30)) + "trainable%: 0.2971\n")
    assert guess.preset == "sft" and "first loss" not in guess.why()


CLUE_TEXTS = [
    "ebft/loss", "reward_std", "frac_reward_zero_std", "rewards/margins", "completions/mean_length", "'reward': 1",
    '"reward": 1', "clip_ratio/low", " critic/vf_loss", " actor/pg_loss", " actor/lr", "logps/chosen", "completions/x",
    "'kl': 0.1", "kl = -0.1", "x/kl ", "box_loss", "cls_loss", "dfl_loss", "obj_loss", "seg_loss", "loss_box_reg",
    "loss_bbox", "loss_cls", "loss_rpn", "loss_mask", "mAP50", "bbox_mAP", "metrics/mAP", " mAP ", "MAP",
    "Consumed Tokens", "TOKENS PER ITERATION", "tokens per step", "Tokens_Seen", "train/TokensSeen",
    "num_input_tokens_seen", "GLOBAL_TOKENS", "lm loss", "LM LOSS", "Pre-Training", "PRETRAIN", "pretrain_gpt",
    "From Scratch", "SFT", "Fine-Tuning", "finetuned", "Instruction Tuning", "Chat Template", "LoRA", "PEFT",
    "QLoRA", "Trainable%", "fp16: True", "FP16=True", "--fp16", "dtype=torch.float16", "mixed_precision: fp16",
    "precision=16", "precision: 16-mixed", "BF16=True", "--bf16", "dtype: bfloat16", "mixed_precision=bf16",
    "\u017fft", "lo\u212ara", "PRETRA\u0130N from", "pretra\u0131n", "F\u0130NE-TUNING the model",
    "f\u0131ne-tuning", "prec\u0131s\u0131on: 16", "Wav2Vec2Model", "HuBERT", "WavLM", "CTC loss", "audio_pretraining",
    "model_action_dim=32", "Action_Horizon", "proprio_dim", "stable-diffusion-v1-5", "Stable Diffusion XL",
    "DreamBooth", "UNet2DConditionModel", "SDXL", "Validation mIOU", "mean_iou", "pixAcc", "Pixel Accuracy",
    "m\u0130oU", "'actor_rollout_ref': {", "adv_estimator=grpo", "GRPOConfig(", "num_generations: 8",
    "nothing to see", "",
]


@pytest.mark.parametrize("text", CLUE_TEXTS)
def test_clue_literals_never_hide_a_match(text: str) -> None:
    """Each clue skips its pattern when none of its literals is in the sample: that must never lose a match."""
    clues = [v for v in vars(task).values() if isinstance(v, task._Clue)]
    assert len(clues) >= 12
    for clue in clues:
        for sample in (text, f"x {text} y", text.upper(), text.lower()):
            assert bool(clue.search(sample)) == bool(clue.pattern.search(sample)), (clue.pattern.pattern, sample)
            assert [m.group(0) for m in clue.finditer(sample)] == [m.group(0) for m in clue.pattern.finditer(sample)]


def test_bleu_evaluation_is_a_fine_tune_even_when_the_first_loss_is_high() -> None:
    lines = "".join(f"Epoch 1 - Batch loss: {12.1 - s * 0.01:.4f}\n" for s in range(1, 30))
    assert g(lines).preset == "pretrain"
    guess = g(lines + "Epoch 2 - New best model saved with BLEU-2: 65.76\n")
    assert guess.preset == "sft" and "BLEU" in guess.why()


def test_language_model_or_not_from_the_sample() -> None:
    assert task.llm('{"train_loss": 18.2, "train_loss_bbox": 0.73, "train_loss_giou": 1.18}') is False
    assert task.llm('{"train_loss": 4.77, "test_96_acc1": 57.3, "test_96_acc5": 81.2}') is False
    assert task.llm("max_seq_length: 2048\n{'loss': 4.7}") is True
    assert task.llm("step 1: loss=4.7") is None
    assert g('{"train_loss": 4.77, "test_acc1": 57.3}\n', "jsonl").llm == {"run.log": False}


def test_speech_and_robot_policy_runs_are_not_language_models() -> None:
    """A tokenizer a config leaves unset is no clue; a wav2vec/CTC run or a policy that predicts actions
    trains no language model even when a tokenizer reads its prompts: no LLM loss band for them."""
    assert task.llm("{'bpe': None, 'tokenizer': None, 'ema': {}}") is None
    assert task.llm("'tokenizer': 'Qwen/Qwen2.5-7B'") is True
    assert task.llm("{'task': {'_name': 'audio_finetuning'}, 'tokenizer': None}") is False
    assert task.llm("model: Wav2Vec2Model\ncriterion: ctc\n") is False
    assert task.llm("TokenizePrompt(tokenizer=<PaligemmaTokenizer>), PadStatesAndActions(model_action_dim=32)") is False


def test_text_to_image_diffusion_lora_runs_are_not_language_models() -> None:
    """A DreamBooth/Stable Diffusion LoRA trains a UNet's noise prediction (an MSE near 0.1-0.5): the word
    LoRA and a text encoder's tokenizer do not make it an LLM run, so no LLM loss band or token fixes."""
    assert task.llm("Loading pipeline: runwayml/stable-diffusion-v1-5\nTraining DreamBooth + LoRA\n") is False
    assert task.llm("unet = UNet2DConditionModel.from_pretrained(...); tokenizer = CLIPTokenizer") is False
    assert task.llm("Fine-tuning SDXL with LoRA, rank 16") is False
    assert task.llm("Training with LoRA rank 16, tokenizer Qwen/Qwen2.5-7B") is True


def test_keras_runs_are_not_llm_runs() -> None:
    summary = ' Layer (type)                Output Shape              Param #   \n lstm (LSTM)   (None, 100)   80400\n'
    assert task.llm("Vocabulary Size: 44\n" + summary) is False
    assert task.llm("epoch,accuracy,learning_rate,loss,val_accuracy,val_loss\n0,0.75,0.005,1.92,0.79,1.42\n") is False


def test_a_segmentation_metric_outweighs_a_loss_near_ln_vocab() -> None:
    """A segmenter's summed loss can start near 11 like a token loss from scratch: its mIoU (or pixel
    accuracy) says the run is a vision one, and a vision run has no vocabulary for ln(vocab) to be of."""
    lines = "".join(f"Epoch {s}: loss={11.0 - s * 0.01:.3f}\n" for s in range(1, 30))
    assert g(lines).preset == "pretrain"
    guess = g(lines + "Validation loss: 4.98\nValidation mIOU: [0.33, 0.14]\n")
    assert guess.preset == "vision" and "ln(vocab)" not in guess.why()
    assert g(lines + "Epoch 1 | pixAcc: 0.81, mIoU: 0.42\n").preset == "vision"
    assert task.llm("Validation mIOU: [0.60, 0.80]") is False


def test_an_rl_trainers_config_is_rl_before_any_reward_is_logged() -> None:
    """A verl run that crashed at start-up logged no reward, but its config dump names the actor/rollout/
    reference section and the advantage estimator: RL, not the default fine-tune."""
    head = ("(main_task pid=1) {'actor_rollout_ref': {'actor': {'clip_ratio': 0.2, 'ppo_micro_batch_size': 8},\n"
            "(main_task pid=1)  'algorithm': {'adv_estimator': 'grpo', 'gamma': 1.0},\n")
    assert g("Started a local Ray instance.\n", "text").preset == "sft"
    guess = g(head, "text")
    assert guess.preset == "grpo" and "actor_rollout_ref" in guess.why()
    assert g("GRPOConfig(num_generations=8, learning_rate=1e-06)\n", "text").preset == "grpo"

