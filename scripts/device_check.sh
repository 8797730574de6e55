#!/usr/bin/env bash
# One-shot GPU check (issue 8): on a machine with an NVIDIA GPU, build wxcast's CUDA backend for
# sm_90, run the `cuda` test label (every CUDA op against the CPU backend), then the GPU benchmarks,
# and print a short table last. Everything fits in 8 minutes: each step has a timeout and the
# optional ones are skipped when the budget runs low.
#
#   bash scripts/device_check.sh            # full CMake build if its dependencies are there,
#                                           # else the lean build (CUDA tests only)
#   bash scripts/device_check.sh --lean     # force the lean build (no netCDF/eccodes/yaml/png)
#   bash scripts/device_check.sh --dry-run  # print the plan (steps, timeouts, commands), build nothing
#   bash scripts/device_check.sh --build-only  # compile and run the cuda label even without a GPU
#                                           # (the tests then skip); no benchmarks
#   bash scripts/device_check.sh --prebuilt # build nothing: run what scripts/device_bundle.sh built
#                                           # on a CPU machine with nvcc (.device-bundle/), with the
#                                           # shared libraries it bundled; for GPU machines that
#                                           # have CUDA but none of the Debian packages
# Without a GPU (nvidia-smi sees none) and without --dry-run/--build-only it stops at once with
# "no GPU visible" and exit code 3: nothing here can be measured on a CPU machine.
#
# Dependencies: the full build needs the Debian packages of scripts/setup.sh. A GPU image may lack
# them and may have no network: the script tries `apt-get install` once (short timeout), and
# otherwise unpacks any .deb files found in $WX_DEBS_DIR (default .device-debs, fetched beforehand
# on a networked machine with `apt-get download`) into a private prefix. The lean build needs only
# OpenBLAS, FFTW3 (float + double, threads) and OpenMP besides the CUDA toolkit: it compiles the op
# sources, the CUDA units and the CUDA tests directly.
#
# Logs go to $OUT (when set, e.g. by a device runner) or to build-device/.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
START=$(date +%s)
BUDGET=${WX_DEVICE_BUDGET_S:-480}
BUILD=${WX_DEVICE_BUILD:-build-device}
LOGS=${WX_DEVICE_LOGS:-${OUT:-$ROOT/$BUILD/logs}}
DEBS=${WX_DEBS_DIR:-.device-debs}
JOBS=$(nproc 2>/dev/null || echo 4)
FORCE_LEAN=0 DRY=0 BUILD_ONLY=0 PREBUILT=0
BUNDLE=${WX_DEVICE_BUNDLE:-.device-bundle}
for a in "$@"; do
  case $a in
    --lean) FORCE_LEAN=1 ;;
    --dry-run) DRY=1 ;;
    --build-only) BUILD_ONLY=1 ;;
    --prebuilt) PREBUILT=1 ;;
    *) echo "device_check: unknown option '$a' (expected --lean, --dry-run, --build-only, --prebuilt)" >&2; exit 2 ;;
  esac
done
if [ $PREBUILT = 1 ] && [ $DRY = 0 ] && [ ! -f "$BUNDLE/build.tar.xz" ]; then
  echo "device_check: --prebuilt needs $BUNDLE/build.tar.xz: run scripts/device_bundle.sh first" >&2
  exit 2
fi
[ $DRY = 1 ] && LOGS=${OUT:-$(mktemp -d /tmp/device_check_dry.XXXXXX)}
mkdir -p "$LOGS"

