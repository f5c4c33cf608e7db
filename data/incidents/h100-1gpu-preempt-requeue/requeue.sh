#!/bin/bash
# requeue.sh: keep the LM run going on the spot slot. A preemption SIGTERMs train.py, which saves
# a checkpoint and exits; we start it again and it resumes from the newest checkpoint. train.py
# writes logs/DONE when it reaches its last step.
#   nohup ./requeue.sh > logs/requeue.log 2>&1 &
cd "$(dirname "$0")"
mkdir -p logs ckpt
attempt=1
while true; do
    echo "$(date -u +%FT%TZ) requeue: attempt $attempt starting"
    python3 train.py --resume auto --max-steps 1400 2>&1 | tee -a logs/train.log
    status=${PIPESTATUS[0]}
    if [ -f logs/DONE ]; then
        echo "$(date -u +%FT%TZ) requeue: training complete, exiting"
        exit 0
    fi
    echo "$(date -u +%FT%TZ) requeue: attempt $attempt ended with status $status, requeueing in 20s"
    sleep 20
    attempt=$((attempt + 1))
done
