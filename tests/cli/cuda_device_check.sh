#!/usr/bin/env bash
# scripts/device_check.sh's logic on a machine without a GPU: it stops at once with "no GPU
# visible" and exit 3 (building nothing); --dry-run prints every step with its timeout and both
# tables and exits 0 without building; an unknown option exits 2. On a GPU machine only the
# dry run and the option check run here (the real check is the script itself). --prebuilt without
# a bundle exits 2 naming it; --prebuilt --dry-run prints the prebuilt plan.
# Usage: cuda_device_check.sh WXCAST SRCDIR
set -u
SRC=$(cd "$2" && pwd)
T=$(mktemp -d /tmp/wx_cli_device_check.XXXXXX)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/checks.sh"
export WX_DEVICE_BUILD="$T/build"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c GPU)
if [ "$gpus" -eq 0 ]; then
    OUT="$T/out1" bash "$SRC/scripts/device_check.sh" >"$T/log" 2>&1
    rc=$?
    [ $rc -eq 3 ]; check "no GPU: exit 3 (got $rc)" $?
    grep -q "no GPU visible" "$T/log"; check "no GPU: says so" $?
    tail -1 "$T/log" | grep -q "^gpu .*none"; check "no GPU: the summary table comes last" $?
    [ ! -e "$T/build" ]; check "no GPU: nothing built" $?
fi
mkdir -p "$T/out2"
OUT="$T/out2" bash "$SRC/scripts/device_check.sh" --dry-run >"$T/dry" 2>&1
rc=$?
[ $rc -eq 0 ]; check "dry run: exit 0 (got $rc)" $?
for step in "cmake configure" "build cuda tests" "ctest -L cuda" "bench gemm rate" \
    "bench wxcast train bf16" "bench wxcast rollout 56"; do
    grep -q "^$step .*dry-run .*timeout [0-9]*s" "$T/dry"; check "dry run lists '$step'" $?
done
grep -q "== GPU benchmarks" "$T/dry"; check "dry run prints the benchmark table" $?
grep -q "GraphCast_small 1 deg, 40 steps" "$T/dry"; check "dry run names the GraphCast row" $?
[ ! -e "$T/build" ]; check "dry run: nothing built" $?
# every step's limit fits the 8-minute budget (the script also caps each by the time left)
max=$(sed -n 's/^.* dry-run .*timeout \([0-9]*\)s$/\1/p' "$T/dry" | sort -n | tail -1)
[ -n "$max" ] && [ "$max" -le 480 ]; check "dry run: longest step limit ${max:-?} s <= 480 s" $?
bash "$SRC/scripts/device_check.sh" --bogus >"$T/bad" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "unknown option '--bogus'" "$T/bad"; check "unknown option: exit 2 (got $rc)" $?
# --prebuilt runs what scripts/device_bundle.sh packed; without that bundle it says so (exit 2)
WX_DEVICE_BUNDLE="$T/no-bundle" bash "$SRC/scripts/device_check.sh" --prebuilt >"$T/pb" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "needs $T/no-bundle/build.tar.xz: run scripts/device_bundle.sh first" "$T/pb"
check "--prebuilt without a bundle: exit 2 naming it (got $rc: $(head -1 "$T/pb"))" $?
OUT="$T/out3" bash "$SRC/scripts/device_check.sh" --prebuilt --dry-run >"$T/pbdry" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q "^build mode .*prebuilt" "$T/pbdry" && grep -q "^ctest -L cuda .*dry-run" "$T/pbdry"
check "--prebuilt --dry-run: exit 0, the prebuilt plan (got $rc)" $?
[ ! -e "$T/build" ]; check "--prebuilt dry run: nothing built" $?
checks_summary