ROWS=()   # "step|status|seconds|note" for the table
left() { echo $((BUDGET - ($(date +%s) - START))); }
row() { ROWS+=("$1|$2|$3|$4"); }
say() { echo "device_check: $*"; }
# run_step NAME TIMEOUT LOG CMD...: runs CMD with a timeout, logs it, records a table row.
run_step() {
  local name=$1 limit=$2 log=$3; shift 3
  local t0=$(date +%s) rc
  if [ "$limit" -le 5 ]; then row "$name" "skipped" 0 "no time left"; return 124; fi
  say "$name (timeout ${limit}s): $*"
  if [ $DRY = 1 ]; then row "$name" "dry-run" 0 "timeout ${limit}s"; return 0; fi
  timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1
  rc=$?
  local dt=$(( $(date +%s) - t0 ))
  case $rc in
    0) row "$name" "ok" "$dt" "" ;;
    77) row "$name" "skipped" "$dt" "exit 77" ;;
    124|137) row "$name" "TIMEOUT" "$dt" "after ${limit}s" ;;
    *) row "$name" "FAILED" "$dt" "exit $rc, log $(basename "$log")" ;;
  esac
  return $rc
}
print_table() {
  echo
  echo "== device check summary ($(date -u +%Y-%m-%dT%H:%MZ), $(( $(date +%s) - START ))s)"
  printf '%-28s %-8s %6s  %s\n' step status sec note
  for r in "${ROWS[@]}"; do
    IFS='|' read -r a b c d <<<"$r"
    printf '%-28s %-8s %6s  %s\n' "$a" "$b" "$c" "$d"
  done
}
trap print_table EXIT

# ---- machine -------------------------------------------------------------------------------------
export PATH=$PATH:/usr/local/cuda/bin
GPU=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
say "GPU: ${GPU:-none visible (nvidia-smi: $(command -v nvidia-smi || echo missing))}"
NVCC=$(command -v nvcc || true)
say "nvcc: ${NVCC:-missing} $( [ -n "$NVCC" ] && nvcc --version | tail -1)"
row "gpu" "$([ -n "$GPU" ] && echo ok || echo none)" 0 "${GPU:-none visible}"
if [ -z "$GPU" ] && [ $DRY = 0 ] && [ $BUILD_ONLY = 0 ]; then
  say "no GPU visible: nothing can run on hardware here (--build-only compiles and runs the" \
      "skipping tests, --dry-run prints the plan)"
  exit 3
fi
if [ -z "$NVCC" ]; then row "nvcc" "FAILED" 0 "nvcc not found"; [ $DRY = 1 ] || exit 1; fi

# ---- dependencies --------------------------------------------------------------------------------
if [ $PREBUILT = 0 ]; then   # a prebuilt bundle brings its own libraries
have_pc() { pkg-config --exists "$1" 2>/dev/null; }
have_hdr() { echo "#include <$1>" | ${CC:-cc} -E -x c - >/dev/null 2>&1; }
for tool in cmake cc pkg-config; do
  command -v $tool >/dev/null || say "missing tool: $tool"
done
missing_full=() missing_lean=()
for m in openblas fftw3f fftw3; do have_pc $m || missing_lean+=("$m"); done
have_hdr omp.h || missing_lean+=("omp.h")
for m in netcdf yaml-0.1 libpng zlib; do have_pc $m || missing_full+=("$m"); done
have_hdr eccodes.h || missing_full+=("eccodes.h")
say "missing for the lean build: ${missing_lean[*]:-none}; for the full build also: ${missing_full[*]:-none}"

deb_pkgs=(build-essential cmake pkg-config libopenblas-dev libfftw3-dev libnetcdf-dev
          libeccodes-dev libyaml-dev libpng-dev zlib1g-dev)
