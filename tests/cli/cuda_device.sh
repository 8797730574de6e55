#!/usr/bin/env bash
# wxcast train's device and precision keys, on any machine: precision bf16 on the CPU is a config
# error (exit 2) naming the key and line; an unknown device is a config error listing the
# choices; device: cuda exits with one "wxcast: error:" line: 2 in a build without CUDA and 1 on a
# CUDA build with no GPU visible (naming the device), before any data is read; with a GPU the run
# starts on it and stops at the missing archive (exit 1 naming it). Nothing is written. Without a
# GPU, `wxcast demo` with device: cuda in its train.yaml fails the same way before making anything.
# Usage: cuda_device.sh WXCAST SRCDIR
set -u
W="$1"
SRC=$(cd "$2" && pwd)
T=$(mktemp -d /tmp/wx_cli_cuda_device.XXXXXX)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/checks.sh"
cfg() { # cfg NAME EXTRA-LINES: a training config with the tiny model and a missing archive
    printf 'model: %s\ndata:\n  archive: %s/no-archive\n  time_step: 6h\n  train_years: [2000, 2000]\n  valid_years: [2001, 2001]\n  test_years: [2002, 2002]\n%s' \
        "$SRC/configs/model/fourcastnet_tiny.yaml" "$T" "$2" >"$T/$1.yaml"
}

cfg bf16cpu $'precision: bf16\n'
run train "$T/bf16cpu.yaml"
fails 2 "precision bf16 on the cpu" "bf16cpu.yaml: line 8: key 'precision'" "needs device: cuda"

cfg tpu $'device: tpu\n'
run train "$T/tpu.yaml"
fails 2 "unknown device" "device" "tpu"

cfg cuda $'device: cuda\nprecision: bf16\n'
run train "$T/cuda.yaml"
cuda_build=$("$W" info 2>/dev/null | grep -c "CUDA yes")
gpus=$(nvidia-smi -L 2>/dev/null | grep -c GPU)
if [ "$cuda_build" -eq 0 ]; then
    fails 2 "cuda in a build without CUDA" "key 'device': device 'cuda'" "built without CUDA"
elif [ "$gpus" -eq 0 ]; then
    fails 1 "cuda without a GPU" "key 'device': device 'cuda'" "no CUDA device"
else
    fails 1 "cuda with a GPU: trains there, stops at the missing archive" "no-archive" "does not exist"
fi
[ ! -e "$T/checkpoints" ]; check "nothing written" $?

# wxcast demo checks its train configs' device before making the world (minutes of synth and
# ingest): without a GPU it fails at once, naming train.yaml's line, with no world written.
if [ "$cuda_build" -eq 0 ] || [ "$gpus" -eq 0 ]; then
    mkdir "$T/democfg" && cp "$SRC"/configs/demo/*.yaml "$T/democfg/"
    printf 'device: cuda\n' >>"$T/democfg/train.yaml"
    run demo --output "$T/demo" --configs "$T/democfg"
    if [ "$cuda_build" -eq 0 ]; then
        fails 2 "demo, device: cuda in a build without CUDA" "train.yaml: line" "key 'device'"
    else
        fails 1 "demo, device: cuda without a GPU" "train.yaml: line" "key 'device'" "no CUDA device"
    fi
    [ ! -e "$T/demo/world" ] && [ ! -e "$T/demo/archive" ]; check "demo: no world or archive made" $?
fi

checks_summary
