#!/usr/bin/env bash
# The `stall` scenario on one lent H200 (target and drafter on GPU 0), in one call of ~2.5 minutes:
#   bash scripts/gpu_stall.sh hang    ~30 s of training, then the drafter thread blocks for good at
#                                     its step 150; 75 s later the operator checks, kills the run
#                                     and relaunches it through `dflash-postmortem launch --expect-gpu`
#   bash scripts/gpu_stall.sh crash   the same with a drafter thread that raises at its step 100 and
#                                     dies while the loop runs on without it (60 s of stall)
# The incident folder comes back as $OUT/stall.tgz.
set -u
export PYTHONUNBUFFERED=1 TZ=UTC
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi -L; nvidia-smi --query-gpu=driver_version,name,memory.total --format=csv
python3 -c "import torch, wandb; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'wandb', wandb.__version__)"
BY=${1:-hang}
if [ "$BY" = hang ]; then STALL="--stall-seconds 75 --stall-at-step 150"; else STALL="--stall-seconds 60 --stall-at-step 100"; fi
timeout 330 python3 -m dflash_postmortem.cli replay stall --out /tmp/stall/incident --seconds 20 \
  --stall-by $BY $STALL --ps-interval 2 \
  --trainer-args "--vocab 131072 --hidden 2048 --layers 16 --heads 16 --seq 2048 --batch 2 --draft-layers 2 --draft-heads 16 --target-gpus 0 --drafter-gpus 0 --compile main-thread --log-every 5"
echo "replay rc=$?"
tail -n 30 /tmp/stall/incident/logs/operator.log
tar czf ${OUT:-/tmp}/stall.tgz -C /tmp stall