# --lean needs only the lean set: no install attempt (and its timeout) for the full build's packages
if [ $DRY = 0 ] && { [ ${#missing_lean[@]} -gt 0 ] || { [ $FORCE_LEAN = 0 ] && [ ${#missing_full[@]} -gt 0 ]; }; }; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    say "trying: apt-get install ${deb_pkgs[*]} (fails fast without a network)"
    run_step "apt-get install" 90 "$LOGS/apt.log" bash -c \
      "apt-get -o Acquire::Retries=0 -o Acquire::http::Timeout=10 update -qq &&
       DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ${deb_pkgs[*]}"
  fi
  if ls "$DEBS"/*.deb >/dev/null 2>&1; then
    P=/tmp/wxdeps
    say "unpacking $(ls "$DEBS"/*.deb | wc -l) .deb files from $DEBS into $P"
    mkdir -p $P
    for f in "$DEBS"/*.deb; do dpkg -x "$f" $P || say "could not unpack $f"; done
    # Debian's alternatives links are not unpacked, so the OpenBLAS folders are named directly.
    L=$P/usr/lib/x86_64-linux-gnu
    export LIBRARY_PATH=$L/openblas-pthread:$L:${LIBRARY_PATH:-}
    export LD_LIBRARY_PATH=$L/openblas-pthread:$L:${LD_LIBRARY_PATH:-}
    export PKG_CONFIG_PATH=$L/openblas-pthread/pkgconfig:$L/pkgconfig:$P/usr/share/pkgconfig:${PKG_CONFIG_PATH:-}
    export CPATH=$P/usr/include/x86_64-linux-gnu/openblas-pthread:$P/usr/include/x86_64-linux-gnu:$P/usr/include:${CPATH:-}
    export CMAKE_PREFIX_PATH=$P/usr:${CMAKE_PREFIX_PATH:-}
    # The .pc files name /usr: point them at the private prefix.
    find $P -name '*.pc' -exec sed -i -e "s|=/usr|=$P/usr|" -e "s|-I/usr/|-I$P/usr/|g" \
      -e "s|-L/usr/|-L$P/usr/|g" {} + 2>/dev/null
    row "unpack .debs" "ok" 0 "$DEBS"
  fi
  missing_lean=() missing_full=()
  for m in openblas fftw3f fftw3; do have_pc $m || missing_lean+=("$m"); done
  have_hdr omp.h || missing_lean+=("omp.h")
  for m in netcdf yaml-0.1 libpng zlib; do have_pc $m || missing_full+=("$m"); done
  have_hdr eccodes.h || missing_full+=("eccodes.h")
fi
if [ ${#missing_lean[@]} -gt 0 ]; then
  row "dependencies" "FAILED" 0 "missing ${missing_lean[*]} (carry .debs in $DEBS)"
  [ $DRY = 1 ] || exit 1
fi
fi   # PREBUILT = 0

# ---- build and the cuda tests --------------------------------------------------------------------
status=0
TEST_BIN=
# In a CMake build folder ($BUILD, full or prebuilt): the `cuda` label (-V: every check's line goes
# to the log; the per-test counts and ctest's verdicts are shown), then the CLI tests whose
# behaviour changes with a GPU present; sets the programs the later steps run.
cmake_build_tests() {
  run_step "ctest -L cuda" $(( $(left) < 180 ? $(left) - 30 : 150 )) "$LOGS/ctest.log" \
    ctest --test-dir "$BUILD" -L cuda -V || status=1
  grep -E "passed, [0-9]+ failed|FAIL|Test +#|tests passed|tests failed" "$LOGS/ctest.log"
  if [ -n "$GPU" ] && grep -q "Skipped\|Not Run" "$LOGS/ctest.log" 2>/dev/null; then
    say "a cuda test skipped although nvidia-smi sees a GPU"; row "cuda tests ran" "FAILED" 0 "skipped"
    status=1
  fi
  run_step "ctest cli on the GPU" 60 "$LOGS/ctest_cli.log" ctest --test-dir "$BUILD" \
    -R '^cli_(cuda_device|cuda_module|forecast_device)$' --output-on-failure || status=1
  cat "$LOGS/ctest_cli.log" 2>/dev/null
  TEST_BIN=$BUILD/tests/test_cuda_ops
  BENCH_BIN=$BUILD/tests/bench_cuda
  WXCAST_BIN=$BUILD/wxcast
}
# The whole project through CMake (the product build, label `cuda`). Returns 1 if it cannot build.
full_build_and_test() {
  row "build mode" "full" 0 "CMake, WX_CUDA=ON, sm_90"
  run_step "cmake configure" 90 "$LOGS/configure.log" \
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DWX_CUDA=ON -DWX_CUDA_ARCHS=90 -DWX_MPI=OFF \
    || { tail -20 "$LOGS/configure.log"; return 1; }
  # every test of the `cuda` label (tests/unit/test_cuda_*.c): ctest -L cuda runs them all, and
  # one not built would count as failed
  local targets=$(ls tests/unit/test_cuda_*.c | sed 's|.*/\(test_cuda_[a-z0-9_]*\)\.c|\1|')
  run_step "build cuda tests" $(( $(left) < 300 ? $(left) - 90 : 210 )) "$LOGS/build.log" \
    cmake --build "$BUILD" -j"$JOBS" --target $targets bench_cuda wxcast \
    || { grep -E "error|warning" "$LOGS/build.log" | head -30; return 1; }
  grep -E "\.cu.*warning" "$LOGS/build.log" 2>/dev/null | head -10
  cmake_build_tests
}
# Only what the CUDA tests need (ops, CUDA units, harness), compiled directly: needs no netCDF,
# eccodes, libyaml or libpng, and no other part of the tree to build.
lean_build_and_test() {
  row "build mode" "lean" 0 "ops + CUDA units + CUDA tests only"
  LB=$BUILD/lean
  mkdir -p "$LB/generated" "$LB/obj"
  sed -e 's/@PROJECT_VERSION@/lean/' -e 's/@WX_HAVE_MPI@/0/' -e 's/@WX_HAVE_CUDA@/1/' \
      -e 's/@CMAKE_BUILD_TYPE@/Release/' -e 's/@CMAKE_C_COMPILER_ID@ @CMAKE_C_COMPILER_VERSION@/cc/' \
      -e 's/@WX_CUDA_ARCHS@/90/' -e "s|@CMAKE_SOURCE_DIR@|$ROOT|" \
      src/core/wx_build_config.h.in >"$LB/generated/wx_build_config.h"
  cat >"$LB/build.sh" <<EOF
set -e
cd "$ROOT"
I="-Isrc -Ikernels -Itests/support -I$LB/generated \$(pkg-config --cflags openblas fftw3f fftw3)"
CF="-O2 -std=gnu11 -fopenmp -Wall -Wno-unused-parameter \$I"
objs=()
for f in src/core/wx_error.c src/backend/wx_backend_cpu.c src/backend/wx_backend_mem.c src/backend/wx_ctx.c \
         src/backend/wx_batch_stage.c src/backend/wx_cuda_module.c \
         src/models/params.c tests/support/wx_test.c; do
  o=$LB/obj/\$(basename \$f .c).o; cc \$CF -c \$f -o \$o; objs+=(\$o)
done
for f in src/ops/*.c; do
  o=$LB/obj/\$(basename \$f .c).o; cc \$CF -c \$f -o \$o; objs+=(\$o)
  o=$LB/obj/\$(basename \$f .c)_f64.o; cc \$CF -DWX_REAL_DOUBLE=1 -c \$f -o \$o; objs+=(\$o)
done
pids=()
for f in kernels/*.cu; do
  o=$LB/obj/\$(basename \$f .cu)_cu.o
  nvcc -O2 -std=c++17 -arch=sm_90 -Xcompiler -Wall \$I -c \$f -o \$o &
  pids+=(\$!) objs+=(\$o)
done
for p in \${pids[@]}; do wait \$p; done   # each wait fails the script (set -e) if its nvcc did
libs="\$(pkg-config --libs-only-L openblas fftw3f) -lcublas -lcublasLt -lcufft -lnccl -lcudart -lopenblas -lfftw3f_threads -lfftw3_threads -lfftw3f -lfftw3 -lgomp -lm -lstdc++"
for t in cuda_basic cuda_ops cuda_host; do
  cc \$CF -c tests/unit/test_\$t.c -o $LB/obj/test_\$t.o
  # --export-dynamic: the CUDA units are linked in, and wx_cuda() finds their table by dlsym
  nvcc -arch=sm_90 -o $LB/test_\$t $LB/obj/test_\$t.o \${objs[@]} -Xcompiler -fopenmp -Xlinker --export-dynamic \$libs
done
EOF
  run_step "lean build" $(( $(left) < 300 ? $(left) - 60 : 240 )) "$LOGS/build.log" bash "$LB/build.sh" \
    || { grep -E "error|warning" "$LOGS/build.log" | head -30; return 1; }
  for t in cuda_basic cuda_ops cuda_host; do
    run_step "test $t" $(( $(left) < 150 ? $(left) - 30 : 120 )) "$LOGS/test_$t.log" "$LB/test_$t"
    rc=$?
    [ $rc = 0 ] || [ $rc = 77 ] || status=1
    [ $rc = 77 ] && [ -n "$GPU" ] && { say "test $t skipped although nvidia-smi sees a GPU"; status=1; }
    tail -30 "$LOGS/test_$t.log" 2>/dev/null
  done
  TEST_BIN=$LB/test_cuda_ops
}
# What scripts/device_bundle.sh built on a CPU machine: the build folder (CMake's absolute paths
# name the folder it was built in, so that path is made to point here), the non-CUDA shared
# libraries it needs, and this machine's own CUDA libraries (they match its driver). Then the same
# tests as the full build: the `cuda` label and the CLI checks that change with a GPU present.
prebuilt_setup_and_test() {
  row "build mode" "prebuilt" 0 "$(cat "$BUNDLE/made" 2>/dev/null | head -1)"
  [ $DRY = 1 ] && { row "ctest -L cuda" "dry-run" 0 ""; return 0; }
  local src; src=$(cat "$BUNDLE/source_dir")
  BUILD=$(cat "$BUNDLE/build_dir")
  if [ "$src" != "$ROOT" ]; then
    if [ -e "$src" ] && [ "$(cd "$src" && pwd -P)" != "$(pwd -P)" ]; then
      row "source path" "FAILED" 0 "$src exists here and is not this tree"; return 1
    fi
    mkdir -p "$(dirname "$src")" && ln -sfn "$ROOT" "$src" ||
      { row "source path" "FAILED" 0 "cannot link $src"; return 1; }
  fi
  tar -xJf "$BUNDLE/build.tar.xz" -C "$ROOT" || { row "unpack build" "FAILED" 0 ""; return 1; }
  local libs=/tmp/wx_bundle/libs
  rm -rf /tmp/wx_bundle && mkdir -p /tmp/wx_bundle && tar -xJf "$BUNDLE/libs.tar.xz" -C /tmp/wx_bundle ||
    { row "unpack libraries" "FAILED" 0 ""; return 1; }
  export PATH=$PATH:/tmp/wx_bundle/bin
  if [ -d /tmp/wx_bundle/eccodes/definitions ]; then
    export ECCODES_DEFINITION_PATH=/tmp/wx_bundle/eccodes/definitions
    export ECCODES_SAMPLES_PATH=/tmp/wx_bundle/eccodes/samples
  fi
  # This machine's CUDA libraries, wherever its toolkit or Python wheels put them.
  local dirs=() missing=() lib d
  for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libcufft.so.12 libnccl.so.2; do
    d=$(find /usr/local/cuda/lib64 /usr/local/cuda/targets /usr/local /usr/lib /opt -name "$lib" \
          -print -quit 2>/dev/null)
    if [ -n "$d" ]; then dirs+=("$(dirname "$d")"); else missing+=("$lib"); fi
  done
  local cudalibs; cudalibs=$(printf '%s\n' "${dirs[@]}" | awk '!seen[$0]++' | paste -sd:)
  export LD_LIBRARY_PATH=$libs:$cudalibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  say "CUDA libraries from: ${cudalibs:-none}${missing[*]:+; missing ${missing[*]}}"
  row "runtime libraries" "$([ ${#missing[@]} = 0 ] && echo ok || echo FAILED)" 0 \
    "${missing[*]:-bundle + $cudalibs}"
  ldd "$BUILD/tests/test_cuda_ops" | grep "not found" && return 1
  if command -v ctest >/dev/null; then
    cmake_build_tests
  else # the test programs one by one
    local t rc
    for t in "$BUILD"/tests/test_cuda_*; do
      run_step "test $(basename "$t")" 120 "$LOGS/$(basename "$t").log" "$t"
      rc=$?; [ $rc = 0 ] || status=1
      tail -20 "$LOGS/$(basename "$t").log"
    done
    TEST_BIN=$BUILD/tests/test_cuda_ops BENCH_BIN=$BUILD/tests/bench_cuda WXCAST_BIN=$BUILD/wxcast
  fi
}
if [ $PREBUILT = 1 ]; then
  prebuilt_setup_and_test || exit 1
elif [ $FORCE_LEAN = 0 ] && [ ${#missing_full[@]} -eq 0 ] && command -v cmake >/dev/null; then
  full_build_and_test || { say "full build failed: trying the lean build"; lean_build_and_test || exit 1; }
else
  [ ${#missing_full[@]} -gt 0 ] && say "full build impossible (missing ${missing_full[*]}): lean build"
  lean_build_and_test || exit 1
fi

# ---- the product end to end, trained on the GPU -------------------------------------------------
# tests/cli/e2e_tiny.sh and e2e_tiny_gc.sh with WX_E2E_DEVICE=cuda: `wxcast demo` on a tiny
# synthetic world (synth, ingest, FourCastNet / GraphCast trained on the GPU in bf16, 72 h
# rollouts scored on the CPU), each asserting that the model beats persistence; GraphCast's then
# runs `wxcast forecast --device cuda` (NetCDF, GRIB2) and `wxcast daily` with device: cuda. Needs
# the full or prebuilt build (wxcast), ncdump and grib_ls.
if [ -n "$GPU" ] && [ $BUILD_ONLY = 0 ] && [ -x "${WXCAST_BIN:-}" ] && command -v ncdump >/dev/null; then
  case $WXCAST_BIN in /*) ;; *) WXCAST_BIN=$ROOT/$WXCAST_BIN ;; esac
  for t in e2e_tiny e2e_tiny_gc; do
    run_step "$t, trained on GPU" $(( $(left) < 200 ? $(left) - 100 : 150 )) "$LOGS/$t.log" \
      env WX_E2E_DEVICE=cuda WX_E2E_PRECISION=bf16 bash tests/cli/$t.sh "$WXCAST_BIN" "$ROOT" \
      || status=1
    grep -E "FAIL|RMSE at 24 h|passed, " "$LOGS/$t.log"
  done
fi

# ---- GPU benchmarks ------------------------------------------------------------------------------
# Each benchmark prints one JSON line (tests/bench/bench_cuda.c, tests/bench/bench_cuda_torch.py);
# the figures go into a second table printed last. They need the full build (bench_cuda links the
# whole library). GraphCast runs on the GPU through its ops path (src/models/graphcast_ops*.c);
# its 40-step GraphCast_small rollout is bench_cuda gc_rollout.
RES=()   # "measure|value|target or note"
res() { RES+=("$1|$2|$3"); }
jget() { sed -n "s/.*\"$2\": \"\{0,1\}\([^,\"}]*\).*/\1/p" "$1" 2>/dev/null | head -1; }
print_results() {
  [ ${#RES[@]} -gt 0 ] || return
  echo
  echo "== GPU benchmarks (${GPU:-no GPU}; FourCastNet paper configuration 720x1440, 20 ch, patch 8, embed 768, depth 12)"
  printf '%-44s %-14s %s\n' measure value "target / note"
  for r in "${RES[@]}"; do
    IFS='|' read -r a b c <<<"$r"
    printf '%-44s %-14s %s\n' "$a" "$b" "$c"
  done
}
trap 'print_table; print_results' EXIT
PY=
for p in /usr/bin/python3 python3; do
  if command -v $p >/dev/null && env -u LD_LIBRARY_PATH $p -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    PY=$p; break
  fi
done
bench_ok=1
if [ $BUILD_ONLY = 1 ] || [ -z "${BENCH_BIN:-}" ]; then
  row "gpu benchmarks" "skipped" 0 "$([ $BUILD_ONLY = 1 ] && echo "--build-only" || echo "lean build: bench_cuda needs the full build")"
  bench_ok=0
fi
if [ $bench_ok = 1 ]; then
  B=$BENCH_BIN
  run_step "bench gemm rate" $(( $(left) < 80 ? $(left) - 20 : 60 )) "$LOGS/bench_gemm.log" "$B" gemm
  gemm_bf16=$(jget "$LOGS/bench_gemm.log" bf16_tflops)
  res "cuBLAS bf16 GEMM 8192^3 (TFLOP/s)" "${gemm_bf16:-n/a}" "measured peak for the ratio below"
  f32=$(jget "$LOGS/bench_gemm.log" fp32_tflops)
  res "cuBLAS fp32 GEMM 8192^3 (TFLOP/s)" "${f32:-n/a}" ""
  run_step "bench wxcast train bf16" $(( $(left) < 200 ? $(left) - 60 : 150 )) "$LOGS/bench_train.log" \
    "$B" train --precision bf16 --batch 0 --steps 5
  tb=$(jget "$LOGS/bench_train.log" batch)
  wx_sps=$(jget "$LOGS/bench_train.log" samples_per_s)
  wx_tf=$(jget "$LOGS/bench_train.log" achieved_tflops)
  res "wxcast train bf16, batch ${tb:-?} (samples/s)" "${wx_sps:-n/a}" "target >= 1.2x PyTorch"
  if [ -n "$wx_tf" ] && [ -n "$gemm_bf16" ]; then
    res "wxcast achieved GEMM TFLOP/s (of bf16 peak)" "$wx_tf" \
      "$(awk -v a="$wx_tf" -v b="$gemm_bf16" 'BEGIN { if (b > 0) printf "%.0f%% of %s", 100 * a / b, b }')"
  fi
  run_step "bench wxcast rollout 56" $(( $(left) < 120 ? $(left) - 40 : 90 )) "$LOGS/bench_rollout.log" \
    "$B" rollout --precision bf16 --steps 56
  ro=$(jget "$LOGS/bench_rollout.log" total_s)
  res "wxcast 56-step rollout, batch 1 (s)" "${ro:-n/a}" "target <= 2 s"
  if [ -n "$PY" ] && [ -n "$tb" ]; then
    run_step "bench torch train bf16" $(( $(left) < 180 ? $(left) - 15 : 150 )) "$LOGS/bench_torch.log" \
      env -u LD_LIBRARY_PATH "$PY" tests/bench/bench_cuda_torch.py train --batch "$tb" --steps 5
    pt_sps=$(jget "$LOGS/bench_torch.log" samples_per_s)
    res "PyTorch $(jget "$LOGS/bench_torch.log" torch) bf16 autocast, batch $tb (samples/s)" \
      "${pt_sps:-n/a}" "$(tail -1 "$LOGS/bench_torch.log" 2>/dev/null | cut -c1-60)"
    if [ -n "$pt_sps" ] && [ -n "$wx_sps" ]; then
      res "wxcast / PyTorch training throughput" \
        "$(awk -v a="$wx_sps" -v b="$pt_sps" 'BEGIN { printf "%.2fx", a / b }')" "target >= 1.2x"
    fi
  else
    res "PyTorch on this GPU" "n/a" "no torch with CUDA here: wxcast alone"
  fi
  run_step "bench wxcast gc_small 40" $(( $(left) < 120 ? $(left) - 20 : 100 )) \
    "$LOGS/bench_gc_rollout.log" "$B" gc_rollout --precision bf16 --steps 40
  gro=$(jget "$LOGS/bench_gc_rollout.log" total_s)
  res "GraphCast_small 1 deg, 40 steps, bf16 (s)" "${gro:-n/a}" \
    "target <= 5 s; graphs + upload $(jget "$LOGS/bench_gc_rollout.log" create_s) s apart"
fi

# ---- memory checking of every CUDA op (compute-sanitizer ships with CUDA; last: it is slow) ------
if [ -n "$GPU" ] && command -v compute-sanitizer >/dev/null && [ -x "$TEST_BIN" ]; then
  run_step "compute-sanitizer memcheck" $(( $(left) < 170 ? $(left) - 10 : 160 )) \
    "$LOGS/memcheck.log" compute-sanitizer --tool memcheck --error-exitcode 3 "$TEST_BIN"
  rc=$?   # a run cut short by the budget is reported in the table, not counted as a failure
  case $rc in 0|124|137) ;; *) status=1 ;; esac
  tail -15 "$LOGS/memcheck.log"
fi

exit $status
