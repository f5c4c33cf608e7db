#!/usr/bin/env bash
# watchdog.sh: start train.py and keep it going. Every CHECK_EVERY seconds look at how long ago
# logs/train.log was last written; past STALL_LIMIT, stop the trainer (SIGTERM, then SIGKILL after
# TERM_GRACE seconds) and start it again with --resume. Exit when train.py exits 0.
#
#   nohup ./watchdog.sh > logs/watchdog.log 2>&1 &
cd "$(dirname "$0")" || exit 1

PY=${PY:-python3}
TRAIN_ARGS="--max-steps 1500"
FIRST_ARGS=${WATCHDOG_FIRST_ARGS:-}   # extra flags for a launch that starts from scratch
LOG=logs/train.log
STALL_LIMIT=60    # seconds without a write to $LOG
CHECK_EVERY=10
TERM_GRACE=15

say() { echo "$(date -u '+%Y-%m-%d %H:%M:%S') watchdog: $*"; }

launch() {
    local extra=$FIRST_ARGS
    if ls ckpt/step_*.pt > /dev/null 2>&1; then
        extra=--resume
    fi
    $PY train.py $TRAIN_ARGS $extra >> "$LOG" 2>&1 &
    pid=$!
    started=$(date +%s)
    say "started train.py pid $pid${extra:+ ($extra)}"
}

mkdir -p logs
say "watching $LOG (stall limit ${STALL_LIMIT}s, checked every ${CHECK_EVERY}s)"
launch
while true; do
    sleep "$CHECK_EVERY"
    if ! kill -0 "$pid" 2>/dev/null; then
        wait "$pid"
        status=$?
        if [ "$status" -eq 0 ]; then
            say "train.py finished (status 0), exiting"
            exit 0
        fi
        say "$pid exited (status $status)"
        say "relaunching with --resume"
        launch
        continue
    fi
    last=$(stat -c %Y "$LOG")
    [ "$last" -lt "$started" ] && last=$started
    age=$(( $(date +%s) - last ))
    if [ "$age" -gt "$STALL_LIMIT" ]; then
        say "train.log not written for ${age}s (limit ${STALL_LIMIT}s), sending SIGTERM to $pid"
        kill -TERM "$pid"
        waited=0
        while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt "$TERM_GRACE" ]; do
            sleep 1
            waited=$((waited + 1))
        done
        if kill -0 "$pid" 2>/dev/null; then
            say "$pid still alive after ${TERM_GRACE}s, sending SIGKILL"
            kill -KILL "$pid"
        fi
        wait "$pid"
        status=$?
        say "$pid exited (status $status)"
        say "relaunching with --resume"
        launch
    fi
done
