#!/usr/bin/env bash
# Files in the layout of DeepMind's GraphCast datasets (and of WeatherBench2 exports), written by
# xarray as DeepMind writes them: long names (2m_temperature, geopotential,
# total_precipitation_6hr), a `batch` dimension, `time` as offsets (timedelta64: units "hours", no
# "since") dated by a `datetime` (batch, time) coordinate, lat/lon/level without CF attributes,
# latitudes ascending, statics on (lat, lon). Made here from the CF-layout fixture
# tests/ref/fixtures/gc_forecast_tp/init.nc (whose forecast test_weights_gc_forecast checks against
# DeepMind's code):
# - forecast --init of the DeepMind-layout file is bitwise the forecast from init.nc (every
#   channel, tp at lead 0 included: total_precipitation_6hr is read as tp over 6 h), also with
#   import-weights --data taking its statics (geopotential_at_surface, land_sea_mask) from it;
# - with two batch elements (other dates, other values), --time picks the second element's values:
#   bitwise the forecast from a CF file holding them; fields without the batch dimension dated by
#   a (batch, time) or a (time) datetime give the first forecast;
# - ingest reads it: `{param: tp, accumulate: 6h}` takes total_precipitation_6hr as it is (not a
#   sum of hourly fields), the archive's values equal the file's;
# - inspect lists tp over 6 h with the 4 distinct times of both elements, the statics untimed;
# - a --time the file does not hold: exit 2 listing the times it holds;
# - time offsets without a datetime coordinate: exit 1, one line naming the file and variable.
# Skipped (77) without xarray at /usr/bin/python3 (Debian python3-xarray, scripts/setup.sh).
# Usage: deepmind_layout.sh WXCAST SRCDIR
set -u
W="$1"
SRC="$2"
PY=/usr/bin/python3
FX="$SRC/tests/ref/fixtures/gc_forecast_tp"
T=$(mktemp -d /tmp/wx_cli_dm_layout.XXXXXX)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/checks.sh"
"$PY" -c "import xarray, netCDF4" 2>/dev/null || { echo "SKIP: no xarray/netCDF4 at $PY"; exit 77; }

"$PY" - "$FX" "$T" <<'EOF'
import sys
import numpy as np
import xarray as xr
fx, t = sys.argv[1], sys.argv[2]
cf = xr.open_dataset(fx + "/init.nc")
statics = xr.open_dataset(fx + "/statics.nc")
names = {"t2m": "2m_temperature", "msl": "mean_sea_level_pressure", "z": "geopotential",
         "tp": "total_precipitation_6hr"}
times = cf.time.values  # datetime64: 2020-03-20T00, T06
day = np.timedelta64(1, "D")
rng = np.random.default_rng(5)
# batch element 1: a day later, values perturbed (a CF file with them is the reference)
other = {k: v.values + rng.standard_normal(v.shape) * float(v.std()) * 0.1
         for k, v in cf.data_vars.items()}
other["tp"] = np.abs(other["tp"])
cf2 = cf.copy(deep=True)  # a shallow copy would share (and change) the values
for k in other:
    cf2[k].values[...] = other[k]
cf2 = cf2.assign_coords(time=times + day)
cf2.to_netcdf(t + "/cf_day2.nc")

def deepmind(batches, dates):
    data = {names[k]: (("batch",) + cf[k].dims, np.stack([b[k] for b in batches]))
            for k in cf.data_vars}
    ds = xr.Dataset(data, coords={"lat": cf.lat.values, "lon": cf.lon.values,
                                  "level": cf.level.values.astype(np.int64),
                                  "time": times - times[0],
                                  "datetime": (("batch", "time"), np.stack(dates))})
    for k in statics.data_vars:
        ds[k] = (("lat", "lon"), statics[k].values)
    return ds

base = {k: v.values for k, v in cf.data_vars.items()}
one = deepmind([base], [times])
assert "units" not in one.lat.attrs
one.to_netcdf(t + "/dm.nc")
deepmind([base, other], [times, times + day]).to_netcdf(t + "/dm_batch2.nc")
# no batch dimension on the fields, the dates on (batch, time) or on (time)
flat = one.isel(batch=0).drop_vars("datetime")
flat.assign_coords(datetime=(("batch", "time"), times[None])).to_netcdf(t + "/flat_b.nc")
flat.assign_coords(datetime=(("time",), times)).to_netcdf(t + "/flat_t.nc")
undated = one.drop_vars("datetime")
undated.to_netcdf(t + "/undated.nc")
EOF
st=$?
check "xarray writes the DeepMind-layout files (status $st)" $st
grep -q "datetime" <(ncdump -h "$T/dm.nc") && ncdump -h "$T/dm.nc" | grep -q 'time:units = "hours"'
check "the file has xarray's timedelta encoding and a datetime coordinate" $?

