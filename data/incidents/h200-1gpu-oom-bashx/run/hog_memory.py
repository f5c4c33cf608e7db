import torch, time  # hog_memory
x = torch.empty(137438953472, dtype=torch.uint8, device='cuda')
print('holding', x.numel() >> 30, 'GiB', flush=True)
time.sleep(3600)
