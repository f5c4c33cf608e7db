#!/usr/bin/env bash
# First look at a lent H200 machine: versions, a short NVML recording under load, a short A/B.
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi -L; nvidia-smi --query-gpu=driver_version,name,memory.total --format=csv
python3 -c "import torch, wandb, pynvml; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'gpus', torch.cuda.device_count(), 'wandb', wandb.__version__)"
mkdir -p $OUT/rec
python3 -m dflash_postmortem.cli record-gpus --out $OUT/rec --interval 0.5 --duration 24 &
REC=$!
sleep 2
python3 - <<'PY'
import threading, time, torch
def burn(dev, secs, n):
    torch.cuda.set_device(dev)
    x = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    t = time.time()
    while time.time() - t < secs:
        x = x @ x; x = x / x.norm()
    torch.cuda.synchronize()
ts = [threading.Thread(target=burn, args=(d, 8 + 6 * d, 8192)) for d in range(torch.cuda.device_count())]
[t.start() for t in ts]; [t.join() for t in ts]
PY
wait $REC
ls -la $OUT/rec
timeout 330 python3 benchmarks/replay_ab_gpu.py --out /tmp/ab --seconds 25 --only baseline,linear-attn-fallback --budget 240 --startup-limit 150
cat /tmp/ab/ab_table.md 2>/dev/null
tar czf $OUT/ab.tgz -C /tmp ab
