#!/usr/bin/env bash
# Issue #13's incident, replayed on lent H200s in one call each (~4-5 minutes):
#   bash scripts/gpu_survivor.sh survivor      the other operator's night: a failed group kill, a
#                                              relaunch under `timeout -s KILL 2`, a relaunch
#                                              sharing the GPUs with the survivor, the survivor
#                                              killed by PID (2 GPUs: target 0, drafter 1)
#   bash scripts/gpu_survivor.sh never-trains  a 64B-parameter target made on the host, moved block
#                                              by block: loading never ends; killed, relaunched
# The incident folder comes back as $OUT/<scenario>.tgz.
set -u
export PYTHONUNBUFFERED=1 TZ=UTC NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi -L; nvidia-smi --query-gpu=driver_version,name,memory.total --format=csv
python3 -c "import torch, wandb; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'gpus', torch.cuda.device_count(), 'wandb', wandb.__version__)"
WHAT=${1:-survivor}
if [ "$(python3 -c 'import torch; print(torch.cuda.device_count())')" -ge 2 ]; then PLACE="--target-gpus 0 --drafter-gpus 1"; else PLACE="--target-gpus 0 --drafter-gpus 0"; fi
MODEL="--vocab 131072 --hidden 2048 --layers 16 --heads 16 --seq 2048 --batch ${BATCH:-8} --draft-layers 2 --draft-heads 16 $PLACE --compile main-thread --log-every 5"
if [ "$WHAT" = survivor ]; then
  timeout 540 python3 -m dflash_postmortem.cli replay survivor --out /tmp/$WHAT/incident --seconds 20 --ps-interval 2 --quiet --trainer-args "$MODEL"
else
  timeout 540 python3 -m dflash_postmortem.cli replay never-trains --out /tmp/$WHAT/incident --seconds 20 --ps-interval 2 --quiet \
    --stall-seconds 120 --trainer-args "$MODEL" --big-args "--materialize host --vocab 131072 --hidden 8192 --heads 64 --layers 80"
fi
echo "replay rc=$?"
for f in /tmp/$WHAT/incident/logs/terminal.log /tmp/$WHAT/incident/logs/operator.log; do [ -f $f ] && tail -c 3000 $f; done
tar czf ${OUT:-/tmp}/$WHAT.tgz -C /tmp $WHAT
