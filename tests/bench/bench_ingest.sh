#!/usr/bin/env bash
# GRIB -> archive throughput and archive read rates, side by side in one run (docs/benchmarks.md):
#  1. `wxcast ingest` of an ERA5-like 0.25-degree GRIB1 file (HOURS x {2t, msl}, 721x1440, made by
#     bench_ingest_make_grib.py with eccodes) into a float32 archive: MB/s of decoded float32;
#     also, to see where the disk bites: the same ingest with buffered writes
#     (WX_ARCHIVE_BUFFERED=1: through the page cache, as before O_DIRECT) and into tmpfs (/dev/shm:
#     no disk at all; fsync is free there);
#  2. the peer: xarray + cfgrib writing the same float32 array (fsynced; checked identical to the
#     archive), timed as a whole process (interpreter start and imports included) like wxcast, and
#     also after its imports;
#  3. eccodes' bare decode rate on the same messages (codes_get_double_array -> float32, one
#     thread, nothing written);
#  3b. the disk floor: dd writing and fsyncing as many bytes as the archive on the same filesystem
#     (both wxcast and the peer must make their output durable);
#  4. archive random batches (4 records, 4 workers, O_DIRECT: cold) vs a sequential O_DIRECT read
#     of the same shard, three rounds alternating (sequential first), medians compared: run once
#     each, the read right after the dd floor ran while the virtual disk was still busy with it
#     (random 0.79-0.80 of sequential that way, 1.0-1.2 when sequential went first).
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
WX_ARCHIVE_BUFFERED=1 /usr/bin/time -f "%e %U %S" -o "$tmp/buffered.time" "$build/wxcast" -q ingest "$tmp/recipe.yaml" --output "$tmp/archive_buffered" > /dev/null
read -r bu_s bu_u bu_sys < "$tmp/buffered.time"
cmp "$tmp/archive/shard-00000.wxr" "$tmp/archive_buffered/shard-00000.wxr"
rm -rf "$tmp/archive_buffered"
shm=$(mktemp -d /dev/shm/wx_bench_ingest.XXXXXX)
trap 'rm -rf "$tmp" "$shm"' EXIT
/usr/bin/time -f "%e %U %S" -o "$tmp/shm.time" "$build/wxcast" -q ingest "$tmp/recipe.yaml" --output "$shm/archive" > /dev/null
read -r sh_s sh_u sh_sys < "$tmp/shm.time"
cmp "$tmp/archive/shard-00000.wxr" "$shm/archive/shard-00000.wxr"
rm -rf "$shm"
/usr/bin/time -f "%e %U %S" -o "$tmp/start.time" "$build/wxcast" --version > /dev/null
read -r st_s st_u st_sys < "$tmp/start.time"
mb=$(echo "$hours * 2 * 721 * 1440 * 4 / 1000000" | bc -l)
"$build/tests/bench_ingest" decode "$tmp/era5.grib" > "$tmp/decode.json"
/usr/bin/time -f "%e %U %S" -o "$tmp/cfgrib.time" $PY "$here/bench_ingest_cfgrib.py" convert "$tmp/era5.grib" "$tmp/cfgrib.raw" > "$tmp/cfgrib.json"
read -r cf_s cf_u cf_sys < "$tmp/cfgrib.time"
$PY "$here/bench_ingest_cfgrib.py" check "$tmp/cfgrib.raw" "$tmp/archive" > "$tmp/check.json"
rm -f "$tmp/cfgrib.raw"
bytes=$(stat -c %s "$tmp/archive/shard-00000.wxr")
/usr/bin/time -f "%e %U %S" -o "$tmp/dd.time" dd if=/dev/zero of="$tmp/floor" bs=1M count=$((bytes / 1048576)) conv=fsync status=none
read -r dd_s dd_u dd_sys < "$tmp/dd.time"
rm -f "$tmp/floor"
for round in 1 2 3; do
    "$build/tests/bench_ingest" seq "$tmp/archive/shard-00000.wxr" >> "$tmp/seq.jsonl"
    "$build/tests/bench_ingest" random "$tmp/archive" 4 4 3 >> "$tmp/random.jsonl"
