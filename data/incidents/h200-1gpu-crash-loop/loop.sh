#!/usr/bin/env bash
# restart the trainer forever
while true; do
  /opt/torch/.venv/bin/python3 -m dflash_postmortem.replay.train --run-name looped --seconds 30 --vocab 32768 --hidden 2048 --layers 12 --heads 16 --seq 2048 --batch 4 --draft-layers 2 --draft-heads 16 --attn sdpa --log-every 5 --no-wandb $EXTRA
  echo "trainer died with $?, restarting in 4 s"
  sleep 4
done
