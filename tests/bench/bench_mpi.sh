#!/usr/bin/env bash
# MPI data-parallel benchmark (docs/benchmarks.md, MPI section), on this machine:
#  1. weak scaling of `wxcast train`: 1 rank vs 2 ranks × 1 thread each, the same per-rank batch,
#     on a FourCastNet whose gradient is large enough that the all-reduce is not trivial; prints
#     the throughput per rank, its ratio to the single rank, and the time in MPI per step;
#  2. the gradient all-reduce alone (the trainer's bucketed path and plain MPI_Allreduce) against
#     the message size, with the bytes one step of that model moves marked.
# Usage: [BUCKET_MB=MB] [ZERO1=1] [REPS=3] [SKIP_ALLREDUCE=1] bash tests/bench/bench_mpi.sh [build-dir] [steps] [per-rank batch] [embed_dim]
# The last lines: "SUMMARY weak scaling ..." (median efficiency over the repetitions, how many
# reach 85 %, the CPU-time efficiency, the co-run ceiling) and the load average.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
steps=${2:-12}
batch=${3:-4}
embed=${4:-384}
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
mpirun="mpirun --allow-run-as-root --oversubscribe --bind-to none"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$build/tests/bench_mpi" archive "$tmp/archive"
cat >"$tmp/model.yaml" <<EOF
type: fourcastnet
img_size: [16, 32]
patch_size: 4
in_channels: 3
out_channels: 3
embed_dim: $embed
depth: 4
mlp_ratio: 4.0
num_blocks: 8
EOF
for n in 1 2; do
  mkdir -p "$tmp/r$n"
  cat >"$tmp/r$n/train.yaml" <<EOF
model: ../model.yaml
data: {archive: ../archive, train_years: [2019, 2019], valid_years: [2020, 2020]}
seed: 3
threads: 1
checkpoint_dir: ckpt
log_every: 1
validation: {leads: [1]}
pretrain:
  steps: 1000
  batch_size: $((batch * n))
  optimizer: {lr: 1.0e-4, warmup: 2}
EOF
done
# One step of warm-up is excluded: the rate is taken over steps 2..steps from the step times.
# CPU time: every process runs under /usr/bin/time; a 1-step run of the same setup is subtracted,
# so cpu(steps) − cpu(1) over steps − 1 is the CPU time of one step (all threads, user + system).
# It covers the whole run (epoch-end validation and checkpoints, waits that spin in MPI), so it
# is only a rough cross-check of the step-time efficiency.
# Under load the wall rate mostly measures the other jobs; the CPU-time ratio is the steadier one
# (MPI waits spin, so time spent waiting for the other rank is still counted).
run() { # n dir steps [extra wxcast args]
  local n=$1 d=$2 s=$3; shift 3
  mkdir -p "$tmp/$d" && cp "$tmp/r$n/train.yaml" "$tmp/$d/" && rm -rf "$tmp/$d/ckpt" "$tmp/$d"/m.jsonl "$tmp/$d"/cpu.*
  local cmd=(sh -c 'exec /usr/bin/time -f "%U %S" -o "cpu.${OMPI_COMM_WORLD_RANK:-0}" "$@"' sh
             "$build/wxcast" --quiet train train.yaml --threads 1 --max-steps "$s" --metrics m.jsonl "$@")
  if [ "$n" = 1 ]; then (cd "$tmp/$d" && "${cmd[@]}" >/dev/null)
  else (cd "$tmp/$d" && $mpirun -np "$n" "${cmd[@]}" >/dev/null); fi
}
args2=(${BUCKET_MB:+--bucket-mb $BUCKET_MB} ${ZERO1:+--zero1})
reps=${REPS:-3}
run 1 b1 1
run 2 b2 1 "${args2[@]}"
for ((k = 1; k <= reps; k++)); do
  run 1 "r1_$k" "$steps"
  run 2 "r2_$k" "$steps" "${args2[@]}"
  # The machine's own ceiling: two single-process runs at the same time, no communication at all
  # (2 vCPUs share caches and memory bandwidth, so co-running alone costs throughput).
  run 1 "c1_$k" "$steps" & run 1 "c2_$k" "$steps" & wait
