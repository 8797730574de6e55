#!/usr/bin/env bash
# wxcast eval's options on the tiny world (tests/cli/lib/tiny_fcn_world.sh):
#  1. every usage error (unknown --baseline, --baseline persistence with --no-baselines,
#     --climatology with --no-climatology, a file listed twice, an unknown --convention, a
#     --climatology archive whose channels are not the truth's in its order) exits 2 with one
#     "wxcast: error:" line before any scoring, and leaves no output folder;
#  2. two models from different initial times (00 and 06 UTC): baselines on each model's own
#     initial time (rows persistence@MODEL, n 1, not a pooled n 2), scorecards against them;
#  3. --convention fourcastnet runs and says so in scores.json;
#  4. --regions: an unknown name and a land region without a land-sea mask (the tiny archive has
#     no lsm) exit 2 before scoring; tropics,europe add a last column "region" to scores.csv whose
#     global rows are exactly the table without --regions, and "region_scores" to scores.json;
#  5. --resolution: abc, 0 and 0.7 exit 2; 20 on the tiny world writes "resolution":20; a forecast
#     on another grid than the truth and an --output that is a file exit 2.
# Usage: eval_options.sh WXCAST SRCDIR
set -u
W=$1
T=$(mktemp -d /tmp/wx_cli_eval_options.XXXXXX); trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/checks.sh"
cd "$T"
. "$2/tests/cli/lib/tiny_fcn_world.sh"
ok "tiny world, archive and checkpoint made" '[ -f ck/pretrain/last.ckpt ]'
CK=ck/pretrain/last.ckpt
run_flags=(-q)
run forecast --model $CK --init archive --time 2000-12-27T00:00 --steps 4 --output f0.nc
check "forecast from 00 UTC (rc $rc: $err)" $rc
run forecast --model $CK --init archive --time 2000-12-27T06:00 --steps 4 --output f6.nc
check "forecast from 06 UTC (rc $rc: $err)" $rc

# 1. Usage errors: found before scoring, nothing written.
E=(eval --truth archive --output o)
run "${E[@]}" --forecast det=f0.nc --baseline foo
usage_error "unknown --baseline" "--baseline foo" "det, persistence, climatology"
ok "unknown --baseline: no output folder" '[ ! -e o ]'
run "${E[@]}" --forecast det=f0.nc --no-baselines --baseline persistence
usage_error "--baseline persistence with --no-baselines" "--no-baselines"
ok "--no-baselines --baseline persistence: no output folder" '[ ! -e o ]'
run "${E[@]}" --forecast det=f0.nc --no-climatology --climatology archive
usage_error "--climatology with --no-climatology" "--no-climatology" "contradict"
run "${E[@]}" --forecast det=f0.nc,f0.nc
usage_error "a file listed twice" "f0.nc is listed twice"
# --climatology from another archive: its channels must be the truth's, in its order (the
# climatology is read slab by slab in that order); the same recipe with climatology is accepted.
sed -e 's/^output: archive$/output: clim_same/' -e '$a climatology: true' recipe.yaml > r_same.yaml
awk '/name: z500/ {z = $0; next} /name: t850/ {print; print z; next} {print}' recipe.yaml |
    sed -e 's/^output: archive$/output: clim_rev/' -e '$a climatology: true' > r_rev.yaml
"$W" -q ingest r_same.yaml >/dev/null 2>&1 && "$W" -q ingest r_rev.yaml >/dev/null 2>&1
check "archives with climatology in the truth's and in another channel order" $?
run "${E[@]}" --forecast det=f0.nc --climatology clim_rev
usage_error "--climatology with the channels in another order" "--climatology clim_rev: channel 0 is t850 (t, level 850)" "z500 (z, level 500): expected the truth's channels in its order"
ok "--climatology in another order: no output folder" '[ ! -e o ]'
run "${E[@]}" --forecast det=f0.nc --climatology clim_same
check "--climatology with the truth's channels is accepted (rc $rc: $err)" $rc
rm -rf o
run "${E[@]}" --forecast det=f0.nc --convention nvidia
usage_error "unknown --convention" "--convention nvidia" "wb2" "fourcastnet"
ok "usage errors: no output folder" '[ ! -e o ]'

