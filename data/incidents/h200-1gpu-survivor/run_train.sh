#!/usr/bin/env bash
# start a training run; arguments go to the trainer
cd "$(dirname "$0")"
/opt/torch/.venv/bin/python3 -m dflash_postmortem.replay.train "$@"
