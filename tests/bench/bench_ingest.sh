#!/usr/bin/env bash
# GRIB -> archive throughput and archive read rates, side by side in one run (docs/benchmarks.md):
#  1. `wxcast ingest` of an ERA5-like 0.25-degree GRIB1 file (HOURS x {2t, msl}, 721x1440, made by
#     bench_ingest_make_grib.py with eccodes) into a float32 archive: MB/s of decoded float32;
#  2. the peer: xarray + cfgrib writing the same float32 array (checked identical to the archive);
#  3. eccodes' bare decode rate on the same messages (codes_get_double_array -> float32);
#  4. archive random batches (4 records, 4 workers, O_DIRECT: cold) vs a sequential O_DIRECT read
#     of the same shard.
# The GRIB file is in the page cache for all three decoders (made just before). Temporary files
# (~0.5 GB for 24 hours) are deleted at exit.
# Usage: bash tests/bench/bench_ingest.sh [build-dir] [hours (default 24)]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
hours=${2:-24}
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/wx_bench_ingest.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
$PY "$here/bench_ingest_make_grib.py" "$tmp/era5.grib" "$hours"
last=$(printf '2017-01-01T%02d:00' $((hours - 1)))
cat > "$tmp/recipe.yaml" <<EOR
sources: ["era5.grib"]
variables: [{name: t2m, param: 2t}, {name: msl, param: msl}]
dates: {start: "2017-01-01T00:00", end: "$last", step: "1h"}
shard_mb: 4096
output: archive
EOR
/usr/bin/time -f "%e %U %S" -o "$tmp/ingest.time" "$build/wxcast" -q ingest "$tmp/recipe.yaml" > /dev/null
read -r wx_s wx_u wx_sys < "$tmp/ingest.time"
mb=$(echo "$hours * 2 * 721 * 1440 * 4 / 1000000" | bc -l)
"$build/tests/bench_ingest" decode "$tmp/era5.grib" > "$tmp/decode.json"
$PY "$here/bench_ingest_cfgrib.py" "$tmp/era5.grib" "$tmp/cfgrib.raw" "$tmp/archive" > "$tmp/cfgrib.json"
rm -f "$tmp/cfgrib.raw"
"$build/tests/bench_ingest" random "$tmp/archive" 4 4 3 > "$tmp/random.json"
"$build/tests/bench_ingest" seq "$tmp/archive/shard-00000.wxr" > "$tmp/seq.json"
$PY - "$tmp" "$mb" "$wx_s" "$(echo "$wx_u + $wx_sys" | bc -l)" "$(stat -c %s "$tmp/era5.grib")" <<'PY'
import json, sys
tmp, mb, wx_s, wx_cpu, grib = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
j = {k: json.load(open(f"{tmp}/{k}.json")) for k in ("decode", "cfgrib", "random", "seq")}
dec, cf = j["decode"], j["cfgrib"]
print(f"GRIB file: {grib / 1e6:.1f} MB, {dec['messages']} messages of 721x1440; decoded float32 {mb:.1f} MB")
print(f"{'':24} {'wall s':>8} {'MB/s':>8} {'CPU s':>8} {'MB/CPU-s':>9}")
rows = [("wxcast ingest", wx_s, wx_cpu), ("xarray+cfgrib", cf["s"], cf["cpu_s"]),
        ("eccodes bare decode", dec["s"], dec["cpu_s"])]
for name, w, c in rows:
    print(f"{name:24} {w:8.2f} {mb / w:8.1f} {c:8.2f} {mb / c:9.1f}")
print(f"xarray+cfgrib array identical to the archive records: {cf['identical_to_archive']}")
print(f"ingest vs cfgrib: {cf['s'] / wx_s:.1f}x (wall), {cf['cpu_s'] / wx_cpu:.1f}x (CPU) faster (target >= 20x)")
print(f"ingest rate / bare decode rate: {dec['s'] / wx_s:.2f} (wall), {dec['cpu_s'] / wx_cpu:.2f} (CPU) (target >= 0.5)")
r, s = j["random"], j["seq"]
print(f"archive random batches (batch {r['batch']}, {r['threads']} workers, O_DIRECT): {r['mb_s']:.1f} MB/s; "
      f"sequential O_DIRECT shard read: {s['mb_s']:.1f} MB/s; ratio {r['mb_s'] / s['mb_s']:.2f} (target >= 0.8)")
PY