# 2. Different initial times: each model's baselines on its own.
run eval --truth archive --output o2 --forecast det=f0.nc,ens=f6.nc
check "det 00 UTC, ens 06 UTC (rc $rc: $err)" $rc
n_det=$(awk -F, '$1=="persistence@det" && $2=="z500" && $4=="6" {print $5}' o2/scores.csv)
n_ens=$(awk -F, '$1=="persistence@ens" && $2=="z500" && $4=="6" {print $5}' o2/scores.csv)
pooled=$(awk -F, '$1=="persistence"' o2/scores.csv | wc -l)
ok "persistence@det and persistence@ens at +6h over 1 initial time each ($n_det, $n_ens), no pooled row ($pooled)" \
    '[ "$n_det" = 1 ] && [ "$n_ens" = 1 ] && [ "$pooled" = 0 ]'
ok "scorecards of det and ens against their own persistence" \
    '[ -f o2/scorecard_det_vs_persistence.png ] && [ -f o2/scorecard_ens_vs_persistence.png ]'
ok "scores.json: per-model baselines, 2 initial times" \
    'grep -q "\"initial_times\":2" o2/scores.json && grep -q "\"baselines\":\"per_model\"" o2/scores.json'

# Forecasts past the archive's end and variables the truth lacks are not scored, with one warning
# each per model (they used to be dropped without a word).
run forecast --model $CK --init archive --time 2001-01-03T06:00 --steps 4 --output late.nc
check "forecast from 2001-01-03T06 (rc $rc: $err)" $rc
"$W" eval --truth archive --output o_late --forecast late=late.nc,f0.nc > /dev/null 2> late.err
st=$?
ok "leads past the archive: one warning naming them ($(grep warning late.err | head -c 200))" \
    '[ $st -eq 0 ] && grep -q "eval: 2/2 forecasts (100.0%)" late.err && [ $(grep -c "warning: late.nc: 2 of its 5 valid times (2001-01-04T00:00 .. 2001-01-04T06:00) have no record in the truth archive (2000-12-23T00:00 .. 2001-01-03T18:00 every 6h): not scored" late.err) -eq 1 ] && [ $(grep -c warning late.err) -eq 1 ]'
if /usr/bin/python3 -c "import netCDF4" 2>/dev/null; then
    cp f0.nc ren.nc
    /usr/bin/python3 -c "import netCDF4; d = netCDF4.Dataset('ren.nc', 'a'); d.renameVariable('msl', 'sp'); d.close()"
    "$W" eval --truth archive --output o_ren --forecast ren.nc > /dev/null 2> ren.err
    st=$?
    ok "a variable the truth lacks: one warning naming it ($(grep warning ren.err | head -c 160))" \
        '[ $st -eq 0 ] && grep -q "warning: ren.nc: no channel of the truth archive for sp: not scored" ren.err'
fi

# WeatherBench2's layout (time = initial time, prediction_timedelta, WB2's long names, latitude
# south to north, as xarray writes it from WB2's zarr): one file with both initial times scores
# exactly as wxcast's two files, and a file with one of them twice is refused (two fields of a
# variable at one valid time of one forecast).
if /usr/bin/python3 -c "import xarray" 2>/dev/null; then
    run eval --truth archive --output o_own --forecast m=f0.nc,m=f6.nc
    /usr/bin/python3 - <<'EOP'
import xarray as xr
long = {"z": "geopotential", "t": "temperature", "msl": "mean_sea_level_pressure",
        "t2m": "2m_temperature"}
