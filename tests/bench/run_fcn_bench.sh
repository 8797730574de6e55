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
#   threads: OMP_NUM_THREADS (default 2; OpenBLAS gets the same).
#   Wait policy, each side at its best on this machine (docs/benchmarks.md, session 10):
#   wxcast under libgomp's default spin-then-sleep (WX_WAIT_POLICY=default: OMP_WAIT_POLICY unset,
#   which is what `wxcast train` gets when the user sets nothing), PyTorch under PASSIVE
#   (TORCH_WAIT_POLICY=PASSIVE): PyTorch's OpenMP team and OpenBLAS's own pthread workers fight for
#   the cores under the default, 2.9x slower (1015-1074 against 356-375 ms per step, measured).
#   wxcast runs no OpenBLAS workers next to its team (src/ops/gemm_par.c), so spinning costs it
#   nothing and saves the wake-ups of a sleeping team: ~10 % of the step. OMP_WAIT_POLICY, if set,
#   applies to both sides (the protocol up to session 9).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
rounds=${2:-2}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
export OPENBLAS_NUM_THREADS=$OMP_NUM_THREADS
export WX_WAIT_POLICY=${WX_WAIT_POLICY:-${OMP_WAIT_POLICY:-default}}
export TORCH_WAIT_POLICY=${TORCH_WAIT_POLICY:-${OMP_WAIT_POLICY:-PASSIVE}}
unset OMP_WAIT_POLICY
# with_policy POLICY CMD...: CMD with OMP_WAIT_POLICY=POLICY, or unset for "default"
with_policy() {
    local p=$1; shift
    if [ "$p" = default ]; then "$@"; else OMP_WAIT_POLICY=$p "$@"; fi
}
wx() { with_policy "$WX_WAIT_POLICY" "$build/tests/bench_fcn" "$@"; }
pt() { with_policy "$TORCH_WAIT_POLICY" /usr/bin/python3 "$here/bench_fcn_torch.py" "$@"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "load at start: $(load)" >&2
wx peak >>"$tmp/wx.jsonl"
for r in $(seq "$rounds"); do
    echo "round $r/$rounds: train (load $(load))" >&2
    wx train >>"$tmp/wx.jsonl"
    pt train >>"$tmp/pt.jsonl"
    echo "round $r/$rounds: rollout (load $(load))" >&2
    wx rollout >>"$tmp/wx.jsonl"
    pt rollout >>"$tmp/pt.jsonl"
done
wx peak >>"$tmp/wx.jsonl"
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
print(f"threads={os.environ['OMP_NUM_THREADS']} OMP_WAIT_POLICY wxcast={os.environ['WX_WAIT_POLICY']} "
      f"torch={os.environ['TORCH_WAIT_POLICY']} rounds={len(wt)} "
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
