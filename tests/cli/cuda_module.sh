#!/usr/bin/env bash
# The CUDA backend is a module (libwxcast_cuda.so beside the program) loaded only when something
# asks for CUDA. glibc's loader lists every object it opens under LD_DEBUG=files, independently of
# wxcast: `--version` and a CPU command (inspect of a missing archive, which fails) open no CUDA
# library; `info` opens the module and the CUDA libraries and reports the runtime; a program whose
# module is missing names the file and WXCAST_CUDA_MODULE in one error line (exit 1) for
# `--device cuda`, and `info` still works. Exit 77 in a build without CUDA.
# Usage: cuda_module.sh WXCAST SRCDIR
set -u
W="$1"
T=$(mktemp -d /tmp/wx_cli_cuda_module.XXXXXX)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/checks.sh"
"$W" info >"$T/info" 2>&1
if ! grep -q "CUDA yes" "$T/info"; then echo "built without CUDA: nothing to check"; exit 77; fi
cuda_libs='libcudart|libcublas|libcufft|libnccl|libwxcast_cuda'

LD_DEBUG=files "$W" --version >/dev/null 2>"$T/v.dbg"
grep -q "file=" "$T/v.dbg"; check "LD_DEBUG=files lists the objects --version loads" $?
! grep -E -q "file=[^ ]*($cuda_libs)" "$T/v.dbg"; check "--version opens no CUDA library" $?
LD_DEBUG=files "$W" inspect "$T/no-archive" >/dev/null 2>"$T/i.dbg"
! grep -E -q "file=[^ ]*($cuda_libs)" "$T/i.dbg"; check "a CPU command (inspect) opens no CUDA library" $?

LD_DEBUG=files "$W" info >"$T/info2" 2>"$T/info.dbg"
grep -q "file=[^ ]*libwxcast_cuda.so" "$T/info.dbg"; check "info opens the CUDA module" $?
grep -q "file=[^ ]*libcublas" "$T/info.dbg"; check "info's module brings cuBLAS" $?
grep -E -q "CUDA +runtime [0-9]+\.[0-9]+" "$T/info2"; check "info reports the CUDA runtime version" $?

# The program without its module.
mkdir "$T/lone" && cp "$W" "$T/lone/wxcast"
"$T/lone/wxcast" forecast --model m.ckpt --init a --time 2020-01-01T00 --steps 1 --output "$T/o.nc" \
    --device cuda >"$T/out" 2>"$T/err"
rc=$?
err=$(cat "$T/err")
[ "$rc" -eq 1 ]; check "missing module: exit 1 (got $rc: $err)" $?
[ "$(wc -l <"$T/err")" -eq 1 ] && [[ "$err" == "wxcast: error: "* ]]; check "missing module: one error line ($err)" $?
for p in "device 'cuda'" "libwxcast_cuda.so" "$T/lone" "WXCAST_CUDA_MODULE"; do
    grep -qF -- "$p" "$T/err"; check "missing module: names '$p' ($err)" $?
done
[ ! -e "$T/o.nc" ]; check "missing module: nothing written" $?
"$T/lone/wxcast" info >"$T/info3" 2>&1
rc=$?
[ "$rc" -eq 0 ] && grep -q "cannot load its module" "$T/info3"; check "info without the module: exit 0, says why (rc $rc)" $?
WXCAST_CUDA_MODULE="$(dirname "$W")/libwxcast_cuda.so" "$T/lone/wxcast" info >"$T/info4" 2>&1
grep -E -q "CUDA +runtime [0-9]+\.[0-9]+" "$T/info4"; check "WXCAST_CUDA_MODULE points a lone program at the module" $?

checks_summary
