#!/usr/bin/env bash
# one rank of the job, its output in a log of its own
exec /opt/torch/.venv/bin/python3 -m dflash_postmortem.replay.train "$@" > logs/train_rank${RANK}.log 2>&1
