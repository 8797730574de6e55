#!/bin/bash
# wxcast ingest / inspect / verify / dump on the real ERA5 test files: a multi-shard ingest of member 3,
# verify OK, inspect --json, inspect of a GRIB file against grib_ls, an interrupted ingest resumed to a byte-identical archive, a flipped
# byte caught by verify (exit 1, naming shard and record), bytes appended to a shard or a shard a
# record short (the file size), and the clear errors for Gaussian,
# damaged and time-less inputs.
set -u
WX=$1; SRC=$2
DATA=$SRC/../shared/data/era5
T=$(mktemp -d /tmp/wx_cli_ingest.XXXXXX); trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/checks.sh"

DEFVARS='  - {name: z500, param: z, level: 500}
  - {name: t850, param: t, level: 850}
  - {name: z850, param: z, level: 850}'
recipe() { # $1 output $2 source $3 variables block (default DEFVARS)
local vars="${3:-$DEFVARS}"
cat > "$T/$1.yaml" <<EOR
sources: ["$2"]
variables:
$vars
dates: {start: "2017-01-01T00:00", end: "2017-01-02T12:00", step: "12h"}
member: 3
statistics: {start: "2017-01-01T00:00", end: "2017-01-02T12:00"}
shard_mb: 0.2
output: $1
EOR
}

# float16 ends at 65504: msl in Pa would be stored as infinity; refused, nothing left behind
cat > "$T/f16.yaml" <<EOR
sources: ["$DATA/regular_ll_msl.grib"]
variables: [{name: msl, param: prmsl}]
dates: {start: "2006-10-07T00:00", end: "2006-10-07T00:00", step: "6h"}
member: 5
dtype: float16
output: f16
EOR
"$WX" -q ingest "$T/f16.yaml" > /dev/null 2> "$T/f16err.txt"; rc=$?
ok "float16 ingest of msl: exit 2 naming channel, time, value and the way out ($(cat "$T/f16err.txt"))" \
    '[ $rc -eq 2 ] && grep -q "channel msl at 2006-10-07T00:00: value 102643 (Pa) is beyond float16.s range (65504) and would be stored as infinity: ingest it with .dtype: float32." "$T/f16err.txt" && [ ! -e "$T/f16" ]'

# recipe checks before any decoding: channel names, a statistics window without the dates, a zero
# step, drop_south_pole without a pole row, climatology: true without statistics.
# refused NAME WHAT PATTERN: ingest of $T/NAME.yaml exits 2 with PATTERN on stderr, no archive.
refused() {
    rname=$1 rpat=$3 # globals: ok evaluates its condition in its own function
    "$WX" -q ingest "$T/$rname.yaml" > /dev/null 2> "$T/$rname.err"; rc=$?
    ok "$2: exit 2 before decoding ($(cat "$T/$rname.err"))" \
        '[ $rc -eq 2 ] && grep -q "$rpat" "$T/$rname.err" && [ ! -e "$T/$rname/manifest.json" ]'
}
recipe nm "$DATA/era5-levels-members.grib" '  - {name: "z 500/x", param: z, level: 500}'
refused nm "a channel name with a blank and a slash" "line 3: variables\[0\].name .z 500/x.: expected letters, digits and ._."
recipe so "$DATA/era5-levels-members.grib"
sed -i 's/^statistics: .*/statistics: {start: "2015-01-01T00:00", end: "2015-01-02T12:00"}/' "$T/so.yaml"
refused so "statistics outside the dates" "statistics 2015-01-01T00:00 .. 2015-01-02T12:00 holds none of the dates 2017-01-01T00:00 .. 2017-01-02T12:00"
recipe st0 "$DATA/era5-levels-members.grib"
sed -i 's/step: "12h"/step: "0h"/' "$T/st0.yaml"
refused st0 "dates.step 0h, naming the file and line" "st0.yaml: line 6: dates.step: .0h.: expected a duration above 0"
recipe dsp "$DATA/era5-2mt-2019-03-uk.grib" '  - {name: t2m, param: 2t}'
sed -i -e 's/^member: 3/drop_south_pole: true/' -e 's/2017-01-01T00:00/2019-03-01T00:00/g' -e 's/2017-01-02T12:00/2019-03-01T12:00/g' "$T/dsp.yaml"
refused dsp "drop_south_pole on a regional grid, naming the recipe" "dsp.yaml: drop_south_pole: the grid.s last row is at .*, not -90"
recipe cn "$DATA/era5-levels-members.grib"
sed -i 's/^statistics: .*/climatology: true/' "$T/cn.yaml"
refused cn "climatology: true without statistics" "climatology: true needs a .statistics. window"