done
$PY - "$tmp" "$mb" "$(stat -c %s "$tmp/era5.grib")" "$wx_s $(echo "$wx_u + $wx_sys" | bc -l)" \
    "$cf_s $(echo "$cf_u + $cf_sys" | bc -l)" "$st_s $(echo "$st_u + $st_sys" | bc -l)" "$dd_s" \
    "$wx_u $wx_sys" "$bu_s $bu_u $bu_sys" "$sh_s $sh_u $sh_sys" <<'PY'
import json, os, statistics, sys
tmp, mb, grib = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
(wx_s, wx_cpu), (cfp_s, cfp_cpu), (st_s, st_cpu) = [map(float, a.split()) for a in sys.argv[4:7]]
dd_s = float(sys.argv[7])
wx_u, wx_sys = map(float, sys.argv[8].split())
(bu_s, bu_u, bu_sys), (sh_s, sh_u, sh_sys) = [map(float, a.split()) for a in sys.argv[9:11]]
j = {k: json.load(open(f"{tmp}/{k}.json")) for k in ("decode", "cfgrib", "check")}
rounds = {k: [json.loads(l) for l in open(f"{tmp}/{k}.jsonl")] for k in ("random", "seq")}
j.update({k: dict(v[0], mb_s=statistics.median(x["mb_s"] for x in v)) for k, v in rounds.items()})
dec, cf = j["decode"], j["cfgrib"]
print(f"GRIB file: {grib / 1e6:.1f} MB, {dec['messages']} messages of 721x1440; decoded float32 {mb:.1f} MB; "
      f"threads {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")
print(f"{'':34} {'wall s':>8} {'MB/s':>8} {'CPU s':>8} {'MB/CPU-s':>9}")
rows = [("wxcast ingest (process)", wx_s, wx_cpu), ("  of which start-up (--version)", st_s, st_cpu),
        ("xarray+cfgrib (process)", cfp_s, cfp_cpu), ("xarray+cfgrib (after imports)", cf["s"], cf["cpu_s"]),
        ("eccodes bare decode (1 thread)", dec["s"], dec["cpu_s"])]
for name, w, c in rows:
    print(f"{name:34} {w:8.2f} {mb / w:8.1f} {c:8.2f} {mb / c:9.1f}")
print(f"wxcast ingest CPU split: user {wx_u:.2f} s, system {wx_sys:.2f} s")
for name, w, u, s in (("ingest, buffered writes (page cache)", bu_s, bu_u, bu_sys),
                      ("ingest into tmpfs (/dev/shm, no disk)", sh_s, sh_u, sh_sys)):
    print(f"{name:38} {w:5.2f} s wall ({mb / w:.0f} MB/s), CPU {u + s:.2f} s (user {u:.2f}, system {s:.2f}); "
          f"same shard bytes")
print(f"disk floor: dd writing + fsyncing the archive's bytes: {dd_s:.2f} s ({mb / dd_s:.0f} MB/s); "
      f"ingest wall / floor {wx_s / dd_s:.2f}, ingest wall - floor {wx_s - dd_s:+.2f} s")
print(f"xarray+cfgrib array identical to the archive records: {j['check']['identical_to_archive']}")
print(f"ingest vs cfgrib, whole processes: {cfp_s / wx_s:.1f}x (wall), {cfp_cpu / wx_cpu:.1f}x (CPU); "
      f"after imports / without start-up: {cf['s'] / (wx_s - st_s):.1f}x (wall), "
      f"{cf['cpu_s'] / (wx_cpu - st_cpu):.1f}x (CPU) (target >= 20x)")
print(f"ingest rate / bare decode rate: {dec['s'] / wx_s:.2f} (wall), {dec['cpu_s'] / wx_cpu:.2f} (CPU) "
      f"(target >= 0.5)")
r, s = j["random"], j["seq"]
per = lambda k: "/".join(f"{x['mb_s']:.0f}" for x in rounds[k])
print(f"archive random batches (batch {r['batch']}, {r['threads']} workers, O_DIRECT): {r['mb_s']:.1f} MB/s; "
      f"sequential O_DIRECT shard read: {s['mb_s']:.1f} MB/s (medians of 3 alternating rounds: random "
      f"{per('random')}, sequential {per('seq')}); ratio {r['mb_s'] / s['mb_s']:.2f} (target >= 0.8)")
PY
