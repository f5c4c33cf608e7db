import sys, time  # a data cache another job writes
size = int(sys.argv[2])
with open(sys.argv[1], "wb") as f:
    while size > 0:
        n = min(size, 1 << 20)
        f.write(b"\0" * n)
        size -= n
print("cache written", flush=True)
