#!/usr/bin/env bash
# wxcast forecast --device/--precision and wxcast daily's device/precision keys, on any machine:
# an unknown device or precision, and bf16 without cuda, exit 2 with one "wxcast: error:" line
# naming the value; --device cuda (forecast) and device: cuda (daily) exit with one error line: 2 in
# a build without CUDA (daily: 1, its run error for any failed forecast), 1 on a CUDA build with no GPU visible (naming the device: the backend is
# checked before the checkpoint is read), and with a GPU 1 at the checkpoint (a dummy file here).
# Nothing is left behind: no forecast file, no dated or temporary daily folder.
# Usage: forecast_device.sh WXCAST SRCDIR
set -u
W="$1"
T=$(mktemp -d /tmp/wx_cli_forecast_device.XXXXXX)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/checks.sh"
run_flags=(-q)
echo "not a checkpoint" >"$T/model.ckpt"
echo "not an analysis" >"$T/analysis_20001227_00.nc"
fc() { run forecast --model "$T/model.ckpt" --init "$T/analysis_20001227_00.nc" --steps 2 --output "$T/f.nc" "$@"; }

fc --device bogus
fails 2 "--device bogus" "--device bogus" "cpu or cuda"
fc --device cpu --precision half
fails 2 "--precision half" "--precision half" "fp32 or bf16"
fc --precision bf16
fails 2 "--precision bf16 on the cpu" "bf16" "--device cuda"

cuda_build=$("$W" info 2>/dev/null | grep -c "CUDA yes")
gpus=$(nvidia-smi -L 2>/dev/null | grep -c GPU)
expect_cuda() { # WHAT [CODE]: the cuda outcome of this machine and build (CODE: exit code of a
    # build without CUDA, default 2; daily reports every failed forecast run as a run error, 1)
    if [ "$cuda_build" -eq 0 ]; then
        fails "${2:-2}" "$1 in a build without CUDA" "device 'cuda'" "built without CUDA"
    elif [ "$gpus" -eq 0 ]; then
        fails 1 "$1 without a GPU" "device 'cuda'" "no CUDA device"
    else
        fails 1 "$1 with a GPU: stops at the dummy checkpoint" "model.ckpt"
    fi
}
fc --device cuda
expect_cuda "forecast --device cuda"
fc --device cuda --precision bf16
expect_cuda "forecast --device cuda --precision bf16"
[ ! -e "$T/f.nc" ] && [ -z "$(ls "$T" | grep -v -e model.ckpt -e analysis_ -e out -e err)" ]
st=$? # before the message's own command substitution resets $?
check "forecast: nothing written (have: $(ls "$T" | tr '\n' ' '))" $st

# wxcast daily: the config's device/precision keys, and --device/--precision overriding them
daily_cfg() { # daily_cfg EXTRA-LINES
    printf 'analysis: {folder: %s, pattern: "analysis_{YYYYMMDD}_{HH}.nc"}\nmodel: %s/model.ckpt\noutput: %s/products\nmaps: {enabled: false}\n%s' \
        "$T" "$T" "$T" "$1" >"$T/daily.yaml"
}
daily_cfg $'device: tpu\n'
run daily "$T/daily.yaml" --date 2000-12-27
fails 2 "daily device: tpu" "device" "tpu"
daily_cfg $'device: cpu\nprecision: bf16\n'
run daily "$T/daily.yaml" --date 2000-12-27
fails 2 "daily precision bf16 with device cpu" "precision bf16 needs device cuda"
daily_cfg $'device: cpu\n'
run daily "$T/daily.yaml" --date 2000-12-27 --device bogus
fails 2 "daily --device bogus" "--device bogus"
daily_cfg $'device: cuda\n'
run daily "$T/daily.yaml" --date 2000-12-27
expect_cuda "daily device: cuda" 1
daily_cfg $'device: cpu\n'
run daily "$T/daily.yaml" --date 2000-12-27 --device cuda
expect_cuda "daily --device cuda over device: cpu" 1
[ -z "$(ls -A "$T/products" 2>/dev/null)" ]
st=$?
check "daily: no dated or temporary folder (have: $(ls -A "$T/products" 2>/dev/null | tr '\n' ' '))" $st

checks_summary
