#!/usr/bin/env python
"""Train a tiny random-init causal LM on synthetic data and (optionally) induce failures.

Produces *real* training logs from real frameworks, used as trainwatch test fixtures.
No downloads: the model is built from a LlamaConfig with random weights, data is synthetic.

Frameworks:
  --framework hf     transformers.Trainer (console log dicts + tqdm bars)
  --framework torch  plain PyTorch loop; --style plain|nanogpt; --jsonl PATH for JSON lines
  --framework ddp    plain PyTorch loop under torch.distributed (gloo, CPU); launch with torchrun;
                     each rank writes <out>/rank<N>.log; --fail-rank/--fail-step raise an exception

Failures (--failure):
  none             healthy: learnable synthetic task (arithmetic progressions mod V), warmup + decay
  high_lr          huge LR, no warmup, no grad clipping -> divergence / nan
  bad_sample       one poisoned batch at --bad-step (marker token triggers inf in embedding output)
  overfit          tiny random-token train set, many epochs, eval on other random data
  frozen           everything frozen except the final norm -> flat loss
  resume_no_sched  (hf only) stop at a checkpoint, delete scheduler.pt/optimizer.pt, resume
"""
import argparse
import json
import math
import os
import random
import sys
import time

import numpy as np
import torch

VOCAB = 256
PAD_ID = 0
MARKER_ID = 1  # "poison" token: when present in a batch the embedding hook writes inf
FIRST_REAL = 3


# --------------------------------------------------------------------------- data

def progression_batch(n, seq_len, gen):
    """Sequences x_t = FIRST_REAL + (s + t*d) mod (V-FIRST_REAL), random start s, step d.

    The model must infer d from the context -> learnable; loss falls from ~ln(V) towards ~0.
    """
    m = VOCAB - FIRST_REAL
    s = torch.randint(0, m, (n, 1), generator=gen)
    d = torch.tensor([1, 2, 3, 5, 7])[torch.randint(0, 5, (n, 1), generator=gen)]
    t = torch.arange(seq_len).unsqueeze(0)
    return FIRST_REAL + (s + t * d) % m


def random_batch(n, seq_len, gen):
    return torch.randint(FIRST_REAL, VOCAB, (n, seq_len), generator=gen)


def make_data(args):
    gen = torch.Generator().manual_seed(args.seed)
    if args.failure == "overfit":
        # tiny train set: progressions with a fraction of tokens replaced by random noise.
        # The model first learns the shared structure (eval loss falls), then memorises the
        # noise of the few training sequences (train loss -> 0, eval loss rises).
        def noisy(n):
            x = progression_batch(n, args.seq_len, gen)
            mask = torch.rand(x.shape, generator=gen) < args.overfit_noise
            return torch.where(mask, random_batch(n, args.seq_len, gen), x)
        train = noisy(args.overfit_train_size)
        val = noisy(args.eval_size)
    else:
        n_train = args.max_steps * args.batch_size
        train = progression_batch(n_train, args.seq_len, gen)
        val = progression_batch(args.eval_size, args.seq_len, gen)
    if args.failure == "bad_sample":
        # poison one sample of the batch consumed at optimizer step --bad-step (sequential order)
        idx = (args.bad_step - 1) * args.batch_size + 3
        train[idx, args.seq_len // 2] = MARKER_ID
    return train, val


class TokenDataset(torch.utils.data.Dataset):
    def __init__(self, ids):
        self.ids = ids

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        x = self.ids[i]
        return {"input_ids": x, "labels": x.clone(), "attention_mask": torch.ones_like(x)}


# --------------------------------------------------------------------------- model

def build_model(args):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=args.hidden,
        intermediate_size=args.hidden * 2,
        num_hidden_layers=args.layers,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=max(128, args.seq_len),
        pad_token_id=PAD_ID,
        bos_token_id=None,
        eos_token_id=None,
        tie_word_embeddings=False,
    )
    torch.manual_seed(args.seed)
    model = LlamaForCausalLM(cfg)
    if args.failure == "frozen":
        for name, p in model.named_parameters():
            p.requires_grad = name == "model.norm.weight"
    if args.failure == "bad_sample":
        install_poison_hook(model)
    return model


def install_poison_hook(model):
    """Forward hook on the token embedding: any row containing MARKER_ID gets inf activations."""
    state = {}

    def pre_hook(module, inputs):
        state["ids"] = inputs[0]

    def hook(module, inputs, output):
        ids = state.get("ids")
        if ids is None or not (ids == MARKER_ID).any():
            return output
        bad = (ids == MARKER_ID).any(dim=-1)  # [batch]
        out = output.clone()
        out[bad] = out[bad] * float("inf")
        return out

    emb = model.get_input_embeddings()
    emb.register_forward_pre_hook(pre_hook)
    emb.register_forward_hook(hook)