# xarray's ds.sel(level=500) leaves the level as a scalar coordinate: z is then z at 500 hPa;
# without a level a time-varying z is not the static surface geopotential (was: silently time 0)
/usr/bin/python3 - "$T/xsel.nc" <<'PY'
import sys, numpy as np, netCDF4
d = netCDF4.Dataset(sys.argv[1], "w")
d.createDimension("time", 2); d.createDimension("latitude", 5); d.createDimension("longitude", 8)
t = d.createVariable("time", "f8", ("time",)); t.units = "hours since 2017-01-01 00:00:00"; t[:] = [0, 24]
la = d.createVariable("latitude", "f4", ("latitude",)); la.units = "degrees_north"; la[:] = np.linspace(90, -90, 5)
lo = d.createVariable("longitude", "f4", ("longitude",)); lo.units = "degrees_east"; lo[:] = np.arange(0, 360, 45)
lv = d.createVariable("level", "i4", ()); lv.units = "millibars"; lv.assignValue(500)
z = d.createVariable("z", "f4", ("time", "latitude", "longitude")); z.coordinates = "level"; z.units = "m**2 s**-2"
z[:] = 50000 + np.arange(80, dtype="f4").reshape(2, 5, 8) * 10
d.close()
PY
printf 'sources: ["xsel.nc"]\nvariables: [{name: z500, param: z, level: 500}]\ndates: {start: "2017-01-01T00:00", end: "2017-01-02T00:00", step: 24h}\noutput: xsel\n' > "$T/xsel.yaml"
"$WX" -q ingest "$T/xsel.yaml" > /dev/null 2> "$T/xerr.txt"; rc=$?
"$WX" -q dump "$T/xsel" --output "$T/xsel_dump.nc" > /dev/null 2>&1
ok "scalar level coordinate: z read as z500, both times (rc $rc: $(cat "$T/xerr.txt"))" \
    '[ $rc -eq 0 ] && /usr/bin/python3 -c "import netCDF4,numpy as np,sys; v=netCDF4.Dataset(sys.argv[1])[\"z500\"][:]; sys.exit(0 if v.shape==(2,5,8) and float(v[1,0,0]-v[0,0,0])==400.0 else 1)" "$T/xsel_dump.nc"'
printf 'sources: ["xsel.nc"]\nvariables: [{name: z, param: z}]\ndates: {start: "2017-01-01T00:00", end: "2017-01-02T00:00", step: 24h}\noutput: xstat\n' > "$T/xstat.yaml"
/usr/bin/python3 -c "import netCDF4,sys; d=netCDF4.Dataset(sys.argv[1],'a'); del d['z'].coordinates; d.close()" "$T/xsel.nc"
"$WX" -q ingest "$T/xstat.yaml" > /dev/null 2> "$T/xerr2.txt"; rc=$?
ok "a time-varying z without a level is not taken as the static field: exit 1 saying why ($(cat "$T/xerr2.txt"))" \
    '[ $rc -eq 1 ] && grep -q "variable .z. (z) is a static field, but .*xsel.nc.s .z. changes from one time to the next" "$T/xerr2.txt" && [ ! -e "$T/xstat/manifest.json" ]'

# Scalar time and member coordinates, as xarray writes a selection: ds.sel(number=3) is member 3
# (it was read as an unnumbered field, so member 0 took member 3's values); cfgrib's forecast
# layout (scalar `time` = reference time, a `step` axis) counts the steps from it (was refused);
# ds.isel(time=0) is that one time
/usr/bin/python3 - "$T" <<'PY'
import sys, numpy as np, netCDF4
def base(path):
    d = netCDF4.Dataset(path, "w")
    d.createDimension("latitude", 5); d.createDimension("longitude", 8)
    la = d.createVariable("latitude", "f4", ("latitude",)); la.units = "degrees_north"; la[:] = np.linspace(90, -90, 5)
    lo = d.createVariable("longitude", "f4", ("longitude",)); lo.units = "degrees_east"; lo[:] = np.arange(0, 360, 45)
    return d
d = base(sys.argv[1] + "/sc_member.nc")
n = d.createVariable("number", "i8", ()); n.long_name = "ensemble member numerical id"; n.assignValue(3)
t = d.createVariable("time", "i8", ()); t.units = "hours since 2017-01-01"; t.standard_name = "time"; t.assignValue(12)
m = d.createVariable("msl", "f4", ("latitude", "longitude")); m.units = "Pa"; m.coordinates = "number time"; m[:] = 101000.0
d.close()
d = base(sys.argv[1] + "/sc_lead.nc")  # WeatherBench2's ds.sel(prediction_timedelta="24h")
d.createDimension("time", 2)
t = d.createVariable("time", "i8", ("time",)); t.units = "hours since 2020-01-01"; t[:] = [0, 12]
p = d.createVariable("prediction_timedelta", "i8", ()); p.units = "hours"; p.assignValue(24)
m = d.createVariable("msl", "f4", ("time", "latitude", "longitude")); m.units = "Pa"
m.coordinates = "prediction_timedelta"; m[:] = 100000.0
d.close()
d = base(sys.argv[1] + "/sc_vt.nc")  # cfgrib's ds.sel(step="24h").swap_dims(time="valid_time")
d.createDimension("valid_time", 2)
t = d.createVariable("valid_time", "i8", ("valid_time",)); t.units = "hours since 2020-01-01"
t.standard_name = "time"; t[:] = [24, 36]
p = d.createVariable("step", "i8", ()); p.units = "hours"; p.assignValue(24)
m = d.createVariable("msl", "f4", ("valid_time", "latitude", "longitude")); m.units = "Pa"
m.coordinates = "step"; m[:] = 100000.0
d.close()
d = base(sys.argv[1] + "/sc_fc.nc")
d.createDimension("step", 2)
st = d.createVariable("step", "f8", ("step",)); st.units = "hours"; st[:] = [6, 12]
t = d.createVariable("time", "i8", ()); t.units = "seconds since 1970-01-01"; t.standard_name = "forecast_reference_time"
t.assignValue(1508328000)  # 2017-10-18T12:00
m = d.createVariable("msl", "f4", ("step", "latitude", "longitude")); m.units = "Pa"; m.coordinates = "time"; m[:] = 100000.0
d.close()
PY
# file | what it is | the inspect row expected (valid times, then members for sc_member)
while IFS='|' read -r f what want; do
    "$WX" inspect "$T/$f.nc" > "$T/$f.txt" 2>&1; rc=$?
    ok "$what (rc $rc: $(tail -1 "$T/$f.txt"))" '[ $rc -eq 0 ] && grep -E "$want" "$T/$f.txt"'
