#!/usr/bin/env python
"""Tiny TRL GRPOTrainer run: random-init Llama + locally built word-level tokenizer, no downloads.

Task: prompts are short digit strings; the reward is the fraction of completion tokens equal to
the token "a" (easy to learn, so the mean reward visibly climbs). Writes trainer_state.json to --out.
"""
import argparse
import os

import torch


def build_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = ["<pad>", "<eos>", "<unk>", "a", "b", "c", "d", "e"] + [str(i) for i in range(10)]
    vocab = {w: i for i, w in enumerate(words)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>",
                                   unk_token="<unk>", padding_side="left")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/trainwatch_runs/grpo_tiny")
    ap.add_argument("--max-steps", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    torch.set_num_threads(2)

    import datasets
    import transformers
    import trl
    from transformers import LlamaConfig, LlamaForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    print(f"torch {torch.__version__} | transformers {transformers.__version__} | trl {trl.__version__}",
          flush=True)
    tok = build_tokenizer()
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64,
                      pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, bos_token_id=None)
    torch.manual_seed(args.seed)
    model = LlamaForCausalLM(cfg)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id

    g = torch.Generator().manual_seed(args.seed)
    prompts = [" ".join(str(int(d)) for d in torch.randint(0, 10, (4,), generator=g)) for _ in range(64)]
    ds = datasets.Dataset.from_dict({"prompt": prompts})

    def reward_a(completions, **kw):
        out = []
        for c in completions:
            t = c.split()
            out.append(sum(w == "a" for w in t) / max(1, len(t)))
        return out

    conf = GRPOConfig(
        output_dir=args.out,
        per_device_train_batch_size=8,
        num_generations=4,
        max_completion_length=8,
        learning_rate=3e-3,
        lr_scheduler_type="constant_with_warmup",
        warmup_steps=3,
        max_steps=args.max_steps,
        logging_steps=2,
        beta=0.0,
        temperature=1.0,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        seed=args.seed,
    )
    trainer = GRPOTrainer(model=model, reward_funcs=reward_a, args=conf, train_dataset=ds,
                          processing_class=tok)
    trainer.train()
    os.makedirs(args.out, exist_ok=True)
    trainer.state.save_to_json(os.path.join(args.out, "trainer_state.json"))


if __name__ == "__main__":
    main()
