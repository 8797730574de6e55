#!/bin/bash
# The synthetic world feeds the ingest pipeline: a 3-day tiny world (T21, 32x64, NetCDF), ingested
# with configs/recipes/synth_tiny.yaml (its sources, dates and output redirected to a temporary
# folder), gives an archive with the recipe's 10 channels on the 32x64 grid with both poles and 12
# times, and every value dumped back from the archive equals the synth NetCDF file's float32 value
# (compared with netCDF4/numpy; that part is skipped when they are missing).
set -u
WX=$1; SRC=$2
T=$(mktemp -d /tmp/wx_cli_synth_ingest.XXXXXX); trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/checks.sh"

cat > "$T/s.yaml" <<EOS
truncation: 21
nlat: 32
nlon: 64
start_year: 2000
days: 3
spin_up_days: 10
formats: [netcdf]
EOS
ok "synth runs" '"$WX" -q synth "$T/s.yaml" --output "$T/syn"'
# progress through the spin-up too (it used to be silent until the first output)
"$WX" synth "$T/s.yaml" --output "$T/syn2" > /dev/null 2> "$T/prog.txt"
ok "spin-up progress: 10/10 model days, then the output steps" \
    'grep -q "synth spin-up: 10/10 model days (100.0%)" "$T/prog.txt" && grep -q "synth: 12/12 steps" "$T/prog.txt"'
sed -e "s|\.\./\.\./synth_tiny|$T/syn|g; s|2001-12-31T18:00|2000-01-03T18:00|; s|2000-12-31T18:00|2000-01-03T18:00|" \
    -e "s|\.\./\.\./archives/synth_tiny|$T/arch|; s|climatology: true|climatology: false|" \
    "$SRC/configs/recipes/synth_tiny.yaml" > "$T/r.yaml"
ok "recipe redirected" 'grep -q "$T/syn/synth_sfc" "$T/r.yaml" && grep -q "output: $T/arch" "$T/r.yaml"'
ok "ingest runs" '"$WX" ingest "$T/r.yaml" > "$T/out.txt" 2>&1'
ok "12 records" 'grep -q "12 records" "$T/out.txt"'
ok "verify OK" '"$WX" verify "$T/arch" | grep -q "^OK"'
"$WX" inspect --json "$T/arch" > "$T/i.json"
ok "10 channels, 32x64, 12 times" 'grep -q "\"nlat\":32" "$T/i.json" && grep -q "\"nlon\":64" "$T/i.json" && grep -q "\"times\":12" "$T/i.json" && [ $(grep -o "\"name\":\"[a-z0-9]*\"" "$T/i.json" | sort -u | wc -l) -eq 10 ]'
ok "dump" '"$WX" -q dump "$T/arch" --output "$T/d.nc" >/dev/null'
if /usr/bin/python3 -c "import numpy, netCDF4" 2>/dev/null; then
    ok "archive values equal the synth NetCDF values" '/usr/bin/python3 - "$T" <<PY
import sys, numpy as np, netCDF4
t = sys.argv[1]
d = netCDF4.Dataset(t + "/d.nc")
pairs = {"z500": ("pl500", "z"), "u500": ("pl500", "u"), "v500": ("pl500", "v"), "t850": ("pl850", "t"),
         "msl": ("sfc", "msl"), "u10": ("sfc", "u10"), "v10": ("sfc", "v10"), "t2m": ("sfc", "t2m"),
         "tcwv": ("sfc", "tcwv"), "tp": ("sfc", "tp")}
bad = 0
for ch, (grp, var) in pairs.items():
    s = netCDF4.Dataset(f"{t}/syn/synth_{grp}_200001.nc")
    x = np.asarray(s.variables[var][:], dtype=np.float32).reshape(12, 32, 64)
    y = np.asarray(d.variables[ch][:], dtype=np.float32)
    same = np.array_equal(x, y) and np.array_equal(s.variables["valid_time"][:], d.variables["time"][:])
    if not same:
        print(f"{ch}: max difference {np.abs(x - y).max()}")
        bad += 1
sys.exit(bad)
PY'
else
    echo "numpy/netCDF4 missing: value comparison skipped"
fi
checks_summary
