#!/usr/bin/env bash
# The replay loop's measured runs on a lent 2 x H200 machine, in two calls of under 10 minutes:
#   bash scripts/gpu_ab.sh 1   baseline and four single-knob configurations, 70 s each
#   bash scripts/gpu_ab.sh 2   the remaining configurations, then the `full` scenario incident
# Results come back as tarballs in $OUT (the device tool returns files, not folders).
set -u
PHASE=${1:-1}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
OUTDIR=${OUT:-/tmp/out}
if [ "$PHASE" = 1 ]; then
  ONLY=baseline,linear-attn-fallback,lm-head-trainable,lm-head-recompute,layer-ckpt-nonreentrant
  timeout 560 python3 benchmarks/replay_ab_gpu.py --out /tmp/ab1 --seconds 70 --only $ONLY --budget 400 --startup-limit 120
  tar czf $OUTDIR/ab1.tgz -C /tmp ab1
else
  ONLY=layer-ckpt-reentrant,compile-unguarded,write-up
  timeout 330 python3 benchmarks/replay_ab_gpu.py --out /tmp/ab2 --seconds 70 --only $ONLY --budget 260 --startup-limit 120
  tar czf $OUTDIR/ab2.tgz -C /tmp ab2
  # The incident replay uses the capture's model size (16-layer 0.8B target, vocab 131072) so that
  # each of its four launches starts in seconds.
  timeout 250 python3 -m dflash_postmortem.cli replay full --out /tmp/full/incident --seconds 25 --quiet \
    --trainer-args "--vocab 131072 --hidden 2048 --layers 16 --heads 16 --seq 2048 --batch 2 --draft-layers 2 --draft-heads 16 --target-gpus 0 --drafter-gpus 1 --compile main-thread --log-every 5"
  tar czf $OUTDIR/full.tgz -C /tmp full
fi
