#!/usr/bin/env bash
# Per-op CPU microbenchmarks, wxcast vs PyTorch (Debian python3-torch) on the same shapes and thread
# count, run side by side; prints a table of times and ratios (peer time / wxcast time: > 1 means
# wxcast is faster) and the linear op's GEMM efficiency against OpenBLAS's own sgemm.
# Usage: bash tests/bench/run_ops_bench.sh [build-dir]   (threads: OMP_NUM_THREADS, default 2)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} OPENBLAS_NUM_THREADS=${OMP_NUM_THREADS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/tests/bench_ops" >"$tmp/wx.jsonl"
/usr/bin/python3 "$here/bench_ops_torch.py" >"$tmp/torch.jsonl"
/usr/bin/python3 - "$tmp/wx.jsonl" "$tmp/torch.jsonl" <<'PY'
import json, sys
wx = {r["op"]: r for r in map(json.loads, open(sys.argv[1]))}
pt = {r["op"]: r for r in map(json.loads, open(sys.argv[2]))}
print(f"threads={__import__('os').environ['OMP_NUM_THREADS']}")
print(f"{'op':<12} {'shape':<22} {'wx fwd ms':>10} {'pt fwd ms':>10} {'fwd x':>6} {'wx bwd ms':>10} {'pt bwd ms':>10} {'bwd x':>6} {'f+b x':>6}")
for op, r in wx.items():
    if op not in pt:
        continue
    p = pt[op]
    ratio = lambda a, b: b / a if a > 0 else float("nan")
    print(f"{op:<12} {r['shape']:<22} {r['fwd_ms']:10.3f} {p['fwd_ms']:10.3f} {ratio(r['fwd_ms'], p['fwd_ms']):6.2f} "
          f"{r['bwd_ms']:10.3f} {p['bwd_ms']:10.3f} {ratio(r['bwd_ms'], p['bwd_ms']):6.2f} "
          f"{ratio(r['fwd_ms'] + r['bwd_ms'], p['fwd_ms'] + p['bwd_ms']):6.2f}")
peak = wx["sgemm_peak"]; same = wx["sgemm_same_shape"]; lin = wx["linear"]
gf = lambda r: r["gflop"] / (r["fwd_ms"] / 1e3)
print(f"OpenBLAS sgemm peak (2048^3): {gf(peak):.1f} GFLOP/s")
print(f"linear forward {lin['shape']}: {gf(lin):.1f} GFLOP/s = {100 * gf(lin) / gf(same):.0f}% of bare cblas_sgemm on the same shape "
      f"({gf(same):.1f} GFLOP/s), {100 * gf(lin) / gf(peak):.0f}% of peak")
af = wx["afno_filter"]
print(f"afno_filter forward: {gf(af):.1f} GFLOP/s")
PY
