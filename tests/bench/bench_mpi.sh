#!/usr/bin/env bash
# MPI data-parallel benchmark (docs/benchmarks.md, MPI section), on this machine:
#  1. weak scaling of `wxcast train`: 1 rank vs 2 ranks × 1 thread each, the same per-rank batch,
#     on a FourCastNet whose gradient is large enough that the all-reduce is not trivial; prints
#     the throughput per rank, its ratio to the single rank, and the time in MPI per step;
#  2. the gradient all-reduce alone (the trainer's bucketed path and plain MPI_Allreduce) against
#     the message size, with the bytes one step of that model moves marked.
# Usage: [BUCKET_MB=MB] bash tests/bench/bench_mpi.sh [build-dir] [steps] [per-rank batch] [embed_dim]
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
run() { # n
  local n=$1
  (cd "$tmp/r$n" && $mpirun -np "$n" "$build/wxcast" --quiet train train.yaml --threads 1 \
     --max-steps "$steps" --metrics m.jsonl ${BUCKET_MB:+--bucket-mb $BUCKET_MB} >/dev/null)
}
run 1
run 2
# The machine's own ceiling: two single-process runs at the same time, no communication at all
# (2 vCPUs may share one core's caches and memory bandwidth, so co-running alone costs throughput).
for d in c1 c2; do mkdir -p "$tmp/$d" && cp "$tmp/r1/train.yaml" "$tmp/$d/"; done
(cd "$tmp/c1" && "$build/wxcast" --quiet train train.yaml --threads 1 --max-steps "$steps" --metrics m.jsonl >/dev/null) &
(cd "$tmp/c2" && "$build/wxcast" --quiet train train.yaml --threads 1 --max-steps "$steps" --metrics m.jsonl >/dev/null) &
wait
/usr/bin/python3 - "$tmp" "$batch" "$steps" <<'PY'
import json, sys
tmp, batch, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def rate(n, d=None):
    rows = [json.loads(l) for l in open(f"{tmp}/{d or 'r%d' % n}/m.jsonl") if '"train"' in l]
    # samples_per_s is cumulative since the epoch start: recover the elapsed time per step.
    t = [r["step"] * batch * n / r["samples_per_s"] for r in rows]
    per_rank = (len(t) - 1) * batch / (t[-1] - t[0])
    comm = [r.get("comm_s", 0.0) for r in rows[1:]]
    return per_rank, sum(comm) / len(comm), (t[-1] - t[0]) / (len(t) - 1)
r1, _, s1 = rate(1)
r2, c2, s2 = rate(2)
print(f"weak scaling, {batch} samples per rank per step, steps 2..{steps}:")
print(f"  1 rank : {r1:8.2f} samples/s per rank, {s1*1e3:8.1f} ms/step")
print(f"  2 ranks: {r2:8.2f} samples/s per rank, {s2*1e3:8.1f} ms/step, {c2*1e3:8.1f} ms/step in MPI "
      f"(loss average + gradient all-reduce)")
print(f"  efficiency (per-rank throughput, 2 ranks / 1 rank): {r2 / r1 * 100:.1f} %")
rc = (rate(1, "c1")[0] + rate(1, "c2")[0]) / 2
print(f"  two independent 1-rank runs at once: {rc:8.2f} samples/s each = {rc / r1 * 100:.1f} % of one alone "
      f"(the machine's ceiling); 2 ranks reach {r2 / rc * 100:.1f} % of it")
PY
params=$("$build/wxcast" info --model "$tmp/model.yaml" 2>/dev/null | grep -i "param" | head -1 || true)
echo "model: embed_dim $embed, depth 4, 16x32 grid, patch 4 (${params}); gradient bytes = 4 x parameters"
echo "all-reduce (2 ranks, median of 10-50 rounds):"
$mpirun -np 2 "$build/tests/bench_mpi" allreduce 64 >"$tmp/ar.jsonl"
/usr/bin/python3 - "$tmp/ar.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"  {r['call']:<14} {r['bytes'] / 1048576:9.3f} MiB  {r['buckets']:3d} bucket(s)  "
          f"{r['median_s'] * 1e3:9.3f} ms  {r['algbw_GBs']:7.3f} GB/s")
PY
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc --all) cores"
