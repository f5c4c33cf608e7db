#!/usr/bin/env bash
# start the big drafter run
set -euo pipefail
cd /tmp/incidents/h200-1gpu-oom-bashx
RUN=${1:-big-drafter}
export CUDA_VISIBLE_DEVICES=0
/opt/torch/.venv/bin/python3 -m dflash_postmortem.replay.train --run-name "$RUN" --seconds 20 --vocab 32768 --hidden 8192 --layers 8 --heads 64 --seq 1024 --batch 1 --draft-layers 1 --draft-heads 64 --attn sdpa --log-every 5 --no-wandb --pid-file run/$RUN.pid
