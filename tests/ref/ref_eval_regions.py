#!/usr/bin/python3
"""Independent reference of WeatherBench2's regional scores for tests/unit/test_eval_regions.c.

Follows WB2's definitions with xarray, as WB2 computes them (google-research/weatherbench2:
scripts/evaluate.py `predefined_regions` / `land_regions`, weatherbench2/regions.py SliceRegion,
LandRegion, CombinedRegion, weatherbench2/metrics.py `get_lat_weights`, `_spatial_average`, MSE,
Bias, MAE, ACC; RMSE = sqrt of the time-mean MSE): the forecast is read from its NetCDF file with
xarray, the truth and climatology from raw float32 dumps of the test's own generators.

Usage: ref_eval_regions.py DIR FORECAST.nc[,...] NCHAN
  DIR/truth.f32  [count, NCHAN, nlat, nlon] archive records (rows north->south as in the archive)
  DIR/clim.f32   [count, NCHAN, nlat, nlon] climatology at each record's valid time
  DIR/meta.txt   "start_iso step_s count nlat nlon lat0 dlat lon0 dlon lsm_channel"
Writes DIR/ref.csv: region,model,variable,lead_hours,rmse,bias,mae,acc ("persistence" rows too).
"""
import sys

import numpy as np
import xarray as xr

# WB2 scripts/evaluate.py, main(): the predefined regions (lat slices, lon slices) and the land
# regions (those slices times the land-sea mask).
NONE = None
REGIONS = {
    "global": ([slice(NONE, NONE)], [slice(NONE, NONE)], False),
    "tropics": ([slice(-20, 20)], [slice(NONE, NONE)], False),
    "extra-tropics": ([slice(NONE, -20), slice(20, NONE)], [slice(NONE, NONE)], False),
    "northern-hemisphere": ([slice(20, NONE)], [slice(NONE, NONE)], False),
    "southern-hemisphere": ([slice(NONE, -20)], [slice(NONE, NONE)], False),
    "europe": ([slice(35, 75)], [slice(360 - 12.5, NONE), slice(0, 42.5)], False),
    "north-america": ([slice(25, 60)], [slice(360 - 120, 360 - 75)], False),
    "north-atlantic": ([slice(25, 65)], [slice(360 - 70, 360 - 10)], False),
    "north-pacific": ([slice(25, 60)], [slice(145, 360 - 130)], False),
    "east-asia": ([slice(25, 60)], [slice(102.5, 150)], False),
    "ausnz": ([slice(-45, -12.5)], [slice(120, 175)], False),
    "arctic": ([slice(60, 90)], [slice(NONE, NONE)], False),
    "antarctic": ([slice(-90, -60)], [slice(NONE, NONE)], False),
    "global_land": ([slice(NONE, NONE)], [slice(NONE, NONE)], True),
    "extra-tropics_land": ([slice(NONE, -20), slice(20, NONE)], [slice(NONE, NONE)], True),
    "tropics_land": ([slice(-20, 20)], [slice(NONE, NONE)], True),
}


def lat_weights(lat_deg):
    """Cell areas between the midpoints of increasing latitudes, +-90 at the ends, mean 1."""
    phi = np.deg2rad(lat_deg)
    bounds = np.concatenate([[-np.pi / 2], (phi[:-1] + phi[1:]) / 2, [np.pi / 2]])
    w = np.sin(bounds[1:]) - np.sin(bounds[:-1])
    return w / w.mean()


def spatial_mean(da, region, lsm):
    """WB2's region-restricted area-weighted mean over latitude and longitude, per case."""
    lats, lons, land = REGIONS[region]
    w = xr.DataArray(lat_weights(da.latitude.values), dims=["latitude"],
                     coords={"latitude": da.latitude})
    sel_lat = xr.concat([da.latitude.sel(latitude=s) for s in lats], dim="latitude")
    sel_lon = xr.concat([da.longitude.sel(longitude=s) for s in lons], dim="longitude")
    da = da.sel(latitude=sel_lat, longitude=sel_lon)
    w = w.sel(latitude=sel_lat)
    if land:
        w = w * lsm.sel(latitude=sel_lat, longitude=sel_lon)
        da = da.where(w > 0, 0)
    if da.latitude.size == 0 or da.longitude.size == 0 or float(w.sum()) == 0:
        return np.full(da.shape[0], np.nan)
    return da.weighted(w).mean(["latitude", "longitude"]).values  # [case]


