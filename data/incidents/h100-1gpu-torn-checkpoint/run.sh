#!/bin/bash
# keep the run alive: if train.py dies, start it again; it picks up from ckpt/last.pt
cd "$(dirname "$0")"
while true; do
    echo "$(date -u +%FT%TZ) starting train.py"
    python3 train.py --resume ckpt/last.pt --batch-size 16 --save-interval 15 --log-every 25 >> logs/train.log 2>&1
    rc=$?
    echo "$(date -u +%FT%TZ) train.py exited with code $rc, restarting in 5s"
    sleep 5
done
