#!/usr/bin/env bash
# two ranks on GPU 0 (gloo), each writing logs/train_rankN.log
set -euo pipefail
cd /tmp/incidents/h200-1gpu-rank-logs
exec /opt/torch/.venv/bin/torchrun --nproc-per-node 2 --max-restarts 0 --no-python ./rank.sh --run-name ddp-ranks --seconds 600 --vocab 32768 --hidden 2048 --layers 12 --heads 16 --seq 2048 --batch 4 --draft-layers 2 --draft-heads 16 --attn sdpa --log-every 5 --no-wandb --pg-timeout 30 --inject-hang drafter:150 --fault-rank 1
