#!/bin/bash
# GraphCast benchmark (issue 6): wxcast vs the PyTorch reference model, same config and threads.
#   bash tests/bench/bench_graphcast.sh BUILD_DIR [THREADS]
# Environment: GC_CFG="RES LEVEL LATENT STEPS CIN COUT" (training-step config, default
# "5.625 3 128 8 40 16": 33x64 grid, M0..M3, latent 128, 8 processor steps), GC_N (timed steps, 5),
# GC_ROLLOUT_STEPS (GraphCast_small steps, default 40 = 10 days; set 2 to extrapolate on a slow
# machine), GC_SKIP_ROLLOUT=1, GC_SKIP_MESH=1.
# Prints one JSON line per measurement and a summary; the numbers go to docs/benchmarks.md by hand.
# Each measurement runs in its own process so that peak RSS is its own. Not a test.
set -euo pipefail
BUILD=${1:?usage: bench_graphcast.sh BUILD_DIR [THREADS]}
THREADS=${2:-2}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
CFG=${GC_CFG:-"5.625 3 128 8 40 16"}
N=${GC_N:-5}
RSTEPS=${GC_ROLLOUT_STEPS:-40}
PY=/usr/bin/python3
export OMP_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS
# Passive waiting by default: with libgomp spinning and OpenBLAS's pthread pool both on 2 cores,
# either side runs 4-5x slower at 2 threads (docs/benchmarks.md). Set OMP_WAIT_POLICY to override.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc --all) cores;" \
     "threads $THREADS; OMP_WAIT_POLICY=$OMP_WAIT_POLICY; $(date -u +%Y-%m-%dT%H:%MZ); load average $(cut -d' ' -f1-3 /proc/loadavg)"

# shellcheck disable=SC2086
W=$("$BUILD/tests/bench_graphcast" train $CFG "$N")
echo "$W"
# shellcheck disable=SC2086
T=$($PY "$SRC/tests/bench/graphcast_torch_step.py" $CFG "$N")
echo "$T"
$PY - "$W" "$T" <<'EOF'
import json, sys
w, t = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert w["params"] == t["params"] and w["edges"] == t["edges"], "different models"
print(f"train step (batch 1, {w['params']:,} params, grid {w['grid']}, {w['mesh_nodes']} mesh nodes, "
      f"edges g2m/mesh/m2g {w['edges']}): wxcast {w['step_s']:.3f} s, PyTorch {t['step_s']:.3f} s, "
      f"speed-up {t['step_s'] / w['step_s']:.2f}x; CPU time per step wxcast {w['cpu_s']:.3f} s, "
      f"PyTorch {t['cpu_s']:.3f} s ({t['cpu_s'] / w['cpu_s']:.2f}x); peak RSS wxcast {w['peak_rss_mb']:.0f} MB, "
      f"PyTorch {t['peak_rss_mb']:.0f} MB (base {t['rss_base_mb']:.0f} MB)")
EOF

if [ "${GC_SKIP_MESH:-0}" != 1 ]; then
  echo "# graph build at 0.25 degrees / M6"
  /usr/bin/time -f "mesh: wall %e s, peak RSS %M KB" \
    "$BUILD/wxcast" mesh --levels 6 --grid 0.25 --fraction 0.5999912857713345
fi

if [ "${GC_SKIP_ROLLOUT:-0}" != 1 ]; then
  echo "# GraphCast_small at 1 degree: $RSTEPS steps"
  R=$("$BUILD/tests/bench_graphcast" rollout "$SRC/configs/model/graphcast_small.yaml" "$RSTEPS")
  echo "$R"
  $PY - "$R" <<'EOF'
import json, sys
r = json.loads(sys.argv[1])
per = r["predict_per_step_s"] + r["next_input_per_step_s"]
print(f"GraphCast_small rollout: build {r['build_s']:.1f} s, {r['steps']} steps in {r['total_s']:.1f} s "
      f"({per:.2f} s/step), 40 steps (10 days) {'measured' if r['steps'] == 40 else 'extrapolated'}: "
      f"{r['first_input_s'] + 40 * per:.0f} s; predict CPU {r['predict_cpu_per_step_s']:.1f} s/step, "
      f"{r['predict_runnable_threads']:.2f} threads runnable (load {r['load_start']}-{r['load_end']}); "
      f"peak RSS {r['peak_rss_mb']:.0f} MB")
EOF
fi