def wb2(path):
    ds = xr.open_dataset(path)
    init, lead = ds.forecast_reference_time.values, ds.forecast_period.values
    ds = ds.drop_vars(["forecast_reference_time", "forecast_period"]).rename(time="prediction_timedelta")
    ds = ds.assign_coords(prediction_timedelta=lead).expand_dims(time=[init])
    return ds.rename({k: v for k, v in long.items() if k in ds}).sortby("latitude")
both = xr.concat([wb2("f0.nc"), wb2("f6.nc")], dim="time")
both.attrs = {}
both.to_netcdf("wb2_both.nc")
xr.concat([wb2("f0.nc"), wb2("f0.nc")], dim="time").to_netcdf("wb2_twice.nc")
EOP
    run eval --truth archive --output o_wb2 --forecast m=wb2_both.nc
    ok "WB2 layout, two initial times in one file: scores.csv identical to wxcast's two files (rc $rc: $err)" \
        '[ $rc -eq 0 ] && [ -s o_wb2/scores.csv ] && cmp -s o_own/scores.csv o_wb2/scores.csv'
    run eval --truth archive --output o_tw --forecast m=wb2_twice.nc
    fails 1 "WB2 layout, one initial time twice" "wb2_twice.nc: two fields of z500 at 2000-12-27T00:00 in the forecast from 2000-12-27T00:00"
    ok "WB2 layout, one initial time twice: no output folder" '[ ! -e o_tw ]'
    # export draws one initial time of such a file: without --time it is refused (it mixed the
    # runs, labelling one's fields with the other's leads); with it the maps are the own file's
    run export wb2_both.nc --output x_both --no-coast --width 240
    fails 2 "export of a WB2 file of two initial times, no --time" "wb2_both.nc holds forecasts from 2 initial times (2000-12-27T00:00, 2000-12-27T06:00): give --time"
    run export wb2_both.nc --output x_both --no-coast --width 240 --time 2000-12-27T05:00
    fails 2 "export --time of no initial time in the file" "--time 2000-12-27T05:00: wb2_both.nc holds no forecast from that initial time"
    run export wb2_both.nc --output x_both --no-coast --width 240 --time 2000-12-27T06:00
    "$W" -q export f6.nc --output x_own --no-coast --width 240 > /dev/null 2>&1
    nm=$(ls x_own/maps/*.png 2>/dev/null | wc -l)
    ok "export --time 06 of the WB2 file: the $nm maps equal those of the 06 UTC file (rc $rc: $err)" \
        '[ $rc -eq 0 ] && [ $nm -gt 4 ] && diff -r x_own/maps x_both/maps > /dev/null'
    run export f6.nc --output x_own --no-coast --width 240 --leads " , "
    fails 2 "export --leads of no lead" "--leads ' , ': names no lead"
    ok "export --leads of no lead: the earlier export stays ($(ls x_own/maps | wc -l) maps)" '[ $(ls x_own/maps/*.png | wc -l) -eq $nm ]'
fi

# FourCastNet's 32 of a 33-row truth's rows and a full-grid forecast (GraphCast's) in one run:
# every model is scored on the 32 rows, and the 32-row model's rows equal its scores against a
# truth ingested without the south pole (the tiny world's `archive`); the full-grid perfect
# forecast scores 0. With --resolution that mix is a usage error.
sed -e '/drop_south_pole/d' -e 's/^output: archive/output: archive33/' recipe.yaml > recipe33.yaml
"$W" -q ingest recipe33.yaml >/dev/null 2>&1
run dump archive33 --as-forecast --output p33.nc --start 2000-12-27T00:00 --end 2000-12-28T00:00
"$W" eval --truth archive33 --output o33 --forecast fcn=f0.nc,perfect=p33.nc > /dev/null 2> e33.txt
st=$?
run eval --truth archive --output o32 --forecast fcn=f0.nc
ok "33-row truth, a 32-row and a 33-row forecast: scored on 32 rows (rc $st: $(grep "first 32" e33.txt | head -c 160))" \
    '[ $st -eq 0 ] && grep -q "f0.nc is on the truth.s grid without its last row (FourCastNet.s layout): every forecast is scored on the first 32 of the truth.s 33 rows" e33.txt'
ok "... the 32-row model's and the baselines' rows equal those against the 32-row truth" \
    'diff <(grep -E "^(fcn|persistence|climatology)," o33/scores.csv) <(grep -E "^(fcn|persistence|climatology)," o32/scores.csv) && [ $(grep -c "^fcn," o33/scores.csv) -gt 10 ]'
ok "... the full-grid perfect forecast scores RMSE 0" \
    '[ -z "$(awk -F, "\$1==\"perfect\" && \$6 != 0" o33/scores.csv)" ] && [ $(grep -c "^perfect," o33/scores.csv) -gt 10 ]'
run eval --truth archive33 --output o33r --forecast fcn=f0.nc,perfect=p33.nc --resolution 11.25
usage_error "the 32/33-row mix with --resolution" "--resolution with forecasts on 32 of the truth's 33 rows"

# 3. NVlabs' convention.
run eval --truth archive --output o3 --forecast det=f0.nc,f6.nc --convention fourcastnet
check "--convention fourcastnet (rc $rc: $err)" $rc
ok "scores.json says fourcastnet, shared baselines" \
    'grep -q "\"convention\":\"fourcastnet\"" o3/scores.json && grep -q "\"baselines\":\"shared\"" o3/scores.json'

# 4. WeatherBench2 regions.
run "${E[@]}" --forecast det=f0.nc --regions tropics,mars
usage_error "unknown region" "--regions: unknown region 'mars' (known: global, tropics," "tropics_land, all)"
run "${E[@]}" --forecast det=f0.nc --regions europe,tropics_land
usage_error "land region without lsm" "--regions tropics_land" "no land-sea mask"
ok "--regions usage errors: no output folder" '[ ! -e o ]'
run eval --truth archive --output o4 --forecast det=f0.nc,ens=f6.nc --regions tropics,europe
check "--regions tropics,europe (rc $rc: $err)" $rc
ok "scores.csv: last column region" '[ "$(head -1 o4/scores.csv | cut -d, -f15)" = region ]'
grep ',global$' o4/scores.csv | sed 's/,global$//' > g4.csv
tail -n +2 o2/scores.csv > g2.csv
cmp -s g4.csv g2.csv; st=$?
check "scores.csv: the global rows are the table without --regions ($(wc -l < g4.csv) rows)" $st
n_g=$(wc -l < g2.csv); n_t=$(grep -c ',tropics$' o4/scores.csv); n_e=$(grep -c ',europe$' o4/scores.csv)
ok "scores.csv: as many tropics and europe rows as global ($n_t, $n_e, $n_g)" \
    '[ "$n_t" = "$n_g" ] && [ "$n_e" = "$n_g" ]'
ok "scores.json: regions and region_scores" \
    'grep -q "\"regions\":\[\"global\",\"tropics\",\"europe\"\]" o4/scores.json && grep -q "\"region_scores\":\[{\"region\":\"tropics\"" o4/scores.json'
ok "stdout counts the regional scores" 'echo "$out" | grep -q "in 2 other regions"'
# 5. --resolution: WB2's scoring on a coarser global grid (values: test_eval_regions).
run "${E[@]}" --forecast det=f0.nc --resolution abc
usage_error "--resolution not a number" "--resolution"
run "${E[@]}" --forecast det=f0.nc --resolution 0
usage_error "--resolution 0" "--resolution 0" "> 0"
run "${E[@]}" --forecast det=f0.nc --resolution 0.7
usage_error "--resolution 0.7" "--resolution 0.7" "divides 180 and 360"
ok "--resolution usage errors: no output folder" '[ ! -e o ]'
# a forecast on another grid than the truth: exit 2 naming both grids (forecast --init: 2 too)
/usr/bin/python3 - <<'EOP'
import netCDF4
import numpy as np
d = netCDF4.Dataset("g10.nc", "w")
d.createDimension("time", 1); d.createDimension("latitude", 19); d.createDimension("longitude", 36)
t = d.createVariable("time", "f8", ("time",)); t.units = "hours since 2000-12-27 00:00:00"; t[:] = [0]
la = d.createVariable("latitude", "f8", ("latitude",)); la.units = "degrees_north"; la[:] = np.linspace(90, -90, 19)
lo = d.createVariable("longitude", "f8", ("longitude",)); lo.units = "degrees_east"; lo[:] = np.arange(0, 360, 10)
v = d.createVariable("t2m", "f4", ("time", "latitude", "longitude")); v.units = "K"; v[:] = 280
r = d.createVariable("forecast_reference_time", "f8", ()); r.units = "hours since 2000-12-27 00:00:00"; r.assignValue(0)
d.close()
EOP
run eval --truth archive --output og --forecast g10.nc
usage_error "a forecast on another grid than the truth" "g10.nc: t2m is on grid 19x36" "the truth archive on 32x64" "regrid the forecast"
# an analysis (no forecast_reference_time) would be scored against itself: refused; dump
# --as-forecast makes it a (perfect) forecast on purpose
"$W" -q dump archive --output an.nc --start 2000-12-27T06:00 --end 2000-12-28T06:00 >/dev/null
run eval --truth archive --output oa --forecast an.nc
usage_error "an analysis given as a forecast" "--forecast: an.nc is not a forecast file: it has no forecast_reference_time"
"$W" -q dump archive --as-forecast --output pf.nc --start 2000-12-27T06:00 --end 2000-12-28T06:00 >/dev/null
"$W" -q eval --truth archive --output op --forecast pf.nc --no-baselines >/dev/null 2>&1; st=$?
ok "dump --as-forecast is scored: RMSE 0 at +24 h (exit $st)" \
   '[ $st -eq 0 ] && grep -q "^model,z500,[^,]*,24,1,0,0,0,1," op/scores.csv'
# a rerun into the same folder with fewer models: no stale plot of the dropped one; other files stay
"$W" -q dump archive --as-forecast --output pf2.nc --start 2000-12-27T12:00 --end 2000-12-28T12:00 >/dev/null
"$W" -q eval --truth archive --output op2 --forecast a=pf.nc,b=pf2.nc >/dev/null 2>&1
touch op2/notes.txt
had=$(ls op2 | tr '\n' ' ')
"$W" -q eval --truth archive --output op2 --forecast a=pf.nc >/dev/null 2>&1; st=$?
ok "rerun with model a only: b's scorecard gone, a's and notes.txt kept (exit $st; before: $had; after: $(ls op2 | tr '\n' ' '))" \
   '[ $st -eq 0 ] && [[ "$had" == *scorecard_b_vs_persistence.png* ]] && [ ! -e op2/scorecard_b_vs_persistence.png ] && [ -e op2/scorecard_a_vs_persistence.png ] && [ -e op2/notes.txt ] && ! grep -q "^b," op2/scores.csv'
ok "no output folder for it" '[ ! -e og/scores.csv ]'
: > afile
run eval --truth archive --output afile --forecast det=f0.nc
usage_error "--output an existing file, before scoring" "--output afile" "is a file, expected a folder"
run eval --truth archive --output o5 --forecast det=f0.nc --resolution 20
check "--resolution 20 (rc $rc: $err)" $rc
ok "scores.json: resolution 20" 'grep -q "\"resolution\":20" o5/scores.json'
ok "without --resolution: null" 'grep -q "\"resolution\":null" o2/scores.json'
run eval --help
ok "eval --help documents --regions" 'echo "$out" | grep -q -- "--regions"'
ok "eval --help documents --resolution" 'echo "$out" | grep -q -- "--resolution"'
checks_summary