done <<'CASES'
sc_member|ds.sel(number=3): member 3, valid at the scalar time|^  msl .* 1  2017-01-01T12:00 .. 2017-01-01T12:00 -  +3$
sc_lead|a selected lead (prediction_timedelta 24 h, scalar): valid a day after each initial time|^  msl .* 2  2020-01-02T00:00 .. 2020-01-02T12:00 
sc_vt|a selected lead on a valid-time axis: the valid times as they are|^  msl .* 2  2020-01-02T00:00 .. 2020-01-02T12:00 
sc_fc|cfgrib forecast layout: valid 18 and 00 UTC from the scalar reference time|^  msl .* 2  2017-10-18T18:00 .. 2017-10-19T00:00 
CASES

# A CDS expver dimension whose experiments both hold a time, ERA5T (0005) stored first: ERA5
# final (0001) is taken, with a warning (it was whichever came first in the file)
# (the next test's file too: both on xsel.nc's coordinates, z at 500 hPa by a scalar level)
/usr/bin/python3 - "$T/xsel.nc" "$T/expver.nc" "$T/const.nc" <<'PY'
import sys, numpy as np, netCDF4
a = netCDF4.Dataset(sys.argv[1])
def like_xsel(path):
    d = netCDF4.Dataset(path, "w")
    for n in ("time", "latitude", "longitude"):
        d.createDimension(n, len(a.dimensions[n]))
        v = d.createVariable(n, a[n].dtype, (n,)); v.units = a[n].units; v[:] = a[n][:]
    lv = d.createVariable("level", "i4", ()); lv.units = "millibars"; lv.assignValue(500)
    return d
d = like_xsel(sys.argv[2])
d.createDimension("expver", 2)
e = d.createVariable("expver", str, ("expver",)); e[0] = "0005"; e[1] = "0001"
z = d.createVariable("z", "f4", ("time", "expver", "latitude", "longitude"), fill_value=np.float32(np.nan))
z.units = "m**2 s**-2"; z.coordinates = "level"
z[:, 0] = 50100.0; z[:, 1] = 50000.0
d.close()
d = like_xsel(sys.argv[3])  # packed with scale_factor 0 (below)
z = d.createVariable("z", "i2", ("time", "latitude", "longitude")); z.set_auto_scale(False)
z.scale_factor = 0.0; z.add_offset = 50000.0; z.units = "m**2 s**-2"; z.coordinates = "level"; z[:] = 7
d.close()
PY
sed 's#xsel#expver#g' "$T/xsel.yaml" > "$T/expver.yaml"
"$WX" -q ingest "$T/expver.yaml" > /dev/null 2> "$T/everr.txt"; rc=$?
"$WX" -q dump "$T/expver" --output "$T/expver_dump.nc" > /dev/null 2>&1
ok "expver 0005 stored before 0001: ERA5 final's 50000 taken, with a warning (rc $rc: $(head -c 300 "$T/everr.txt"))" \
    '[ $rc -eq 0 ] && grep -q "hold different values in two experiments (expver)" "$T/everr.txt" && /usr/bin/python3 -c "import netCDF4,sys; v=netCDF4.Dataset(sys.argv[1])[\"z500\"][:]; sys.exit(0 if float(v.min())==50000.0 and float(v.max())==50000.0 else 1)" "$T/expver_dump.nc"'

# A packed field with scale_factor 0 (what packing code gives a constant field) reads as
# add_offset everywhere, and the archive says the channel is constant (it was refused outright)
sed 's#xsel#const#g' "$T/xsel.yaml" > "$T/const.yaml" && sed -i 's#^output: .*#output: constar#; s#^variables: .*#variables: [{name: z500, param: z, level: 500}]\nstatistics: {start: "2017-01-01T00:00", end: "2017-01-02T00:00"}#' "$T/const.yaml"
"$WX" -q ingest "$T/const.yaml" > /dev/null 2> "$T/cerr.txt"; rc=$?
ok "scale_factor 0: read as add_offset, with a warning that the channel is constant (rc $rc: $(cat "$T/cerr.txt"))" \
    '[ $rc -eq 0 ] && grep -q "channel z500 is 50000 everywhere and at every time" "$T/cerr.txt"'