# --------------------------------------------------------------------------- presets

def apply_preset(args):
    """Per-failure defaults; anything given explicitly on the command line wins."""
    p = dict(lr=3e-3, warmup=20, clip=1.0, max_steps=200, eval_steps=25, sched="cosine", optim="adamw",
             log_every=5, stop_step=40)
    if args.failure == "high_lr":
        # plain SGD with a huge LR and clipping disabled (1e9 keeps grad_norm logged in HF)
        p.update(optim="sgd", lr=7.0, warmup=0, clip=1e9, sched="constant", max_steps=60, eval_steps=20,
                 log_every=2)
    elif args.failure == "bad_sample":
        p.update(max_steps=80, eval_steps=20)
    elif args.failure == "overfit":
        p.update(lr=3e-3, warmup=10, sched="constant_with_warmup", max_steps=300, eval_steps=20)
    elif args.failure == "frozen":
        p.update(max_steps=80, eval_steps=20)
    elif args.failure == "resume_no_sched":
        # stop late in the cosine decay (small LR); after the resume without scheduler.pt the
        # warmup restarts and the LR climbs back to the peak -> loss jumps up
        p.update(lr=2e-2, warmup=10, sched="cosine", max_steps=120, eval_steps=20, stop_step=80)
    for k, v in p.items():
        if getattr(args, k) is None:
            setattr(args, k, v)


# --------------------------------------------------------------------------- HF Trainer

def run_hf(args):
    import transformers
    from transformers import Trainer, TrainerCallback, TrainingArguments

    if args.verbose:
        transformers.logging.set_verbosity_info()
    print(f"torch {torch.__version__} | transformers {transformers.__version__} | "
          f"failure={args.failure} seed={args.seed}", flush=True)
    train_ids, val_ids = make_data(args)
    train_ds, val_ds = TokenDataset(train_ids), TokenDataset(val_ids)

    class SeqTrainer(Trainer):
        # deterministic order so the poisoned sample lands exactly at --bad-step
        def _get_train_sampler(self, *a, **k):
            if args.failure == "bad_sample":
                return torch.utils.data.SequentialSampler(self.train_dataset)
            return super()._get_train_sampler(*a, **k)

    def targs(**over):
        kw = dict(
            output_dir=args.out,
            per_device_train_batch_size=args.batch_size,
            per_device_eval_batch_size=args.batch_size,
            max_steps=args.max_steps,
            learning_rate=args.lr,
            warmup_steps=args.warmup,
            lr_scheduler_type=args.sched,
            optim="sgd" if args.optim == "sgd" else "adamw_torch",
            max_grad_norm=args.clip,  # 0 disables clipping
            weight_decay=0.0 if args.failure == "overfit" else 0.01,
            logging_steps=args.log_every,
            logging_first_step=True,
            logging_nan_inf_filter=not args.no_nan_filter,
            eval_strategy="steps",
            eval_steps=args.eval_steps,
            save_strategy="no",
            report_to="none",
            use_cpu=True,
            seed=args.seed,
            data_seed=args.seed,
            dataloader_num_workers=0,
        )
        kw.update(over)
        return TrainingArguments(**kw)

    if args.failure != "resume_no_sched":
        model = build_model(args)
        trainer = SeqTrainer(model=model, args=targs(), train_dataset=train_ds, eval_dataset=val_ds)
        trainer.train()
        trainer.state.save_to_json(os.path.join(args.out, "trainer_state.json"))
        return

    # ---- resume_no_sched: phase 1 saves at --stop-step and stops ("preempted"), phase 2 resumes
    class StopAt(TrainerCallback):
        def on_step_end(self, a, state, control, **kw):
            if state.global_step >= args.stop_step:
                control.should_save = True
                control.should_training_stop = True
            return control

    print(f"=== phase 1: train until step {args.stop_step}, save checkpoint, stop ===", flush=True)
    model = build_model(args)
    t1 = SeqTrainer(model=model, args=targs(save_strategy="steps", save_steps=args.stop_step),
                    train_dataset=train_ds, eval_dataset=val_ds, callbacks=[StopAt()])
    t1.train()
    ckpt = os.path.join(args.out, f"checkpoint-{args.stop_step}")
    for f in ("scheduler.pt", "optimizer.pt"):
        fp = os.path.join(ckpt, f)
        if os.path.exists(fp):
            os.remove(fp)
            print(f"[train_tiny] removed {fp}", flush=True)
    print(f"=== phase 2: resume_from_checkpoint={ckpt} (no scheduler.pt / optimizer.pt) ===", flush=True)
    model2 = build_model(args)
    t2 = SeqTrainer(model=model2, args=targs(), train_dataset=train_ds, eval_dataset=val_ds)
    t2.train(resume_from_checkpoint=ckpt)
    t2.state.save_to_json(os.path.join(args.out, "trainer_state.json"))