CK="$T/tp.ckpt"
run import-weights "$FX/model.npz" --config "$SRC/configs/model/graphcast_tiny_tp.yaml" \
    --data "$FX/data.yaml" --output "$CK"
check "import the GraphCast_small-style checkpoint (rc $rc: $err)" "$rc"
fc() { # CKPT INIT TIME OUT WHAT: a 2-step forecast that must succeed
    run forecast --model "$1" --init "$2" --time "$3" --steps 2 --threads 1 --output "$4"
    check "forecast from $5 (rc $rc: $err)" "$rc"
}
fc "$CK" "$FX/init.nc" 2020-03-20T06 "$T/ref.nc" "the CF init.nc"
fc "$CK" "$T/dm.nc" 2020-03-20T06 "$T/dm_out.nc" "the DeepMind-layout file"
fc "$CK" "$T/cf_day2.nc" 2020-03-21T06 "$T/ref2.nc" "the CF file of batch element 1"
fc "$CK" "$T/dm_batch2.nc" 2020-03-21T06 "$T/dm2_out.nc" "batch element 1 of a 2-element file"

same() { # A.nc B.nc: every variable bitwise equal (NaN where NaN), tp finite at lead 0
    "$PY" - "$1" "$2" <<'EOF'
import sys
import numpy as np
import netCDF4
a, b = netCDF4.Dataset(sys.argv[1]), netCDF4.Dataset(sys.argv[2])
assert set(a.variables) == set(b.variables), (set(a.variables), set(b.variables))
for k in ("t2m", "msl", "tp", "z"):
    x, y = a[k][:].filled(np.nan), b[k][:].filled(np.nan)
    assert x.shape == y.shape and x.shape[0] == 3, (k, x.shape, y.shape)
    assert np.array_equal(x, y, equal_nan=True), (k, np.nanmax(np.abs(x - y)))
assert np.isfinite(a["tp"][0]).all(), "tp at lead 0 read from total_precipitation_6hr"
EOF
}
same "$T/dm_out.nc" "$T/ref.nc"; check "DeepMind layout: the same forecast as from init.nc" $?
# the statics of --data taken from the dataset file itself, as a GraphCast user has them
sed -e "s|^statics: .*|statics: $T/dm.nc|" -e "s|: \(.*_by_level.nc\)|: $FX/\1|" \
    "$FX/data.yaml" >"$T/data_dm.yaml"
run import-weights "$FX/model.npz" --config "$SRC/configs/model/graphcast_tiny_tp.yaml" \
    --data "$T/data_dm.yaml" --output "$T/tp_dm.ckpt"
check "import with the statics from the DeepMind-layout file (rc $rc: $err)" "$rc"
fc "$T/tp_dm.ckpt" "$T/dm.nc" 2020-03-20T06 "$T/dm_out_s.nc" "the file, with its statics"
same "$T/dm_out_s.nc" "$T/ref.nc"; check "statics from the DeepMind file: the same forecast" $?
same "$T/dm2_out.nc" "$T/ref2.nc"; check "batch element 1 selected by its datetime" $?
for f in flat_b flat_t; do
    fc "$CK" "$T/$f.nc" 2020-03-20T06 "$T/${f}_out.nc" "$f.nc, fields without batch"
    same "$T/${f}_out.nc" "$T/ref.nc"; check "$f.nc: the same forecast as from init.nc" $?
done
# An ensemble of the model with target-only tp: tp, which no member starts from, is the analysis's
# in every member at lead 0 (it was perturbed: a lead-0 tp spread), and the inputs are perturbed
for p in gaussian bred; do
    run forecast --model "$CK" --init "$FX/init.nc" --time 2020-03-20T06 --steps 1 --threads 1 \
        --members 3 --perturbation $p --amplitude 0.5 --output "$T/ens_$p.nc"
    check "ensemble ($p) of the target-only tp model (rc $rc: $err)" "$rc"
    "$PY" - "$T/ens_$p.nc" "$T/ref.nc" <<'EOF'
import sys
import numpy as np
import netCDF4
e, r = netCDF4.Dataset(sys.argv[1]), netCDF4.Dataset(sys.argv[2])
tp, ref = e["tp"][0].filled(np.nan), r["tp"][0].filled(np.nan)   # (member, lat, lon) at lead 0
assert tp.shape[0] == 3, tp.shape
for m in range(3):
    assert np.array_equal(tp[m], ref, equal_nan=True), ("tp member", m, np.nanmax(np.abs(tp[m] - ref)))
