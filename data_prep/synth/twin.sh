#!/bin/bash
# Twin-run experiment: runs CONFIG twice from the same spin-up, the second with its layer
# thicknesses scaled by 1 + 1e-6 at the first output time, and prints the z500 difference
# against time, the doubling time and the saturation level (docs/synth.md). A third run with
# `twin_log` repeats the twins on the model state in double precision: the float32 files cannot
# resolve the first days (z500 ≈ 55 000 m² s⁻² is stored to 0.004, the initial difference is
# ~0.002).
# Usage: twin.sh WXCAST CONFIG.yaml OUTDIR [DAYS]
set -euo pipefail
wx=$1; cfg=$2; out=$3; days=${4:-40}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
for k in a b log; do
    { grep -v -E '^(days|years|perturbation|formats|ke_spectrum|twin_log):' "$cfg"
      echo "days: $days"; echo "formats: [netcdf]"
      [ $k = b ] && echo "perturbation: 1.0e-6"
      [ $k = log ] && echo "twin_log: $out/twin_log.txt"; true; } > "$out/$k.yaml"
    "$wx" -q synth "$out/$k.yaml" --output "$out/$k" > /dev/null
done
/usr/bin/python3 "$here/synth_stats.py" twin "$out/a" "$out/b" --log "$out/twin_log.txt"