# --------------------------------------------------------------------------- plain torch

def lr_at(step, args):
    """step is 1-based optimizer step."""
    if args.warmup and step <= args.warmup:
        return args.lr * step / args.warmup
    if args.sched == "constant" or args.sched == "constant_with_warmup":
        return args.lr
    prog = (step - args.warmup) / max(1, args.max_steps - args.warmup)
    if args.sched == "linear":
        return args.lr * max(0.0, 1 - prog)
    return args.lr * 0.5 * (1 + math.cos(math.pi * prog))


@torch.no_grad()
def evaluate(model, ids, bs):
    model.eval()
    losses = []
    for i in range(0, len(ids), bs):
        x = ids[i:i + bs]
        losses.append(model(input_ids=x, labels=x).loss.item())
    model.train()
    return float(np.mean(losses))


def run_torch(args, rank=0, world=1):
    import transformers

    if rank == 0 or args.framework == "ddp":
        print(f"torch {torch.__version__} | transformers {transformers.__version__} | "
              f"framework={args.framework} style={args.style} failure={args.failure} seed={args.seed}"
              + (f" rank={rank}/{world}" if world > 1 else ""), flush=True)
    train_ids, val_ids = make_data(args)
    model = build_model(args)
    n_params = sum(p.numel() for p in model.parameters())
    if args.style == "nanogpt":
        print(f"number of parameters: {n_params / 1e6:.2f}M", flush=True)
        print(f"tokens per iteration will be: {args.batch_size * args.seq_len * world:,}", flush=True)
    params = [p for p in model.parameters() if p.requires_grad]
    if args.optim == "sgd":
        opt = torch.optim.SGD(params, lr=args.lr)  # same as HF optim="sgd"
    else:
        opt = torch.optim.AdamW(params, lr=args.lr, betas=(0.9, 0.95), weight_decay=0.01)
    if world > 1:
        import torch.distributed as dist
        for p in model.parameters():
            dist.broadcast(p.data, 0)
    jf = open(args.jsonl, "w") if args.jsonl else None  # noqa: SIM115 - closed after the loop
    model.train()
    t_start = time.time()
    t0 = time.time()
    order = list(range(len(train_ids)))
    if args.failure != "bad_sample":
        random.Random(args.seed).shuffle(order)
    ptr = 0
    flops_per_iter = 6 * n_params * args.batch_size * args.seq_len
    for step in range(1, args.max_steps + 1):
        # eval (nanoGPT evaluates at the start of iteration, including iter 0)
        if args.style == "nanogpt" and rank == 0 and (step - 1) % args.eval_steps == 0:
            tr = evaluate(model, train_ids[:args.eval_size], args.batch_size)
            va = evaluate(model, val_ids, args.batch_size)
            print(f"step {step - 1}: train loss {tr:.4f}, val loss {va:.4f}", flush=True)
        if ptr + args.batch_size > len(order):
            ptr = 0
        idx = order[ptr:ptr + args.batch_size]
        ptr += args.batch_size
        if world > 1:
            # each rank takes its own shard of the global batch
            idx = idx[rank::world] or idx[:1]
        x = train_ids[idx]
        lr = lr_at(step, args)
        for g in opt.param_groups:
            g["lr"] = lr
        if world > 1 and step == args.fail_step and rank == args.fail_rank:
            raise RuntimeError(f"synthetic failure on rank {rank} at step {step}: "
                               f"corrupted batch (simulated data loader error)")
        loss = model(input_ids=x, labels=x).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if world > 1:
            import torch.distributed as dist
            for p in params:
                if p.grad is not None:
                    dist.all_reduce(p.grad)
                    p.grad /= world
        if args.clip and args.clip > 0:
            gn = torch.nn.utils.clip_grad_norm_(params, args.clip).item()
        else:
            gn = torch.nn.utils.clip_grad_norm_(params, float("inf")).item()
        opt.step()
        dt = time.time() - t0
        t0 = time.time()
        lossf = loss.item()
        if step % args.log_every == 0 or step == 1:
            toks = args.batch_size * args.seq_len / max(dt, 1e-9)
            if args.style == "nanogpt":
                mfu = flops_per_iter / max(dt, 1e-9) / 312e12 * 100
                print(f"iter {step}: loss {lossf:.4f}, time {dt * 1000:.2f}ms, mfu {mfu:.2f}%", flush=True)
            else:
                print(f"Step {step}: loss={lossf:.4f}, lr={lr:.2e}, grad_norm={gn:.4f}", flush=True)
            if jf:
                rec = {"step": step, "loss": lossf, "lr": lr, "grad_norm": gn,
                       "tokens_per_sec": round(toks, 1), "time": round(time.time() - t_start, 3),
                       "train": {"loss": lossf, "ppl": math.exp(min(lossf, 50)) if lossf == lossf else lossf}}
                if step % args.eval_steps == 0:
                    va = evaluate(model, val_ids, args.batch_size)
                    rec["eval"] = {"loss": va}
                jf.write(json.dumps(rec) + "\n")
                jf.flush()
        if args.style != "nanogpt" and rank == 0 and step % args.eval_steps == 0:
            va = evaluate(model, val_ids, args.batch_size)
            print(f"Step {step}: eval_loss={va:.4f}", flush=True)
    if args.style == "nanogpt" and rank == 0:
        tr = evaluate(model, train_ids[:args.eval_size], args.batch_size)
        va = evaluate(model, val_ids, args.batch_size)
        print(f"step {args.max_steps}: train loss {tr:.4f}, val loss {va:.4f}", flush=True)
    if jf:
        jf.close()
    print(f"done in {time.time() - t_start:.1f}s", flush=True)


