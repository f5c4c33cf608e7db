#!/usr/bin/env bash
# keep the drafter training: restart it from its last checkpoint whenever it dies
cd "$(dirname "$0")"
fault="$FIRST_FAULT"
n=0
while true; do
  n=$((n + 1))
  echo "[supervisor] $(date -u '+%F %T') starting attempt $n"
  /opt/torch/.venv/bin/python3 -m dflash_postmortem.replay.train --run-name resumable --seconds 25 --vocab 32768 --hidden 2048 --layers 12 --heads 16 --seq 2048 --batch 4 --draft-layers 2 --draft-heads 16 --attn sdpa --log-every 5 --no-wandb --checkpoint-dir ckpt --checkpoint-every 60 --resume $fault
  rc=$?
  echo "[supervisor] $(date -u '+%F %T') trainer exited with status $rc"
  [ "$rc" -eq 0 ] && break
  fault=""
  sleep 5
done
