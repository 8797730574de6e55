#!/usr/bin/env bash
# wxcast forecast on a tiny synthetic world (its last 12 days: Dec 2000 - Jan 2001) with a model trained for a few steps: the file
# read back with ncdump has N+1 valid times 6 h apart from the initial time, latitude north to south,
# longitude from 0, one variable per channel with units/standard_name, forecast_reference_time and
# forecast_period 0,6,..; lead 0 equals the archive's record exactly (against `wxcast dump`, printed
# at full float precision); peak memory does not grow with the number of steps; errors exit 2/1
# with one line naming the problem. Usage: forecast.sh WXCAST SRCDIR
set -u
W=$1
T=$(mktemp -d /tmp/wx_cli_forecast.XXXXXX); trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/checks.sh"
cd "$T"
. "$2/tests/cli/lib/tiny_fcn_world.sh"
ok "tiny world, archive and checkpoint made" '[ -f ck/pretrain/last.ckpt ]'
CK=ck/pretrain/last.ckpt

"$W" -q forecast --model $CK --init archive --time 2000-12-27T06:00 --steps 8 --output f.nc > out.txt 2> err.txt; st=$?
ok "forecast exits 0 (err: $(cat err.txt))" '[ $st -eq 0 ] && [ -f f.nc ]'
ok "summary names 9 times" 'grep -q "4 variables x 9 times" out.txt'
ncdump -h f.nc > h.txt
ok "time is the unlimited dimension with 9 values" 'grep -q "time = UNLIMITED ; // (9 currently)" h.txt'
ok "latitude 32, longitude 64" 'grep -q "latitude = 32 ;" h.txt && grep -q "longitude = 64 ;" h.txt'
for v in msl t2m; do
    ok "$v(time, latitude, longitude)" 'grep -q "float $v(time, latitude, longitude)" h.txt'
done
ok "pressure parameters on level axes: z(time, level, ..), t(time, level_2, ..)" 'grep -q "float z(time, level, latitude, longitude)" h.txt && grep -q "float t(time, level_2, latitude, longitude)" h.txt'
ok "units and standard names" 'grep -q "z:units = \"m2 s-2\"" h.txt && grep -q "z:standard_name = \"geopotential\"" h.txt && grep -q "t2m:units = \"K\"" h.txt && grep -q "msl:standard_name = \"air_pressure_at_mean_sea_level\"" h.txt'
ok "forecast_period in hours with the timedelta dtype" 'grep -q "forecast_period:units = \"hours\"" h.txt && grep -q "forecast_period:dtype = \"timedelta64\[ns\]\"" h.txt'
# 2000-12-27T06:00 UTC = 977896800 s since 1970
# The data section of one variable as "a,b,c" (ncdump prints it from " NAME =" to the ";").
section() { awk -v v="$2" '$0 ~ "^ "v" =" {on=1} on {print} on && /;/ {exit}'; }
vals() { ncdump -v "$1" f.nc | section x "$1" | tr -d ' ;\n' | sed "s/^$1=//"; }
ok "forecast_reference_time = init" '[ "$(vals forecast_reference_time)" = "977896800" ]'
ok "forecast_period 0..48 every 6 h" '[ "$(vals forecast_period)" = "0,6,12,18,24,30,36,42,48" ]'
ok "valid times init + 6 h steps" '[ "$(vals time)" = "977896800,977918400,977940000,977961600,977983200,978004800,978026400,978048000,978069600" ]'
lat=$(vals latitude); lon=$(vals longitude)
ok "latitude north to south from 90 (got ${lat:0:20}...)" '[ "${lat%%,*}" = "90" ] && [ "${lat##*,}" = "-84.375" ]'
ok "longitude from 0 east (got ${lon:0:20}...)" '[ "${lon%%,*}" = "0" ] && [ "${lon##*,}" = "354.375" ]'

# Lead 0 against the archive record, both printed at full float32 precision.
"$W" -q dump archive --output d.nc --start 2000-12-27T06:00 --end 2000-12-27T06:00 >/dev/null
fvals() { ncdump -p 9 -v "$2" "$1" | section x "$2" | tr -d ' ;\n' | sed "s/^$2=//" | tr ',' '\n'; echo; }
for v in z500 t850 msl t2m; do
    fv=$v; [ $v = z500 ] && fv=z; [ $v = t850 ] && fv=t
    fvals f.nc $fv | head -n 2048 > f_$v.txt
    fvals d.nc $v > d_$v.txt
    ok "$v lead 0 equals the archive record (2048 values)" '[ $(wc -l < d_$v.txt) -eq 2048 ] && cmp -s f_$v.txt d_$v.txt'
    ok "$v lead 1 differs from lead 0" '[ "$(fvals f.nc $fv | sed -n 2049,4096p | md5sum)" != "$(md5sum < f_$v.txt)" ]'
done
ok "leads are finite" '! ncdump -v z,t2m f.nc | sed -n "/^data:/,\$p" | grep -qi "nan"'

# Memory stays flat in the number of steps (only the current state is kept).
rss() { /usr/bin/time -f %M "$W" -q forecast --model $CK --init archive --time 2000-12-23T00:00 --steps $1 --output m$1.nc 2>&1 >/dev/null | tail -1; }
if [ -x /usr/bin/time ]; then
    r4=$(rss 4); r40=$(rss 40)
    ok "peak RSS 40 steps ($r40 kB) within 2 MB of 4 steps ($r4 kB)" '[ $((r40 - r4)) -lt 2048 ]'
fi

# Errors: one line, exit 2 for usage, 1 for a damaged checkpoint; no output file left.
err1() { [ "$(wc -l < err.txt)" -eq 1 ] && grep -q "^wxcast: error: .*$1" err.txt; }
"$W" forecast --model $CK --init archive --time 2000-12-27T07:00 --steps 2 --output e.nc >/dev/null 2>err.txt
ok "time off the axis: exit 2 naming it" '[ $? -eq 2 ] && err1 "2000-12-27T07:00 is not a record" && [ ! -e e.nc ]'
"$W" forecast --model $CK --init archive --time 2000-12-27T06:00 --output e.nc >/dev/null 2>err.txt
ok "missing --steps: exit 2, naming --lead too" '[ $? -eq 2 ] && err1 "--steps is required (or --lead DURATION)"'
cp $CK bad.ckpt; printf '\xff' | dd of=bad.ckpt bs=1 seek=3000 conv=notrunc status=none
"$W" forecast --model bad.ckpt --init archive --time 2000-12-27T06:00 --steps 2 --output e.nc >/dev/null 2>err.txt
ok "damaged checkpoint: exit 1 naming it" '[ $? -eq 1 ] && err1 "bad.ckpt" && [ ! -e e.nc ]'
ls -A | grep -q "tmp" && { echo "FAIL: temporary left"; fail=$((fail+1)); }

checks_summary