def run_ddp(args):
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    os.makedirs(args.out, exist_ok=True)
    # each rank writes its own log file (stdout + stderr, including tracebacks)
    fd = os.open(os.path.join(args.out, f"rank{rank}.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    import datetime
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    try:
        run_torch(args, rank, world)
    finally:
        try:
            dist.destroy_process_group()
        except Exception:
            pass


# --------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--framework", choices=["hf", "torch", "ddp"], default="hf")
    ap.add_argument("--style", choices=["plain", "nanogpt"], default="plain")
    ap.add_argument("--failure", default="none",
                    choices=["none", "high_lr", "bad_sample", "overfit", "frozen", "resume_no_sched"])
    ap.add_argument("--out", default="/tmp/train_tiny_out")
    ap.add_argument("--jsonl", default=None)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--max-steps", dest="max_steps", type=int, default=None)
    ap.add_argument("--lr", type=float, default=None)
    ap.add_argument("--warmup", type=int, default=None)
    ap.add_argument("--sched", default=None, help="cosine|linear|constant|constant_with_warmup")
    ap.add_argument("--optim", default=None, help="adamw|sgd (hf: adamw_torch|sgd)")
    ap.add_argument("--clip", type=float, default=None, help="max grad norm, 0 = no clipping")
    ap.add_argument("--eval-steps", dest="eval_steps", type=int, default=None)
    ap.add_argument("--log-every", dest="log_every", type=int, default=None)
    ap.add_argument("--batch-size", dest="batch_size", type=int, default=16)
    ap.add_argument("--seq-len", dest="seq_len", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--eval-size", dest="eval_size", type=int, default=64)
    ap.add_argument("--overfit-train-size", dest="overfit_train_size", type=int, default=128)
    ap.add_argument("--overfit-noise", dest="overfit_noise", type=float, default=0.3)
    ap.add_argument("--bad-step", dest="bad_step", type=int, default=37)
    ap.add_argument("--no-nan-filter", dest="no_nan_filter", action="store_true",
                    help="HF: logging_nan_inf_filter=False so nan losses are logged as nan")
    ap.add_argument("--stop-step", dest="stop_step", type=int, default=None,
                    help="resume_no_sched: checkpoint + stop at this step, then resume")
    ap.add_argument("--fail-rank", dest="fail_rank", type=int, default=1)
    ap.add_argument("--fail-step", dest="fail_step", type=int, default=30)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    apply_preset(args)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    os.makedirs(args.out, exist_ok=True)
    if args.framework == "hf":
        run_hf(args)
    elif args.framework == "torch":
        run_torch(args)
    else:
        run_ddp(args)


if __name__ == "__main__":
    main()
