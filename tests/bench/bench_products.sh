#!/usr/bin/env bash
# Forecast product throughput (docs/benchmarks.md), not part of ctest:
#  1. a 0.25-degree (721x1440) 20-channel forecast, lead 0 + STEPS 6-hourly steps, written by
#     wxcast's product writer (tests/bench/bench_products.c) as NetCDF (plain, deflate 4) and GRIB2
#     (16-bit grid_simple, grid_ccsds): MB/s of float32 fields, writer calls only (fsync included);
#  2. peers writing the same fields (read untimed from wxcast's NetCDF): netCDF4-python (plain,
#     deflate 4 + shuffle, same chunks) and eccodes' Python bindings (one message per field from
#     the GRIB2 sample, same keys); and cdo converting the NetCDF to GRIB2 (whole process, P16,
#     with and without -z aec);
#  3. `wxcast eval` of two such forecasts (initial times 6 h apart) against a 0.25-degree archive of
#     the same 20 channels, without a climatology (no ACC): seconds per initial time.
# Run with nice; the machine's load average is printed before and after (docs: "the load").
# Temporary files (~15 GB at 40 steps) live in $TMPDIR and are removed at exit.
# Usage: bash tests/bench/bench_products.sh [build-dir] [steps (default 40)] [parts: all (default),
#        or a comma list of nc, grib, cdo, deflate, eval]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
steps=${2:-40}
parts=${3:-all}
want() { [ "$parts" = all ] || [[ ",$parts," == *",$1,"* ]]; }
PY=/usr/bin/python3
B="$build/tests/bench_products"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wx_bench_products.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$B" write nc "$tmp/fc.nc" "$steps"
want nc && $PY "$here/bench_products_peer.py" nc "$tmp/fc.nc" "$tmp/peer.nc"
rm -f "$tmp/peer.nc"
want grib && for p in simple ccsds; do
    "$B" write "grib-$p" "$tmp/grib_$p" "$steps"
    rm -rf "$tmp/grib_$p"
    $PY "$here/bench_products_peer.py" grib "$tmp/fc.nc" "$tmp/peer.grib2" "$p"
    rm -f "$tmp/peer.grib2"
done
want cdo && for z in "" "-z aec"; do
    s=$( { /usr/bin/time -f "%e %U %S" cdo -s -f grb2 -b P16 $z copy "$tmp/fc.nc" "$tmp/cdo.grib2" > /dev/null; } 2>&1 | tail -1)
    read -r c_s c_u c_sys <<< "$s"
    echo "{\"mode\": \"cdo -f grb2 -b P16 $z copy (whole process, reads the NetCDF)\", \"seconds\": $c_s, \"cpu_seconds\": $(echo "$c_u + $c_sys" | bc | xargs printf "%.2f"), \"bytes_out\": $(stat -c %s "$tmp/cdo.grib2")}"
    rm -f "$tmp/cdo.grib2"
done
if want deflate; then
    "$B" write nc-deflate "$tmp/fcd.nc" "$steps"
    rm -f "$tmp/fcd.nc"
    $PY "$here/bench_products_peer.py" nc "$tmp/fc.nc" "$tmp/peer.nc" --deflate
    rm -f "$tmp/peer.nc"
fi
echo "load mid: $(cut -d' ' -f1-3 /proc/loadavg)"
want eval || exit 0
# eval: truth records 0..steps+1 cover both forecasts
"$B" archive "$tmp/truth" $((steps + 2))
"$B" write nc "$tmp/fc1.nc" "$steps" 1 > /dev/null
s=$( { /usr/bin/time -f "%e %U %S %M" "$build/wxcast" -q eval --forecast "fcn=$tmp/fc.nc,$tmp/fc1.nc" \
        --truth "$tmp/truth" --no-climatology --output "$tmp/eval" > /dev/null; } 2>&1 | tail -1)
read -r e_s e_u e_sys e_rss <<< "$s"
echo "{\"mode\": \"wxcast eval\", \"initial_times\": 2, \"leads\": $((steps + 1)), \"channels\": 20, \"seconds\": $e_s, \"user\": $e_u, \"sys\": $e_sys, \"max_rss_kb\": $e_rss, \"seconds_per_initial_time\": $(echo "$e_s / 2" | bc -l | cut -c1-6), \"scores\": $(($(wc -l < "$tmp/eval/scores.csv") - 1))}"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
