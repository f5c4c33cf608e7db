"""What the replay scenario tests share: the tiny model and the line forms they check."""

import re

TINY = ("--vocab 509 --hidden 32 --layers 4 --heads 2 --seq 64 --draft-heads 2 --num-anchors 6 "
        "--dataset-tokens 4096 --log-every 1 --cpu-share 0.25")
STEP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[(\w+)\] step \d+ loss [\d.]+ tok/s \d+ queue \d+$", re.M)
COMMAND = re.compile(r"^\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\] \$ (.*)$", re.M)
