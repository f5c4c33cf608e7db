#!/bin/bash
# start train.py; one log per launch: logs/train_<start time>.log
mkdir -p logs
python3 train.py "$@" > logs/train_$(date +%Y%m%d_%H%M%S).log 2>&1