# A source rewritten in place with the same size (a corrected re-download) is decoded again, not
# resumed onto the old shards; CDS-style hourly tp taken as it is keeps its 1 h period (a warning),
# not the archive step's.
/usr/bin/python3 - "$T/rw.nc" 0 <<'PY'
import sys, numpy as np, netCDF4
d = netCDF4.Dataset(sys.argv[1], "w", format="NETCDF3_CLASSIC")
d.createDimension("valid_time", 2); d.createDimension("latitude", 5); d.createDimension("longitude", 8)
t = d.createVariable("valid_time", "f8", ("valid_time",)); t.units = "hours since 2017-01-01 00:00:00"; t[:] = [0, 6]
la = d.createVariable("latitude", "f4", ("latitude",)); la.units = "degrees_north"; la[:] = np.linspace(90, -90, 5)
lo = d.createVariable("longitude", "f4", ("longitude",)); lo.units = "degrees_east"; lo[:] = np.arange(0, 360, 45)
v = d.createVariable("t2m", "f4", ("valid_time", "latitude", "longitude")); v.units = "K"
v[:] = 280 + float(sys.argv[2])
p = d.createVariable("tp", "f4", ("valid_time", "latitude", "longitude")); p.units = "m"
p[:] = 0.001
d.close()
PY
printf 'sources: ["rw.nc"]\nvariables: [{name: t2m, param: 2t}, {name: tp, param: tp}]\ndates: {start: "2017-01-01T00:00", end: "2017-01-01T06:00", step: 6h}\noutput: rw\n' > "$T/rw.yaml"
"$WX" -q ingest "$T/rw.yaml" > /dev/null 2> "$T/rw1.txt"
sz=$(stat -c %s "$T/rw.nc"); sleep 0.01
/usr/bin/python3 - "$T/rw.nc" 5 <<'PY'
import sys, netCDF4
d = netCDF4.Dataset(sys.argv[1], "a"); d["t2m"][:] = 280 + float(sys.argv[2]); d.close()
PY
# the archive of the old contents is kept unless --overwrite says to replace it
"$WX" -q ingest "$T/rw.yaml" > /dev/null 2> "$T/rw2.txt"; rc=$?
ok "a rewritten source: the finished archive is kept without --overwrite (rc $rc: $(cat "$T/rw2.txt"))" \
    '[ $rc -eq 2 ] && grep -q "holds a finished archive of another recipe or other sources" "$T/rw2.txt" && "$WX" -q verify "$T/rw" > /dev/null 2>&1'
"$WX" -q ingest "$T/rw.yaml" --overwrite > /dev/null 2>&1; rc=$?
"$WX" -q dump "$T/rw" --output "$T/rw_dump.nc" > /dev/null 2>&1
ok "a source rewritten with the same size ($sz -> $(stat -c %s "$T/rw.nc") bytes) is decoded again (rc $rc)" \
    '[ $rc -eq 0 ] && [ "$sz" = "$(stat -c %s "$T/rw.nc")" ] && /usr/bin/python3 -c "import netCDF4,sys; v=netCDF4.Dataset(sys.argv[1])[\"t2m\"][:]; sys.exit(0 if abs(float(v.mean()) - 285) < 1e-4 else 1)" "$T/rw_dump.nc"'
# --overwrite with a recipe whose times the sources lack: refused before the archive there is
# touched (its manifest was removed first, leaving no readable archive)
sed 's#end: "2017-01-01T06:00"#end: "2017-01-01T18:00"#' "$T/rw.yaml" > "$T/rw_late.yaml"
"$WX" -q ingest "$T/rw_late.yaml" --overwrite > /dev/null 2> "$T/rwl.txt"; rc=$?
ok "--overwrite with times the sources lack: exit 1 before any change, the archive intact (rc $rc: $(cat "$T/rwl.txt"))" \
    '[ $rc -eq 1 ] && grep -q "no source field for variable" "$T/rwl.txt" && "$WX" -q verify "$T/rw" > /dev/null 2>&1'
ok "hourly tp taken as it is: accumulation 3600 s in the manifest, one warning ($(cat "$T/rw1.txt"))" \
    'grep -q "\"name\":\"tp\",\"param\":\"tp\",\"level_type\":\"single\",\"level\":0,\"units\":\"m\",\"accumulation_s\":3600" "$T/rw/manifest.json" && grep -q "variable .tp.: the sources hold 1h sums, stored as they are in a 6h archive" "$T/rw1.txt"'

# Level axes in kPa, or in Pa without a units attribute: read as hPa (the latter with a warning),
# not as unknown single-level fields
for lu in kPa none; do
/usr/bin/python3 - "$T/lev_$lu.nc" "$lu" <<'PY'
import sys, numpy as np, netCDF4
d = netCDF4.Dataset(sys.argv[1], "w")
d.createDimension("time", 1); d.createDimension("level", 2); d.createDimension("latitude", 5); d.createDimension("longitude", 8)
t = d.createVariable("time", "f8", ("time",)); t.units = "hours since 2017-01-01 00:00:00"; t[:] = [0]
lv = d.createVariable("level", "f8", ("level",))
if sys.argv[2] == "kPa":
    lv.units = "kPa"; lv[:] = [50, 85]
else:
    lv[:] = [50000, 85000]
la = d.createVariable("latitude", "f4", ("latitude",)); la.units = "degrees_north"; la[:] = np.linspace(90, -90, 5)
lo = d.createVariable("longitude", "f4", ("longitude",)); lo.units = "degrees_east"; lo[:] = np.arange(0, 360, 45)
z = d.createVariable("z", "f4", ("time", "level", "latitude", "longitude")); z.units = "m**2 s**-2"; z[:] = 50000
d.close()
PY
"$WX" inspect "$T/lev_$lu.nc" > "$T/lev_$lu.txt" 2>&1
done
ok "levels in kPa read as 500 and 850 hPa ($(grep -c hPa "$T/lev_kPa.txt") rows)" \
    'grep -qE "^  z +500 hPa" "$T/lev_kPa.txt" && grep -qE "^  z +850 hPa" "$T/lev_kPa.txt"'
ok "levels without units above 1100 read as Pa, with a warning ($(grep warning "$T/lev_none.txt" | head -c 150))" \
    'grep -qE "^  z +500 hPa" "$T/lev_none.txt" && grep -q "level axis .level. has no units and goes up to 85000: read as Pa" "$T/lev_none.txt"'

