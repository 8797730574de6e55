#!/usr/bin/env bash
# Forecast products on a tiny synthetic world (z500 u500 v500 t850 msl u10 v10 t2m tcwv tp, a
# FourCastNet trained a few steps): CF NetCDF with level axes (--compress), GRIB2 per level type (simple and
# CCSDS), round trips through --init FILE.nc / FILE.grib2, an ensemble (--members 4) with mean
# and spread files, all checked by forecast_products.py with netCDF4, xarray, cfgrib and eccodes;
# `cdo sinfo` reads the NetCDF; errors. Skips (77) when a tool is absent.
# A command's status is taken (st=$?) before `ok`: the $(...) in a check's text would reset $?.
# Usage: forecast_products.sh WXCAST SRCDIR
set -u
W=$1; S=$2
PY=/usr/bin/python3
$PY -c "import netCDF4, xarray, cfgrib, eccodes" 2>/dev/null || { echo "skip: python3-netcdf4/xarray/cfgrib/eccodes missing"; exit 77; }
T=$(mktemp -d /tmp/wx_cli_fproducts.XXXXXX); trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/checks.sh"
cd "$T"
TINY_WIND_TP=1 . "$S/tests/cli/lib/tiny_fcn_world.sh"

CK=ck/pretrain/last.ckpt
# synth's NetCDF tp is a sum over its 6 h output step, not a CDS hourly sum
f=$(ls world/*sfc*.nc | head -1)
ok "inspect of synth's NetCDF: tp accumulated over 6h ($("$W" inspect "$f" | grep " tp "))" \
    '"$W" inspect "$f" | grep -E "^  tp +single .* 6h +-"'
F() { "$W" -q forecast --model $CK "$@" >/dev/null 2>err.txt; }
F --init archive --time 2000-12-27T06:00 --lead 24h --output f.nc --grib g --compress; st=$?
ok "deterministic NetCDF + GRIB (err: $(cat err.txt))" '[ $st -eq 0 ] && [ -f f.nc ] && [ -f g/forecast_20001227T06_sfc.grib2 ] && [ -f g/forecast_20001227T06_pl.grib2 ]'
F --init f.nc --steps 4 --output r.nc; st=$?
ok "round trip from the NetCDF file (err: $(cat err.txt))" '[ $st -eq 0 ]'
cat g/forecast_20001227T06_sfc.grib2 g/forecast_20001227T06_pl.grib2 > all.grib2
F --init all.grib2 --time 2000-12-27T12:00 --steps 1 --output r3.nc --grib g3 --grib-packing ccsds --grib-bits 12; st=$?
ok "round trip from GRIB at +6h (err: $(cat err.txt))" '[ $st -eq 0 ]'
# the two GRIB files as they are, comma-separated: the same forecast as from the joined file
F --init g/forecast_20001227T06_sfc.grib2,g/forecast_20001227T06_pl.grib2 --time 2000-12-27T12:00 \
    --steps 1 --output r4.nc; st=$?
F --init all.grib2 --time 2000-12-27T12:00 --steps 1 --output r5.nc; st5=$?
d4=$(ncdump -v z,t2m r4.nc 2>/dev/null | sed -n '/^ z =/,$p'); d5=$(ncdump -v z,t2m r5.nc 2>/dev/null | sed -n '/^ z =/,$p')
ok "--init SFC,PL: runs (err: $(cat err.txt)) and equals the joined file's forecast (${#d4} chars)" \
    '[ $st -eq 0 ] && [ $st5 -eq 0 ] && [ ${#d4} -gt 1000 ] && [ "$d4" = "$d5" ]'
F --init g/forecast_20001227T06_pl.grib2 --time 2000-12-27T12:00 --steps 1 --output r6.nc; st=$?
ok "--init PL alone: exit 2 naming a surface channel the file lacks" \
    '[ $st -eq 2 ] && grep -q "no field for model channel .* (the file holds it at no time)" err.txt'
"$W" -q forecast --model $CK --init archive --time 2000-12-27T06:00 --steps 2 --output e.nc --grib ge \
    --members 4 --perturbation spherical-gaussian --seed 3 >out.txt 2>err.txt; st=$?
ok "ensemble (err: $(cat err.txt))" '[ $st -eq 0 ] && [ -f e_mean.nc ] && [ -f e_spread.nc ]'
ok "ensemble: the result lines name the mean and spread files ($(cat out.txt))" \
    'grep -q "^e_mean.nc: ensemble mean$" out.txt && grep -q "^e_spread.nc: ensemble spread (standard deviation)$" out.txt'
ok "ensemble: the result lines say the members and what the GRIB folder holds" \
    'grep -q "^e.nc: 10 variables x 3 times (lead 0..12h) x 4 members, " out.txt && grep -q "^ge: GRIB2 (surface and pressure-level files), 10 variables x 3 times (lead 0..12h) x 4 members$" out.txt'
"$W" -q export e_spread.nc --output es --no-coast --width 240 >/dev/null 2>err.txt; st=$?
ok "export of the spread file (err: $(cat err.txt))" '[ $st -eq 0 ]'
"$W" eval --forecast e_spread.nc --truth archive --output ev_spread >/dev/null 2>err.txt; st=$?
ok "eval of the spread file: exit 2 naming it, no scores (err: $(cat err.txt))" \
    '[ $st -eq 2 ] && grep -q "e_spread.nc is an ensemble spread file, not a forecast" err.txt && [ ! -e ev_spread/scores.csv ]'
# --precip on a model that predicts tp itself: refused before the rollout (it wrote two tp fields)
printf 'precip: {wind_checkpoint: ck/pretrain/last.ckpt, channel: tp, steps: 1, batch_size: 2}\n' >> train.yaml
"$W" -q train train.yaml --stage precip >/dev/null 2>err.txt; st=$?
F --init archive --time 2000-12-27T06:00 --steps 1 --precip ck/precip/last.ckpt --grib gp; st2=$?
ok "--precip with a model that predicts tp: exit 2 naming it, no GRIB (train $st; err: $(cat err.txt))" \
    '[ $st -eq 0 ] && [ $st2 -eq 2 ] && grep -q "the model already predicts tp (its output channel 10)" err.txt && [ ! -e gp ]'
F --init e_spread.nc --steps 1 --output fs.nc; st=$?
ok "forecast from the spread file: exit 2 naming it, no output (err: $(cat err.txt))" \
    '[ $st -eq 2 ] && grep -q "e_spread.nc: field 1 (z 500 hPa .*): an ensemble spread" err.txt && [ ! -e fs.nc ]'
F --init e_mean.nc --steps 1 --output fm.nc; st=$?
ok "forecast from the ensemble mean file (err: $(cat err.txt))" '[ $st -eq 0 ] && [ -f fm.nc ]'
"$W" -q eval --forecast m=e.nc,r3.nc --truth archive --output ev_mixed >/dev/null 2>err.txt; st=$?
ok "eval of an ensemble and a deterministic file as one model: exit 2 naming both (err: $(cat err.txt))" \
    '[ $st -eq 2 ] && grep -q "model .m.: r3.nc has no members (deterministic), e.nc 4: one model.s files must all be deterministic or all ensembles of one size" err.txt'
"$W" -q eval --forecast e_mean.nc --truth archive --output ev_mean >/dev/null 2>err.txt; st=$?
ok "eval of the ensemble mean file (err: $(cat err.txt))" '[ $st -eq 0 ] && [ -s ev_mean/scores.csv ]'
$PY "$S/tests/cli/forecast_products.py" "$T" > py.txt 2>&1; st=$?
ok "python checks: $(tail -1 py.txt) $(grep FAIL py.txt | head -5)" '[ $st -eq 0 ] && grep -q "^[0-9]* passed, 0 failed" py.txt'
if command -v cdo >/dev/null; then
    cdo -s sinfo f.nc > cdo.txt 2>&1
    ok "cdo sinfo reads the NetCDF: 10 variables, 5 times, 2 pressure axes" '[ $? -eq 0 ] && grep -q "points=2048 (64x32)" cdo.txt && grep -q "2000-12-28 06:00:00" cdo.txt && [ $(grep -c "pressure  *: levels=1" cdo.txt) -eq 2 ]'
    cdo -s sinfo e.nc > cdo.txt 2>&1
    ok "cdo sinfo reads the ensemble file" '[ $? -eq 0 ]'
else
    echo "note: cdo absent, its checks skipped"
fi
for p in gaussian bred; do
    F --init archive --time 2000-12-27T06:00 --steps 1 --output p_$p.nc --members 3 --perturbation $p; st=$?
    ok "--perturbation $p (err: $(cat err.txt))" '[ $st -eq 0 ] && [ -f p_${p}_spread.nc ]'
done
F --init f.nc --steps 1 --output r.nc --members 2 --perturbation gaussian --seed 5 && cp r_spread.nc s1.nc
F --init f.nc --steps 1 --output r.nc --members 2 --perturbation gaussian --seed 5
ok "same seed, same ensemble" 'cmp -s s1.nc r_spread.nc || [ "$(ncdump s1.nc | tail -n +3 | md5sum)" = "$(ncdump r_spread.nc | tail -n +3 | md5sum)" ]'
# Errors: one line, exit code, no output left
"$W" forecast --model $CK --init all.grib2 --time 2000-12-29T00:00 --steps 1 --output x.nc >/dev/null 2>err.txt
ok "time absent from the file: exit 2 naming channel and time" '[ $? -eq 2 ] && grep -q "no field for model channel .* at 2000-12-29T00:00" err.txt && [ ! -e x.nc ]'
"$W" forecast --model $CK --init g/forecast_20001227T06_pl.grib2 --steps 1 --output x.nc >/dev/null 2>err.txt
ok "partial analysis (no surface fields): exit 2 naming msl" '[ $? -eq 2 ] && grep -q "no field for model channel msl" err.txt && [ ! -e x.nc ]'
"$W" forecast --model $CK --init archive --time 2000-12-27T06:00 --lead 5h --output x.nc >/dev/null 2>err.txt
ok "--lead not a multiple of the step: exit 2" '[ $? -eq 2 ] && grep -q "not a multiple" err.txt && [ ! -e x.nc ]'
"$W" forecast --model $CK --init archive --time 2000-12-27T06:00 --steps 1 --grib x --grib-packing jpeg >/dev/null 2>err.txt
ok "bad packing: exit 2" '[ $? -eq 2 ] && grep -q "expected simple or ccsds" err.txt'
"$W" forecast --model $CK --init archive --steps 1 --output x.nc >/dev/null 2>err.txt
ok "archive without --time: exit 2" '[ $? -eq 2 ] && grep -q "time is required" err.txt'
"$W" forecast --model $CK --init archive --time 2000-12-27T06:00 --steps 1 --output x.grib >/dev/null 2>err.txt
ok "--output x.grib: exit 2 pointing to --grib DIR, nothing written" '[ $? -eq 2 ] && grep -q "^wxcast: error: --output x.grib: --output writes a NetCDF file; for GRIB2 give --grib DIR" err.txt && [ ! -e x.grib ]'
# WeatherBench2-layout files (time = the initial time, a prediction_timedelta axis): lead 0 is the
# initial state (the same forecast as from the analysis itself); without lead 0 there is none:
# exit 1, no output. An unknown extra axis whose slices share a time is ambiguous: exit 1.
"$W" -q dump archive --output d.nc --start 2000-12-27T06:00 --end 2000-12-27T06:00 >/dev/null 2>&1
$PY - <<'EOP'
import numpy as np, xarray as xr
ds = xr.open_dataset("d.nc")
def leads(h):
    return xr.DataArray(np.array(h, dtype="timedelta64[h]").astype("timedelta64[ns]"),
                        dims="prediction_timedelta", name="prediction_timedelta")
xr.concat([ds, ds + 1.0], dim=leads([12, 24])).to_netcdf("wb2.nc")
xr.concat([ds, ds + 1.0], dim=leads([0, 12])).to_netcdf("wb2_0.nc")
xr.concat([ds, ds + 1.0], dim="member_like").to_netcdf("extra.nc")
EOP
"$W" forecast --model $CK --init wb2.nc --steps 1 --output x.nc >/dev/null 2>err.txt; st=$?
ok "WB2 layout without lead 0: exit 1, no initial state ($(cat err.txt))" \
    '[ $st -eq 1 ] && [ $(wc -l < err.txt) -eq 1 ] && grep -q "wb2.nc: forecasts on a lead-time axis without lead 0" err.txt && [ ! -e x.nc ]'
"$W" -q forecast --model $CK --init wb2_0.nc --steps 2 --output w0.nc >/dev/null 2>err.txt; st=$?
"$W" -q forecast --model $CK --init d.nc --steps 2 --output w1.nc >/dev/null 2>&1
d=$($PY -c "
import xarray as xr, numpy as np
a, b = xr.open_dataset('w0.nc'), xr.open_dataset('w1.nc')
print(max(float(np.abs(a[v] - b[v]).max()) for v in a.data_vars))" 2>&1)
ok "WB2 layout with lead 0: starts from lead 0, the analysis's forecast exactly (max diff $d; $(cat err.txt))" \
    '[ $st -eq 0 ] && [ "$d" = "0.0" ]'
"$W" forecast --model $CK --init extra.nc --steps 1 --output x.nc >/dev/null 2>err.txt; st=$?
ok "an unknown extra axis: exit 1, two fields of one channel at one time ($(cat err.txt))" \
    '[ $st -eq 1 ] && [ $(wc -l < err.txt) -eq 1 ] && grep -q "extra.nc: two fields of model channel z500 at 2000-12-27T06:00" err.txt && [ ! -e x.nc ]'
# Units: an analysis with t2m in degC and z500 as geopotential height in m starts the same forecast
# as the file in the catalogue's units (converted on read, one info line each); units wxcast does
# not know are read as they are, with a warning naming the variable.
$PY - <<'EOP'
import xarray as xr
ds = xr.open_dataset("d.nc")
ds["t2m"] = ds["t2m"] - 273.15
ds["t2m"].attrs["units"] = "degC"
ds["z500"] = ds["z500"] / 9.80665
ds["z500"].attrs["units"] = "m"
ds.to_netcdf("units.nc")
ds = xr.open_dataset("d.nc")
ds["msl"].attrs["units"] = "furlongs"
ds.to_netcdf("odd.nc")
ds = xr.open_dataset("d.nc")
ds["t2m"].attrs["units"] = "degC"   # Kelvin values labelled degC: 273.15 K too warm once converted
ds.to_netcdf("mislabel.nc")
EOP
"$W" forecast --model $CK --init d.nc --steps 2 --output u0.nc >/dev/null 2>/dev/null
"$W" forecast --model $CK --init units.nc --steps 2 --output u1.nc >/dev/null 2>err.txt; st=$?
d=$($PY -c "
import xarray as xr, numpy as np
a, b = xr.open_dataset('u0.nc'), xr.open_dataset('u1.nc')
print(max(float(np.abs(a[v] - b[v]).max() / np.abs(a[v]).max()) for v in ('t2m', 'z', 'msl')))" 2>&1)
ok "degC and gpm read as K and m2 s-2: the same forecast within 1e-6 (rel. diff $d; $(head -c 120 err.txt))" \
    '[ $st -eq 0 ] && awk -v d="$d" "BEGIN{exit !(d+0 < 1e-6)}" && grep -q "variable .t2m.: units .degC. converted to 2t.s .K." err.txt && grep -q "variable .z500.: units .m. converted to z.s" err.txt'
"$W" forecast --model $CK --init odd.nc --steps 1 --output u2.nc >/dev/null 2>err.txt; st=$?
ok "unknown units: refused (exit 1) naming the field and the units ($(head -c 160 err.txt))" \
    '[ $st -eq 1 ] && grep -q "error: odd.nc: field .* (msl .*): units .furlongs. are not msl.s .Pa." err.txt && [ ! -e u2.nc ]'
"$W" forecast --model $CK --init mislabel.nc --steps 1 --output u3.nc >/dev/null 2>err.txt; st=$?
ok "Kelvin labelled degC: implausible temperatures refused ($(head -c 200 err.txt))" \
    '[ $st -eq 1 ] && grep -q "error: mislabel.nc: field .* (t2m .*): values .* K are not plausible for 2t" err.txt && [ ! -e u3.nc ]'
# the range check is for inputs: a broken model's forecast (t2m 400 K too warm) is still drawn
$PY -c "
import xarray as xr
ds = xr.open_dataset('u0.nc'); ds['t2m'] = ds['t2m'] + 400; ds.to_netcdf('blown.nc')"
"$W" -q export blown.nc --output exblown --no-coast --width 240 >/dev/null 2>err.txt; st=$?
ok "export of a forecast with implausible values works (exit $st: $(head -c 160 err.txt))" '[ $st -eq 0 ] && [ -n "$(find exblown -name "2t_*.png")" ]'
# An analysis whose tp states no period and holds one time (read as CDS hourly sums) for a model trained on 6 h
# tp: refused with the periods named, not fed to the model as 6 h sums
$PY -c "
import xarray as xr
ds = xr.open_dataset('d.nc'); ds['tp'].attrs.pop('long_name', None)
ds.to_netcdf('cds.nc')"
"$W" forecast --model $CK --init cds.nc --steps 1 --output x.nc >/dev/null 2>err.txt; st=$?
ok "hourly tp for a 6 h tp model: exit 2 naming both periods ($(cat err.txt))" \
    '[ $st -eq 2 ] && grep -q "no field for model channel tp at 2000-12-27T06:00 (the file holds it as 1h sums; the model.s tp is 6h sums" err.txt && [ ! -e x.nc ]'
# An analysis on another grid: exit 2 naming the file and both grids, no output.
$PY -c "
import xarray as xr
xr.open_dataset('d.nc').isel(longitude=slice(0, None, 2)).to_netcdf('half.nc')"
"$W" forecast --model $CK --init half.nc --steps 1 --output x.nc >/dev/null 2>err.txt; st=$?
ok "an analysis on another grid: exit 2 naming the file and the grids ($(cat err.txt))" \
    '[ $st -eq 2 ] && [ $(wc -l < err.txt) -eq 1 ] && grep -q "^wxcast: error: --init half.nc: the data.s grid (.*) is not the model grid (" err.txt && [ ! -e x.nc ]'
# A 12 h model trained on the archive's 6 h tp predicts 6 h sums: its tp is labelled so in NetCDF
# (long_name) and GRIB (stepRange 6-12, not 0-12); the checkpoint stores the period.
sed -e 's#checkpoint_dir: ck#checkpoint_dir: ck12#' -e 's#^data: {#data: {time_step: 12h, #' \
    -e 's#steps: 3#steps: 1#' train.yaml > train12.yaml
"$W" -q train train12.yaml >/dev/null 2>err.txt
"$W" -q forecast --model ck12/pretrain/last.ckpt --init archive --time 2000-12-27T00:00 --lead 24h \
    --output t12.nc --grib g12 >/dev/null 2>>err.txt; st=$?
ln=$($PY -c "import netCDF4; print(netCDF4.Dataset('t12.nc')['tp'].long_name)" 2>&1)
sr=$(grib_get -w shortName=tp -p stepRange g12/*_sfc.grib2 2>&1 | tr '\n' ' ')
ok "12 h model: tp is a 6 h sum in NetCDF ($ln) and GRIB (stepRange $sr; $(head -c 200 err.txt))" \
    '[ $st -eq 0 ] && [[ "$ln" == *"accumulated over the 6h ending at time"* ]] && [ "$sr" = "6-12 18-24 " ] && grep -q "name: \"tp\".*accumulation_s: 21600" ck12/pretrain/last.ckpt'
# WeatherBench2's 24 h precipitation from the world's 6 h sums: `accumulate: 24h` sums the four
# 6 h fields ending at each day (it used to sum hourly fields only: "no source field")
cat > r24.yaml <<'Y'
sources: ["world/*.nc"]
variables: [{name: tp24, param: tp, accumulate: 24h}]
dates: {start: "2000-12-24T00:00", end: "2000-12-26T00:00", step: "24h"}
drop_south_pole: true
output: a24
Y
"$W" -q ingest r24.yaml >/dev/null 2>err.txt; st=$?
"$W" -q dump a24 --output d24.nc >/dev/null 2>&1
"$W" -q dump archive --output d6.nc --start 2000-12-23T06:00 --end 2000-12-26T00:00 >/dev/null 2>&1
d=$($PY -c "
import xarray as xr, numpy as np
a, b = xr.open_dataset('d24.nc'), xr.open_dataset('d6.nc')
s = b.tp.rolling(time=4).sum().sel(time=a.time)
print(float(np.abs(a.tp24 - s).max() / float(np.abs(s).max())), a.tp24.attrs.get('long_name', ''))" 2>&1)
ok "accumulate: 24h from 6 h sums: the 4-field sums (rel. diff, long_name: $d; $(head -c 160 err.txt))" \
    '[ $st -eq 0 ] && awk -v d="${d%% *}" "BEGIN{exit !(d+0 < 1e-6)}" && [[ "$d" == *"accumulated over the 1d ending at time"* ]]'
# An ensemble file at a time it lacks: the times it holds are counted once, not once per member
E5="$S/../shared/data/era5/era5-levels-members.grib"
"$W" forecast --model $CK --init "$E5" --time 2017-01-03T00:00 --steps 1 --output x.nc >/dev/null 2>err.txt; st=$?
ok "10-member ERA5 file at a missing time: 4 times, not 40 ($(cat err.txt))" \
    '[ $st -eq 2 ] && grep -q "no field for model channel z500 at 2017-01-03T00:00 (the file holds it at 4 times, 2017-01-01T00:00 .. 2017-01-02T12:00)" err.txt'
ls -A . g | grep -q "tmp" && { echo "FAIL: temporary left"; fail=$((fail+1)); }
checks_summary