def main():
    d, files, nch = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
    start, step, count, nlat, nlon, lat0, dlat, lon0, dlon, lsm_c = open(d + "/meta.txt").read().split()
    step, count, nlat, nlon, lsm_c = int(step), int(count), int(nlat), int(nlon), int(lsm_c)
    lat = float(lat0) - np.arange(nlat) * float(dlat)
    lon = float(lon0) + np.arange(nlon) * float(dlon)
    shape = (count, nch, nlat, nlon)
    truth = np.fromfile(d + "/truth.f32", dtype="<f4").reshape(shape).astype(np.float64)
    clim = np.fromfile(d + "/clim.f32", dtype="<f4").reshape(shape).astype(np.float64)

    def grid(a):  # archive rows north->south -> WB2's increasing latitude
        return xr.DataArray(a, dims=["latitude", "longitude"],
                            coords={"latitude": lat, "longitude": lon}).sortby("latitude")

    lsm = grid(truth[0, lsm_c])
    t0 = np.datetime64(start)
    # every (model, variable, lead, initial time): forecast, truth, climatology
    keys, fs, os_, cs = [], [], [], []
    for path in files:
        ds = xr.open_dataset(path)
        tname = "valid_time" if "valid_time" in ds.coords else "time"
        times = ds[tname].values
        init = times.min()
        ti0 = int((init - t0) / np.timedelta64(step, "s"))
        for var, chan in (("t2m", 0), ("z", 1)):
            da = ds[var]
            if "pressure_level" in da.dims:
                da = da.sel(pressure_level=500)
            name = "t2m" if chan == 0 else "z500"
            for k, vt in enumerate(times):
                ti = int((vt - t0) / np.timedelta64(step, "s"))
                lead = float((vt - init) / np.timedelta64(1, "h"))
                f = da.isel({tname: k}).values.astype(np.float64)
                if f.shape != (nlat, nlon):
                    raise SystemExit("unexpected forecast shape %s" % (f.shape,))
                if da.latitude.values[0] < da.latitude.values[-1]:  # file rows south->north
                    f = f[::-1]
                for model, fc in (("m", f), ("persistence", truth[ti0, chan])):
                    keys.append((model, name, lead))
                    fs.append(fc), os_.append(truth[ti, chan]), cs.append(clim[ti, chan])
        ds.close()

    def stack(a):  # [case, lat, lon] with WB2's increasing latitude
        return xr.DataArray(np.array(a), dims=["case", "latitude", "longitude"],
                            coords={"latitude": lat, "longitude": lon}).sortby("latitude")

    F, O, C = stack(fs), stack(os_), stack(cs)
    fa, oa = F - C, O - C
    groups = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    with open(d + "/ref.csv", "w") as out:
        out.write("region,model,variable,lead_hours,rmse,bias,mae,acc\n")
        for region in REGIONS:
            mse = spatial_mean((F - O) ** 2, region, lsm)
            bias = spatial_mean(F - O, region, lsm)
            mae = spatial_mean(abs(F - O), region, lsm)
            with np.errstate(invalid="ignore", divide="ignore"):
                acc = spatial_mean(fa * oa, region, lsm) / np.sqrt(
                    spatial_mean(fa ** 2, region, lsm) * spatial_mean(oa ** 2, region, lsm))
            for (model, name, lead), idx in sorted(groups.items()):
                out.write("%s,%s,%s,%g,%.17g,%.17g,%.17g,%.17g\n" % (
                    region, model, name, lead, np.sqrt(np.mean(mse[idx])), np.mean(bias[idx]),
                    np.mean(mae[idx]), np.mean(acc[idx])))

if __name__ == "__main__":
    main()
