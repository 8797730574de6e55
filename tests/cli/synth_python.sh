#!/usr/bin/env bash
# The synthetic world's files open in Debian's python3-xarray + cfgrib + netCDF4 with ERA5 names
# and units (skipped, exit 77, when those modules are missing). Usage: synth_python.sh WXCAST SRCDIR
set -euo pipefail
wxcast=$1; src=$2
py=/usr/bin/python3
$py -c "import xarray, cfgrib, netCDF4" 2>/dev/null || { echo "python3-xarray/cfgrib/netcdf4 missing: skipped"; exit 77; }
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
cat > "$dir/c.yaml" <<YAML
truncation: 21
nlat: 32
nlon: 64
start_year: 2001
days: 1
spin_up_days: 10
formats: [grib, netcdf]
YAML
"$wxcast" synth "$dir/c.yaml" --output "$dir/out" >/dev/null
$py - "$dir/out" <<'PY'
import sys, glob, numpy as np, xarray as xr, cfgrib, netCDF4
d = sys.argv[1]
fail = 0
def check(cond, msg):
    global fail
    print(("ok   " if cond else "FAIL ") + msg)
    fail |= not cond
want = {"z": "m2 s-2", "u": "m s-1", "v": "m s-1", "t": "K", "msl": "Pa", "u10": "m s-1",
        "v10": "m s-1", "t2m": "K", "tcwv": "kg m-2", "tp": "m"}
seen = {}
for f in sorted(glob.glob(d + "/synth_p*_200101.nc") + glob.glob(d + "/synth_sfc_200101.nc")):
    ds = xr.open_dataset(f)
    check(ds.latitude.values[0] == 90 and ds.latitude.values[-1] == -90, f"{f}: latitude 90..-90")
    check(ds.longitude.values[0] == 0 and ds.longitude.values[-1] < 360, f"{f}: longitude 0..<360")
    check(np.issubdtype(ds.valid_time.dtype, np.datetime64) and len(ds.valid_time) == 4,
          f"{f}: valid_time decodes to 4 datetimes")
    check(str(ds.valid_time.values[0])[:13] == "2001-01-01T00", f"{f}: first time {ds.valid_time.values[0]}")
    for v in ds.data_vars:
        seen[v] = ds[v].attrs.get("units")
    nc = netCDF4.Dataset(f)
    check(nc.Conventions == "CF-1.8", f"{f}: CF-1.8")
    nc.close()
for v, u in want.items():
    check(seen.get(v) == u, f"NetCDF {v} units {seen.get(v)} (want {u})")
# cfgrib: one dataset per level type, ERA5 GRIB names and units
gs = {}
for f in sorted(glob.glob(d + "/synth_*_200101.grib")):
    for ds in cfgrib.open_datasets(f, backend_kwargs={"indexpath": ""}):
        for v in ds.data_vars:
            gs[v] = (ds[v].attrs.get("GRIB_units"), ds[v].attrs.get("GRIB_typeOfLevel"), ds)
gwant = {"z": ("m**2 s**-2", "isobaricInhPa"), "u": ("m s**-1", "isobaricInhPa"),
         "t": ("K", "isobaricInhPa"), "msl": ("Pa", "meanSea"), "u10": ("m s**-1", "heightAboveGround"),
         "t2m": ("K", "heightAboveGround"), "tcwv": ("kg m**-2", "entireAtmosphere"), "tp": ("m", "surface")}
for v, (u, tol) in gwant.items():
    got = gs.get(v, (None, None, None))
    check(got[0] == u and got[1] == tol, f"GRIB {v}: units {got[0]} level {got[1]} (want {u}, {tol})")
if "tp" in gs:
    ds = gs["tp"][2]
    check(float(ds.tp.min()) >= 0, "GRIB tp >= 0")
    check(str(np.atleast_1d(ds.valid_time.values)[0])[:13] == "2001-01-01T00", "tp valid_time = end of accumulation")
z = xr.open_dataset(glob.glob(d + "/synth_pl500_200101.nc")[0]).z
zg = gs["z"][2].z
check(np.allclose(z.values.squeeze(), zg.values.squeeze(), atol=float(z.max() - z.min()) / 65535 * 1.01),
      "GRIB and NetCDF z agree within the packing step")
sys.exit(1 if fail else 0)
PY
