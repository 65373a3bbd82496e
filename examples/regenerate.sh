#!/usr/bin/env bash
# Regenerate the fixture logs in examples/logs/ and examples/runs/ (see examples/README.md).
# Usage: bash examples/regenerate.sh [NAME ...]   (no NAME = all; run from the repo root)
# Needs the venv /work/trainenv (torch 2.13.0 CPU + transformers 5.x + accelerate).
set -u
cd "$(dirname "$0")/.."
PY=${PY:-/work/trainenv/bin/python}
PY4=${PY4:-/work/trainenv4/bin/python}   # transformers 4.x venv, only for hf4_* runs
TORCHRUN=${TORCHRUN:-/work/trainenv/bin/torchrun}
S=examples/train_tiny.py
TMP=${TMP_OUT:-/tmp/trainwatch_runs}
L=examples/logs
R=examples/runs
mkdir -p "$L" "$R" "$TMP"

sel=("$@")
on() { [ ${#sel[@]} -eq 0 ] && return 0; for s in "${sel[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }

# hf NAME ARGS... : console log -> logs/NAME.log ; run dir -> runs/NAME/{run.log,trainer_state.json}
hf() {
  local name=$1; shift
  on "$name" || return 0
  rm -rf "$TMP/$name"
  echo ">> $name"
  ${HFPY:-$PY} $S --framework hf --out "$TMP/$name" "$@" > "$L/$name.log" 2>&1
  mkdir -p "$R/$name"
  cp "$L/$name.log" "$R/$name/run.log"
  cp "$TMP/$name/trainer_state.json" "$R/$name/trainer_state.json"
}
tq() {
  local name=$1; shift
  on "$name" || return 0
  echo ">> $name"
  $PY $S --framework torch --out "$TMP/$name" "$@" > "$L/$name.log" 2>&1
}

hf hf_healthy                 --failure none
hf hf_high_lr                 --failure high_lr
hf hf_high_lr_adamw           --failure high_lr --optim adamw --lr 3 --log-every 5
hf hf_bad_sample              --failure bad_sample --bad-step 37 --no-nan-filter
hf hf_bad_sample_filtered     --failure bad_sample --bad-step 37
hf hf_overfit                 --failure overfit
hf hf_frozen                  --failure frozen
hf hf_resume_no_sched         --failure resume_no_sched

# transformers 4.x (Python-repr floats in the console dicts instead of 5.x quoted strings)
HFPY=$PY4 hf hf4_healthy      --failure none

tq torch_healthy    --failure none --jsonl "$L/torch_healthy.jsonl"
tq torch_high_lr    --failure high_lr
tq torch_bad_sample --failure bad_sample --bad-step 37
tq nanogpt_healthy  --failure none --style nanogpt --log-every 10 --eval-steps 50

if on ddp_rank_failure; then
  echo ">> ddp_rank_failure"
  D=$R/ddp_rank_failure
  rm -rf "$D"; mkdir -p "$D"
  # each rank writes $D/rank<N>.log itself; torchrun's own output goes to torchrun.log
  OMP_NUM_THREADS=1 $TORCHRUN --nproc_per_node 2 --master_port 29517 $S --framework ddp \
    --max-steps 60 --fail-rank 1 --fail-step 30 --out "$D" > "$D/torchrun.log" 2>&1
  echo "   torchrun exit code: $?"
fi

# TRL GRPOTrainer (needs `pip install trl` in the venv)
if on grpo_tiny; then
  echo ">> grpo_tiny"
  rm -rf "$TMP/grpo_tiny"
  $PY examples/grpo_tiny.py --out "$TMP/grpo_tiny" > "$L/grpo_tiny.log" 2>&1
  mkdir -p "$R/grpo_tiny"
  cp "$L/grpo_tiny.log" "$R/grpo_tiny/run.log"
  cp "$TMP/grpo_tiny/trainer_state.json" "$R/grpo_tiny/trainer_state.json"
fi

# PyTorch Lightning CSVLogger (needs `pip install lightning` in the venv)
if on lightning_tiny; then
  echo ">> lightning_tiny"
  rm -rf "$TMP/lightning_tiny"
  mkdir -p "$R/lightning_tiny"
  $PY examples/lightning_tiny.py --out "$TMP/lightning_tiny" > "$R/lightning_tiny/run.log" 2>&1
  cp "$TMP/lightning_tiny/lightning_logs/version_0/metrics.csv" "$TMP/lightning_tiny/lightning_logs/version_0/hparams.yaml" "$R/lightning_tiny/"
fi