# One file named twice (a pattern and its own name): read once, with a line saying so
recipe twice "$DATA/era5-levels-members.grib"
sed -i "s#^sources: .*#sources: [\"$DATA/era5-levels-members.grib\", \"$DATA/era5-levels-mem*.grib\"]#" "$T/twice.yaml"
"$WX" ingest "$T/twice.yaml" > /dev/null 2> "$T/twerr.txt"; rc=$?
ok "a source named twice is read once (rc $rc: $(grep "read once" "$T/twerr.txt" | head -c 200))" \
    '[ $rc -eq 0 ] && grep -q "sources\[1\]: .*era5-levels-members.grib is .*era5-levels-members.grib, already a source: read once" "$T/twerr.txt"'

# A statistics window reaching past the dates: recorded as the records it holds, with a warning
recipe sw "$DATA/era5-levels-members.grib"
sed -i 's/^statistics: .*/statistics: {start: "2016-12-01T00:00", end: "2017-01-01T18:00"}/' "$T/sw.yaml"
"$WX" -q ingest "$T/sw.yaml" > /dev/null 2> "$T/swerr.txt"; rc=$?
ok "statistics window past the dates: manifest says 2017-01-01T00:00 .. 2017-01-01T12:00 (rc $rc: $(head -c 200 "$T/swerr.txt"))" \
    '[ $rc -eq 0 ] && grep -q "\"statistics\":{\"start\":\"2017-01-01T00:00\",\"end\":\"2017-01-01T12:00\"" "$T/sw/manifest.json" && grep -q "statistics 2016-12-01T00:00 .. 2017-01-01T18:00 reaches past the dates: the statistics and climatology cover 2017-01-01T00:00 .. 2017-01-01T12:00" "$T/swerr.txt"'

recipe a "$DATA/era5-levels-members.grib"
ok "ingest runs" '"$WX" ingest "$T/a.yaml" > "$T/out.txt" 2>"$T/err.txt"'
ok "ingest reports 4 records" 'grep -q "4 records" "$T/out.txt"'
ok "several shards" '[ $(ls "$T"/a/shard-*.wxr | wc -l) -ge 2 ]'
ok "verify OK" '"$WX" verify "$T/a" | grep -q "^OK"'
# the same recipe from another working folder (its sources spelled otherwise): the same archive,
# kept (it was "another recipe", exit 2)
mkdir -p "$T/rs" && cp "$DATA/era5-levels-members.grib" "$T/rs/src.grib"
sed -e 's#^sources: .*#sources: ["src.grib"]#' "$T/a.yaml" > "$T/rs/r.yaml"
(cd "$T" && "$WX" -q ingest rs/r.yaml) > /dev/null 2>&1
(cd "$T/rs" && "$WX" -q ingest r.yaml) > "$T/out2.txt" 2>&1; rc=$?
(cd / && "$WX" -q ingest "$T/rs/r.yaml") > "$T/out3.txt" 2>&1; rc3=$?
ok "the same recipe run from its folder and by absolute path: nothing decoded again (rc $rc, $rc3: $(cat "$T/out2.txt" "$T/out3.txt"))" \
    '[ $rc -eq 0 ] && [ $rc3 -eq 0 ] && grep -q "(0 decoded," "$T/out2.txt" && grep -q "(0 decoded," "$T/out3.txt"'
# a rerun into a used folder leaves one archive: no shard past its last, no climatology it lacks
cp -r "$T/a" "$T/a2" && cp "$T/a/shard-00000.wxr" "$T/a2/shard-00042.wxr" && touch "$T/a2/notes.txt"
recipe a2 "$DATA/era5-levels-members.grib" && sed -i '/^statistics:/d' "$T/a2.yaml"
"$WX" -q ingest "$T/a2.yaml" --overwrite > /dev/null 2>&1; rc=$?
ok "rerun without statistics into the folder: old climatology and stray shard gone, notes kept (rc $rc: $(ls "$T/a2" | tr '\n' ' '))" \
    '[ $rc -eq 0 ] && [ -e "$T/a/climatology.wxc" ] && [ ! -e "$T/a2/climatology.wxc" ] && [ ! -e "$T/a2/shard-00042.wxr" ] && [ -e "$T/a2/notes.txt" ] && "$WX" -q verify "$T/a2" > /dev/null'
"$WX" inspect --json "$T/a" > "$T/inspect.json"
ok "inspect json channels" 'grep -q "\"name\":\"t850\"" "$T/inspect.json" && grep -q "\"nlat\":61" "$T/inspect.json" && grep -q "\"times\":4" "$T/inspect.json"'
ok "inspect text" '"$WX" inspect "$T/a" | grep -q "channels  3"'
ok "12-hourly statistics: differences over 12 h, finite" \
    'grep -q "\"diff_step_s\":43200" "$T/a/manifest.json" && ! grep -q "\"diff_std\":\[null" "$T/a/manifest.json"'
# inspect of a source file: the variables the readers see, against eccodes' own listing
"$WX" inspect --json "$DATA/era5-levels-members.grib" > "$T/src.json"; st=$?
check "inspect of a GRIB file (status $st)" $st
grib_ls -p shortName,level,number,validityDate,validityTime "$DATA/era5-levels-members.grib" > "$T/ls.txt"
python3 - "$T/src.json" "$T/ls.txt" <<'EOP'
import json, sys
d = json.load(open(sys.argv[1]))
rows = [l.split() for l in open(sys.argv[2]) if l.split() and l.split()[0] in ("z", "t")]
want = {}
for sn, lev, num, date, time in rows:
    v = want.setdefault((sn, float(lev)), [set(), set(), 0])
    v[0].add(date + time.zfill(4)); v[1].add(int(num)); v[2] += 1