done
load_mid=$(cut -d' ' -f1-3 /proc/loadavg)
/usr/bin/python3 - "$tmp" "$batch" "$steps" "$reps" "${BUCKET_MB:-25}" "${ZERO1:+ZeRO-1}" <<'PY' | tee "$tmp/summary.txt"
import glob, json, statistics, sys
tmp, batch, steps, reps, bucket, zero = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
def cpu(d):  # per-rank CPU seconds of the run in directory d (mean over ranks)
    v = [sum(map(float, open(f).read().split()[-2:])) for f in glob.glob(f"{tmp}/{d}/cpu.*")]
    return sum(v) / len(v)
def rate(d, n):
    rows = [json.loads(l) for l in open(f"{tmp}/{d}/m.jsonl") if '"train"' in l]
    # step_s = one optimizer step (forward, backward, gradient sync, AdamW) on this rank 0. The tiny
    # archive ends an epoch every ~11 steps on 1 rank and every ~5 on 2, and each epoch end
    # validates and writes checkpoints: with samples_per_s (reset every epoch, batch reads
    # included) 2 ranks paid that fixed cost twice as often per step, which is not scaling.
    steps_s = [r["step_s"] for r in rows[1:]]
    comm = [r.get("comm_s", 0.0) for r in rows[1:]]
    mean = sum(steps_s) / len(steps_s)
    return batch / mean, mean, sum(comm) / len(comm)
cpu1_0, cpu2_0 = cpu("b1"), cpu("b2")
print(f"weak scaling, {batch} samples per rank per step, steps 2..{steps}, 1 thread per rank, "
      f"buckets of {bucket} MB{', ' + zero if zero else ''}; per repetition:")
eff, effc, ceil = [], [], []
for k in range(1, reps + 1):
    r1, s1, _ = rate(f"r1_{k}", 1)
    r2, s2, c2 = rate(f"r2_{k}", 2)
    k1 = (cpu(f"r1_{k}") - cpu1_0) / (steps - 1)
    k2 = (cpu(f"r2_{k}") - cpu2_0) / (steps - 1)
    rc = (rate(f"c1_{k}", 1)[0] + rate(f"c2_{k}", 1)[0]) / 2
    eff.append(r2 / r1); effc.append(k1 / k2); ceil.append(rc / r1)
    print(f"  {k}: 1 rank {s1*1e3:7.1f} ms/step ({k1*1e3:6.1f} CPU ms), 2 ranks {s2*1e3:7.1f} ms/step "
          f"({k2*1e3:6.1f} CPU ms per rank, {c2*1e3:5.1f} ms in MPI); efficiency {r2/r1*100:5.1f} % wall, "
          f"{k1/k2*100:5.1f} % CPU time; two lone runs at once {rc/r1*100:5.1f} %")
med = statistics.median
print(f"SUMMARY weak scaling 2 ranks vs 1: median efficiency {med(eff)*100:.1f} % (wall), "
      f"{sum(e >= 0.85 for e in eff)} of {reps} runs >= 85 %; median {med(effc)*100:.1f} % by CPU time per step; "
      f"co-run ceiling (two lone runs at once) median {med(ceil)*100:.1f} %")
PY
if [ -z "${SKIP_ALLREDUCE:-}" ]; then
params=$("$build/wxcast" info --model "$tmp/model.yaml" 2>/dev/null | grep -i "param" | head -1 || true)
echo "model: embed_dim $embed, depth 4, 16x32 grid, patch 4 (${params}); gradient bytes = 4 x parameters"
echo "all-reduce (2 ranks, median wall time of 10-50 rounds, mean CPU time; the MPI_Allreduce line includes the 1/N pass):"
$mpirun -np 2 "$build/tests/bench_mpi" allreduce 64 >"$tmp/ar.jsonl"
/usr/bin/python3 - "$tmp/ar.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"  {r['call']:<14} {r['bytes'] / 1048576:9.3f} MiB  {r['buckets']:3d} bucket(s)  "
          f"{r['median_s'] * 1e3:9.3f} ms  {r['algbw_GBs']:7.3f} GB/s  {r['cpu_s'] * 1e3:9.3f} CPU ms (rank 0)")
PY
fi
echo "load average: $load_mid after the training runs, $(cut -d' ' -f1-3 /proc/loadavg) at the end, on $(nproc --all) cores"
grep '^SUMMARY' "$tmp/summary.txt"
