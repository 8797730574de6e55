#!/usr/bin/env bash
# FourCastNet mid-size benchmark (issue 5), wxcast vs PyTorch (tests/ref AFNONet, float32) on the same
# configuration, batch and thread count, run side by side and interleaved (wx, torch, wx, torch...)
# so both see the same machine load. Prints a table of medians over the rounds with ratios
# (torch / wxcast: > 1 means wxcast is faster or smaller) and the training step's GFLOP/s against
# OpenBLAS's sgemm peak measured in the same run. Each measurement is its own process, so each
# peak RSS is its own.
# CPU rows: the process's CPU time (all threads) over the same spans; other jobs on a shared machine
# disturb them far less than the wall times, so they are the steadier comparison there.
# Usage: bash tests/bench/run_fcn_bench.sh [build-dir] [rounds]
#   threads: OMP_NUM_THREADS (default 2; OpenBLAS gets the same). OMP_WAIT_POLICY defaults to
#   PASSIVE for both sides: with OpenBLAS's own (pthread) workers next to the OpenMP team, libgomp's
#   default spin-wait let idle OpenMP threads take the cores from the GEMMs, and on a shared, loaded
#   machine that made both wxcast and PyTorch 5-7x slower (measured; see docs/benchmarks.md).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
rounds=${2:-2}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
export OPENBLAS_NUM_THREADS=$OMP_NUM_THREADS OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "load at start: $(load)" >&2
"$build/tests/bench_fcn" peak >>"$tmp/wx.jsonl"
for r in $(seq "$rounds"); do
    echo "round $r/$rounds: train (load $(load))" >&2
    "$build/tests/bench_fcn" train >>"$tmp/wx.jsonl"
    /usr/bin/python3 "$here/bench_fcn_torch.py" train >>"$tmp/pt.jsonl"
    echo "round $r/$rounds: rollout (load $(load))" >&2
    "$build/tests/bench_fcn" rollout >>"$tmp/wx.jsonl"
    /usr/bin/python3 "$here/bench_fcn_torch.py" rollout >>"$tmp/pt.jsonl"
done
"$build/tests/bench_fcn" peak >>"$tmp/wx.jsonl"
echo "load at end: $(load)" >&2
/usr/bin/python3 - "$tmp/wx.jsonl" "$tmp/pt.jsonl" "$(load)" <<'PY'
import json, os, statistics, sys
wx = [json.loads(l) for l in open(sys.argv[1])]
pt = [json.loads(l) for l in open(sys.argv[2])]
pick = lambda rs, mode: [r for r in rs if r["mode"] == mode]
med = lambda rs, k: statistics.median(r[k] for r in rs)
peak = med(pick(wx, "peak"), "sgemm_gflops")
wt, pt_t = pick(wx, "train"), pick(pt, "train")
wr, pt_r = pick(wx, "rollout"), pick(pt, "rollout")
print(f"FourCastNet 64x128, 20 ch, patch 4, embed 256, depth 6, 8 blocks; train batch 2, rollout batch 1 x 40 steps")
print(f"threads={os.environ['OMP_NUM_THREADS']} OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']} rounds={len(wt)} "
      f"params wx={wt[0]['params']} torch={pt_t[0]['params']}; load at end {sys.argv[3]}")
print(f"{'':<26} {'wxcast':>10} {'torch':>10} {'ratio':>6}  (times: torch/wx, speed-up; memory: wx/torch)")
def row(name, a, b, mem=False):
    print(f"{name:<26} {a:10.1f} {b:10.1f} {a / b if mem else b / a:6.2f}")
row("train step ms (median)", med(wt, "step_ms"), med(pt_t, "step_ms"))
row("  forward+loss ms", med(wt, "fwd_loss_ms"), med(pt_t, "fwd_loss_ms"))
row("  backward ms", med(wt, "bwd_ms"), med(pt_t, "bwd_ms"))
row("train step CPU ms", med(wt, "step_cpu_ms"), med(pt_t, "step_cpu_ms"))
row("train peak RSS MB", max(r["peak_rss_mb"] for r in wt), max(r["peak_rss_mb"] for r in pt_t), mem=True)
row("  RSS before step 1 MB", med(wt, "rss_base_mb"), med(pt_t, "rss_base_mb"), mem=True)
row("rollout 40 steps ms", med(wr, "rollout_ms"), med(pt_r, "rollout_ms"))
row("rollout 40 steps CPU ms", med(wr, "rollout_cpu_ms"), med(pt_r, "rollout_cpu_ms"))
row("rollout peak RSS MB", max(r["peak_rss_mb"] for r in wr), max(r["peak_rss_mb"] for r in pt_r), mem=True)
print("per round (train ms wx/torch, rollout ms wx/torch): " +
      "; ".join(f"{a['step_ms']:.0f}/{b['step_ms']:.0f}, {c['rollout_ms']:.0f}/{d['rollout_ms']:.0f}"
                for a, b, c, d in zip(wt, pt_t, wr, pt_r)))
hashes = sorted({r.get("param_hash") for r in wt})
print(f"parameters after the timed steps, hash per round: {', '.join(r.get('param_hash', '?') for r in wt)}"
      f" ({'identical: deterministic' if len(hashes) == 1 else 'DIFFERENT'})")
g = wt[0]["gemm_gflop"]
gw, gp = g / (med(wt, "step_ms") / 1e3), g / (med(pt_t, "step_ms") / 1e3)
print(f"GEMM work per step {g:.2f} GFLOP (+ FFT {wt[0]['fft_gflop']:.3f} GFLOP, not counted); "
      f"OpenBLAS sgemm peak 2048^3: {peak:.1f} GFLOP/s (runs: "
      + ", ".join(f"{r['sgemm_gflops']:.1f}" for r in pick(wx, "peak")) + ")")
print(f"achieved: wxcast {gw:.1f} GFLOP/s = {100 * gw / peak:.0f}% of peak; torch {gp:.1f} GFLOP/s = {100 * gp / peak:.0f}%")
PY