got = {(v["param"], v["level"]): v for v in d["variables"]}
assert d["fields"] == len(rows) == 160, (d["fields"], len(rows))
assert set(got) == set(want), (set(got), set(want))
for k, (times, members, n) in want.items():
    g = got[k]
    assert g["fields"] == n and g["times"] == len(times), (k, g, len(times))
    assert (g["first_member"], g["last_member"]) == (min(members), max(members)), (k, g)
    t0, t1 = min(times), max(times)
    assert g["first_time"] == f"{t0[:4]}-{t0[4:6]}-{t0[6:8]}T{t0[8:10]}:{t0[10:12]}", (k, g, t0)
    assert g["last_time"] == f"{t1[:4]}-{t1[4:6]}-{t1[6:8]}T{t1[8:10]}:{t1[10:12]}", (k, g, t1)
EOP
check "inspect FILE: fields, variables, times and members as grib_ls lists them" $?
ok "inspect FILE text: one row per variable with members" \
    '"$WX" inspect "$DATA/era5-levels-members.grib" | grep -E -q "^  t +850 hPa +t +4  2017-01-01T00:00 .. 2017-01-02T12:00 - +0-9$"'
"$WX" inspect "$DATA/reduced_gg.grib" > /dev/null 2>"$T/gg.txt"; st=$?
ok "inspect of a reduced Gaussian file: exit 1 naming the grid (got $st: $(cat "$T/gg.txt"))" \
    '[ $st -eq 1 ] && grep -q "^wxcast: error: .*reduced_gg.grib.*reduced_gg" "$T/gg.txt"'
# a param no source holds (a typo): the error says so and lists the params the sources hold
recipe typo "$DATA/era5-levels-members.grib" '  - {name: t850, param: tt, level: 850}'
"$WX" ingest "$T/typo.yaml" > /dev/null 2>"$T/typo.txt"
rc=$?
ok "param no source holds: exit 1 naming it and the params held (rc $rc: $(cat "$T/typo.txt"))" '[ $rc -eq 1 ] && [ $(wc -l < "$T/typo.txt") -eq 1 ] && grep -q "no source holds param .tt. at any time (they hold: z t)" "$T/typo.txt"'
ok "dump to CF NetCDF" '"$WX" -q dump "$T/a" --output "$T/a.nc" --vars t850 --start 2017-01-01T12 >/dev/null'
ok "dump layout (ncdump)" 'ncdump -h "$T/a.nc" | grep -q "float t850(time, latitude, longitude)" && ncdump -h "$T/a.nc" | grep -q "time = UNLIMITED ; // (3 currently)"'
"$WX" dump "$T/a" --output "$T/b.nc" --vars t850,q700 > /dev/null 2> "$T/derr.txt"; rc=$?
ok "dump unknown --vars exit 2 naming it" '[ $rc -eq 2 ] && grep -q "q700" "$T/derr.txt" && [ ! -e "$T/b.nc" ]'

# Interrupted after 3 records (mid-shard), then resumed: byte-identical to the clean archive.
cp -r "$T/a" "$T/ref" && rm -rf "$T/a"
WX_TEST_ABORT_AFTER_RECORDS=3 "$WX" ingest "$T/a.yaml" >/dev/null 2>&1
ok "interrupted ingest exits non-zero" '[ $? -ne 0 ]'
ok "interrupted archive has no manifest" '[ ! -e "$T/a/manifest.json" ]'
ok "interrupted archive left a temporary" '[ -n "$(ls -A "$T/a" | grep tmp)" ]'
ok "interrupted archive is refused" '! "$WX" verify "$T/a" 2>/dev/null'
ok "resume" '"$WX" ingest "$T/a.yaml" > "$T/out2.txt" 2>&1'
ok "resume kept a shard" 'grep -q "[1-9] shards kept" "$T/out2.txt"'
ok "no temporaries left" '[ -z "$(ls -A "$T/a" | grep tmp)" ]'
same() { for f in $(cd "$T/ref" && ls); do cmp -s "$T/ref/$f" "$T/a/$f" || return 1; done; [ "$(ls "$T/ref")" = "$(ls "$T/a")" ]; }
ok "resumed archive identical" same

# A flipped byte in the second shard's data.
f=$(ls "$T"/a/shard-*.wxr | sed -n 2p)
printf '\xff' | dd of="$f" bs=1 seek=5000 conv=notrunc status=none
"$WX" verify "$T/a" > /dev/null 2> "$T/verr.txt"; rc=$?
ok "verify exit 1 on damage" '[ $rc -eq 1 ]'
ok "verify names shard and record" 'grep -q "shard-00001.wxr: record 0" "$T/verr.txt"'
# Bytes appended to a shard, or a shard cut short at a record boundary (checksums alone pass it)
cp -r "$T/ref" "$T/app" && printf garbage >> "$T/app/shard-00000.wxr"
"$WX" verify "$T/app" > /dev/null 2> "$T/aerr.txt"; rc=$?
ok "verify: appended bytes exit 1 naming the shard and sizes ($(cat "$T/aerr.txt"))" \
    '[ $rc -eq 1 ] && grep -q "shard-00000.wxr: file is .* bytes, expected .*appended to" "$T/aerr.txt"'
cp -r "$T/ref" "$T/cut" && s0="$T/cut/shard-00000.wxr" && truncate -s $(( $(stat -c %s "$s0") - 4096 )) "$s0"
"$WX" verify "$T/cut" > /dev/null 2> "$T/cerr.txt"; rc=$?
ok "verify: a shard one record short exits 1 ($(cat "$T/cerr.txt"))" \
    '[ $rc -eq 1 ] && grep -q "shard-00000.wxr: file is .* bytes, expected" "$T/cerr.txt"'
