import sys, time, torch  # hog_compute
dev = "cuda" if torch.cuda.is_available() else "cpu"
n = 8192 if dev == "cuda" else 256
x = torch.randn(n, n, device=dev, dtype=torch.bfloat16 if dev == "cuda" else torch.float32)
print("computing", flush=True)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    y = x @ x
    if dev == "cuda":
        torch.cuda.synchronize()
print("done", flush=True)