t2m = e["t2m"][0].filled(np.nan)
assert np.nanmax(np.abs(t2m[1] - t2m[0])) > 0, "inputs perturbed"
EOF
    check "ensemble ($p): lead-0 tp unperturbed in every member, t2m perturbed" $?
done
# An analysis without tp (the model never reads it): lead-0 tp is all NaN, and export lists no map
# for it there (null), where it drew an empty map; the +6 h map is drawn
"$PY" -c "import xarray as xr; xr.open_dataset('$FX/init.nc').drop_vars('tp').to_netcdf('$T/notp.nc')"
run forecast --model "$CK" --init "$T/notp.nc" --time 2020-03-20T06 --steps 1 --threads 1 --output "$T/notp_out.nc"
check "forecast from an analysis without tp (rc $rc: $err)" "$rc"
run export "$T/notp_out.nc" --output "$T/notp_x" --no-coast --width 240
"$PY" - "$T/notp_x/manifest.json" <<'EOF'
import json, sys
v = {x["id"]: x for x in json.load(open(sys.argv[1]))["variables"]}
assert v["tp"]["files"][0] is None and v["tp"]["files"][1], v["tp"]["files"]
assert all(v["2t"]["files"]), v["2t"]["files"]
EOF
check "export: no lead-0 map of an all-NaN tp (rc $rc: $err)" $?
[ ! -e "$T/notp_x/maps/tp_f000.png" ]; check "export: no tp_f000.png file" $?
same "$T/dm2_out.nc" "$T/ref.nc" 2>/dev/null; st=$?
[ "$st" -ne 0 ]; check "batch element 1 differs from element 0 (the check can fail)" $?

# inspect lists what the reader sees: tp over 6 h, 4 distinct times over the two batch elements
run inspect "$T/dm_batch2.nc"
ok "inspect: tp over 6 h from total_precipitation_6hr, 4 times (rc $rc: $out)" \
    'echo "$out" | grep -E -q "^  tp +single +total_precipitation_6hr +4  2020-03-20T00:00 .. 2020-03-21T06:00 6h"'
ok "inspect: the statics without a time" 'echo "$out" | grep -E -q "^  lsm +static +land_sea_mask +0  -"'

# ingest: total_precipitation_6hr is tp accumulated over 6 h, taken as it is
cat >"$T/recipe.yaml" <<EOF
sources: ["$T/dm_batch2.nc"]
variables:
  - {name: z500, param: geopotential, level: 500}
  - {name: t2m, param: 2m_temperature}
  - {name: tp6, param: tp, accumulate: 6h}
  - {name: lsm, param: land_sea_mask}
dates: {start: "2020-03-21T00:00", end: "2020-03-21T06:00", step: "6h"}
output: $T/arch
EOF
run ingest "$T/recipe.yaml"
check "ingest the DeepMind-layout file (rc $rc: $err)" "$rc"
run dump "$T/arch" --output "$T/dump.nc"
check "dump the archive (rc $rc: $err)" "$rc"
"$PY" - "$T/dump.nc" "$T/cf_day2.nc" "$FX/statics.nc" <<'EOF'
import sys
import numpy as np
import netCDF4
d, c, s = (netCDF4.Dataset(p) for p in sys.argv[1:])
flip = lambda a: a[..., ::-1, :]  # the archive's rows run from the north pole
for k, ref in (("tp6", c["tp"][:]), ("t2m", c["t2m"][:]), ("z500", c["z"][:, 0])):
    x, y = d[k][:], flip(np.asarray(ref, np.float32))
    assert np.array_equal(x, y), (k, np.abs(x - y).max())
assert np.array_equal(d["lsm"][0], flip(np.asarray(s["land_sea_mask"][:], np.float32)))
EOF
check "archive values equal the file's (tp6 = total_precipitation_6hr, not an hourly sum)" $?

# a --time the file does not hold: exit 2, and the error lists the times it does hold
run forecast --model "$CK" --init "$T/dm.nc" --time 2020-03-21T06 --steps 1 --threads 1 --output "$T/x.nc"
usage_error "a --time the file does not hold" "dm.nc: no field for model channel t2m at 2020-03-21T00:00" \
    "(the file holds it at 2 times, 2020-03-20T00:00 .. 2020-03-20T06:00)"
run forecast --model "$CK" --init "$T/undated.nc" --time 2020-03-20T06 --steps 1 --threads 1 \
    --output "$T/x.nc"
fails 1 "time offsets without a datetime coordinate" "undated.nc" "2m_temperature" "offsets" \
    "datetime"
[ ! -e "$T/x.nc" ]; check "nothing written on error" $?
checks_summary