"$WX" inspect "$T/cut" > /dev/null 2> "$T/ierr.txt"; rc=$?
ok "inspect: the short shard too, exit 1 ($(cat "$T/ierr.txt"))" \
    '[ $rc -eq 1 ] && grep -q "shard-00000.wxr: file is .* bytes, expected" "$T/ierr.txt"'

# Clear errors.
recipe g "$DATA/regular_gg_pl.grib" "  - {name: u10, param: 10u}"
"$WX" ingest "$T/g.yaml" > /dev/null 2> "$T/gerr.txt"; rc=$?
ok "gaussian refused" '[ $rc -eq 1 ] && grep -q "regular_gg" "$T/gerr.txt" && grep -q "cdo remapbil" "$T/gerr.txt"'
recipe c "$DATA/era5-levels-corrupted.grib" "  - {name: t850, param: t, level: 850}"
"$WX" ingest "$T/c.yaml" > /dev/null 2> "$T/cerr.txt"; rc=$?
ok "damaged refused" '[ $rc -eq 1 ] && grep -q "message 1" "$T/cerr.txt" && grep -q "damaged" "$T/cerr.txt"'
recipe e "$DATA/eraint_uvz.nc"
"$WX" ingest "$T/e.yaml" > /dev/null 2> "$T/eerr.txt"; rc=$?
ok "eraint without time refused, with a working recipe" '[ $rc -eq 1 ] && grep -q "without a valid time" "$T/eerr.txt" && grep -q "ds.rename({.month.: .time.})" "$T/eerr.txt"'
ok "eraint error names file, variable and the month axis" 'grep -q "eraint_uvz.nc holds .z. along dimension .month." "$T/eerr.txt" && grep -q "z500" "$T/eerr.txt"'
recipe m "$DATA/era5-levels-members.grib" "  - {name: z500, param: z, level: 500, colour: red}"
"$WX" ingest "$T/m.yaml" > /dev/null 2> "$T/merr.txt"; rc=$?
ok "unknown recipe key is a usage error" '[ $rc -eq 2 ] && grep -q "colour" "$T/merr.txt"'
recipe n "$DATA/era5-levels-members.grib" "  - {name: q700, param: q, level: 700}"
"$WX" ingest "$T/n.yaml" > /dev/null 2> "$T/nerr.txt"; rc=$?
ok "absent field named" '[ $rc -eq 1 ] && grep -q "q700" "$T/nerr.txt" && grep -q "2017-01-01T00:00" "$T/nerr.txt"'
recipe lv "$DATA/era5-levels-members.grib" "  - {name: z700, param: z, level: 700}"
"$WX" ingest "$T/lv.yaml" > /dev/null 2> "$T/lverr.txt"; rc=$?
ok "a level the sources lack: the recipe, and the levels, members and times they hold ($(cat "$T/lverr.txt"))" \
    '[ $rc -eq 1 ] && grep -q "lv.yaml: no source field for variable .z700. (z 700 hPa, member 3)" "$T/lverr.txt" && grep -q "the sources hold z at 500, 850 hPa, members 0-9, valid 2017-01-01T00:00 .. 2017-01-02T12:00 every 12h" "$T/lverr.txt"'

# a time missing from the sources (every message of 2017-01-02 00 UTC removed): the hint says the
# series has a gap and where, not that it runs "every 12h" from first to last
printf 'if (!(dataDate == 20170102 && dataTime == 0)) { write; }\n' > "$T/gap.rules"
grib_filter -o "$T/gap.grib" "$T/gap.rules" "$DATA/era5-levels-members.grib"
recipe gp "$T/gap.grib" "  - {name: z500, param: z, level: 500}"
"$WX" ingest "$T/gp.yaml" > /dev/null 2> "$T/gperr.txt"; rc=$?
ok "a gap in the sources named as one ($(cat "$T/gperr.txt"))" \
    '[ $rc -eq 1 ] && grep -q "every 12h with 1 missing (the first 2017-01-02T00:00)" "$T/gperr.txt"'

# grid: {resolution} that is no multiple of the source spacing: a global source goes to the global
# grid of that spacing (1 deg -> 1.5 deg, WB2's 121x240) by conservative regridding, which keeps the
# area-weighted mean; a regional source cannot (usage error naming the recipe).
msl_recipe() { # $1 name $2 grid line
cat > "$T/$1.yaml" <<EOR
sources: ["$DATA/regular_ll_msl.grib"]
variables: [{name: msl, param: prmsl}]
dates: {start: "2006-10-07T00:00", end: "2006-10-07T00:00", step: "6h"}
member: 5
$2
output: $1
EOR
}
msl_recipe fine1 "grid: native"
msl_recipe r15 "grid: {resolution: 1.5}"
"$WX" ingest "$T/fine1.yaml" > /dev/null 2>&1 && "$WX" ingest "$T/r15.yaml" > /dev/null 2> "$T/r15.txt"; st=$?
check "ingest 1 deg -> 1.5 deg (status $st: $(cat "$T/r15.txt"))" $st
"$WX" -q dump "$T/fine1" --output "$T/fine1.nc" && "$WX" -q dump "$T/r15" --output "$T/r15.nc"
/usr/bin/python3 - "$T/fine1.nc" "$T/r15.nc" <<'EOP'
import sys
import netCDF4
import numpy as np
def area_mean(path):
    d = netCDF4.Dataset(path)
    lat = np.deg2rad(d["latitude"][:].astype(float))
    b = np.concatenate([[np.pi / 2], (lat[:-1] + lat[1:]) / 2, [-np.pi / 2]])
    w = np.sin(b[:-1]) - np.sin(b[1:])
    f = d["msl"][0].astype(float)
    return f.shape, (w[:, None] * f).sum() / (w.sum() * f.shape[1])
