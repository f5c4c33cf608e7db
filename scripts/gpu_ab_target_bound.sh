#!/usr/bin/env bash
# The linear-attention fallback with a target that is the bottleneck: 24 target layers feeding a
# 1-layer drafter (the default A/B placement is drafter-bound and hides a slower target).
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
timeout 420 python3 benchmarks/replay_ab_gpu.py --out /tmp/ab3 --seconds 65 --only baseline,linear-attn-fallback \
  --budget 300 --startup-limit 150 --shape-args "--layers 24 --draft-layers 1"
tar czf ${OUT:-/tmp}/ab3.tgz -C /tmp ab3