(s1, m1), (s2, m2) = area_mean(sys.argv[1]), area_mean(sys.argv[2])
assert s1 == (181, 360) and s2 == (121, 240), (s1, s2)
assert abs(m1 - m2) < 1e-3 * 1, (m1, m2)  # Pa: float32 storage of ~1e5 values
print("area mean", m1, m2)
EOP
check "1.5 deg archive: 121x240, area mean of msl kept within 1e-3 Pa" $?
cat > "$T/reg.yaml" <<EOR
sources: ["$DATA/era5-2mt-2019-03-uk.grib"]
variables: [{name: t2m, param: 2t}]
dates: {start: "2019-03-01T00:00", end: "2019-03-01T00:00", step: "6h"}
grid: {resolution: 0.4}
output: reg
EOR
"$WX" ingest "$T/reg.yaml" > /dev/null 2> "$T/regerr.txt"; rc=$?
ok "a regional source and a spacing no multiple of 0.25: exit 2 naming the recipe ($(cat "$T/regerr.txt"))" \
    '[ $rc -eq 2 ] && grep -q "reg.yaml: grid.resolution 0.4: expected a multiple of the source spacing 0.25 x 0.25 degrees (the source is not global)" "$T/regerr.txt"'

# A regional source across the meridian (the CDS's UK file, longitudes -10 .. 2): its dump keeps
# -10 .. 2 (not 350 .. 362), and that file ingests back onto the same grid.
cat > "$T/uk.yaml" <<EOR
sources: ["$DATA/era5-2mt-2019-03-uk.grib"]
variables: [{name: t2m, param: 2t}]
dates: {start: "2019-03-01T00:00", end: "2019-03-01T00:00", step: "6h"}
output: uk
EOR
"$WX" -q ingest "$T/uk.yaml" >/dev/null 2>&1 && "$WX" -q dump "$T/uk" --output "$T/uk.nc" >/dev/null 2>&1
lons=$(ncdump -v longitude "$T/uk.nc" 2>/dev/null | sed -n '/^ longitude =/,/;/p' | tr -d ' ;\n' | sed 's/^longitude=//')
ok "UK dump longitudes -10 .. 2 ($(echo "$lons" | cut -c1-20)...$(echo "$lons" | rev | cut -c1-12 | rev))" \
    '[ "${lons%%,*}" = "-10" ] && [ "${lons##*,}" = "2" ]'
cat > "$T/uk2.yaml" <<EOR
sources: ["$T/uk.nc"]
variables: [{name: t2m, param: t2m}]
dates: {start: "2019-03-01T00:00", end: "2019-03-01T00:00", step: "6h"}
output: uk2
EOR
"$WX" -q ingest "$T/uk2.yaml" >/dev/null 2>"$T/uk2err.txt"; st=$?
ok "the dump ingests back onto the same grid (status $st: $(cat "$T/uk2err.txt"))" \
    '[ $st -eq 0 ] && [ "$("$WX" inspect "$T/uk" | grep -i "^grid")" = "$("$WX" inspect "$T/uk2" | grep -i "^grid")" ] && "$WX" inspect "$T/uk2" | grep -qi "^grid.*lon -10..2 "'

# Climatology size rule: 2 hourly 0.25-degree records with statistics would make a 366-day
# climatology (one hour kept: every 6 h from 00 UTC) of 3.0 GB for 17 MB of records: skipped with
# one warning when the recipe leaves `climatology:` unset; a bad hour step is a usage error.
if /usr/bin/python3 -c "import eccodes" 2>/dev/null; then
    /usr/bin/python3 "$SRC/tests/bench/bench_ingest_make_grib.py" "$T/q.grib" 2
    cat > "$T/q.yaml" <<EOR
sources: ["q.grib"]
variables: [{name: t2m, param: 2t}, {name: msl, param: msl}]
dates: {start: "2017-01-01T00:00", end: "2017-01-01T01:00", step: "1h"}
statistics: {start: "2017-01-01T00:00", end: "2017-01-01T01:00"}
output: q_archive
EOR
    "$WX" ingest "$T/q.yaml" > /dev/null 2> "$T/qerr.txt"; rc=$?
    ok "0.25-degree, 2 records: exit 0 ($(tail -1 "$T/qerr.txt"))" '[ $rc -eq 0 ]'
    ok "climatology skipped with one warning giving its size and the key" 'grep -q "climatology skipped: 366 days x 1 hours (0 UTC) x 2 channels x 721x1440 points would be 3.0 GB" "$T/qerr.txt" && grep -q "climatology: true" "$T/qerr.txt"'
    ok "no climatology file, none in the manifest" '[ ! -e "$T/q_archive/climatology.wxc" ] && ! grep -q "climatology.wxc" "$T/q_archive/manifest.json"'
    "$WX" verify "$T/q_archive" > /dev/null 2>&1
    ok "the archive verifies" '[ $? -eq 0 ]'
    sed -i 's/^output: q_archive$/output: q2\nclimatology_hour_step: 5/' "$T/q.yaml"
    "$WX" ingest "$T/q.yaml" > /dev/null 2> "$T/q2err.txt"; rc=$?
    ok "climatology_hour_step 5 refused (rc $rc: $(cat "$T/q2err.txt"))" '[ $rc -eq 2 ] && grep -q "climatology_hour_step 5: expected a divisor of 24" "$T/q2err.txt"'
fi

checks_summary
