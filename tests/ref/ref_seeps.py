#!/usr/bin/python3
"""Independent reference of WeatherBench2's SEEPS for tests/unit/test_eval_seeps.c.

Follows WB2's code path with xarray, as WB2 runs it (google-research/weatherbench2):
- climatology: scripts/compute_climatology.py SEEPSThreshold.compute (is_dry = x < dry;
  dry_fraction = is_dry.mean over (window, year); the wet threshold = the not-dry values'
  .weighted(window_weights).quantile(2/3)) inside weatherbench2/utils.py compute_hourly_stat /
  compute_rolling_stat (select_hour, years stacked by day of year, fillna from day 365, pad
  "wrap" by half a window, rolling(center=True).construct("window"), create_window_weights);
- score: weatherbench2/metrics.py SpatialSEEPS / SEEPS (categories dry x < dry, light
  dry < x < wet, heavy x >= wet, as int .where(x.notnull()); the contingency product dotted with
  the scoring matrix in p1 = dry_fraction.mean(("hour", "dayofyear")); masked outside
  0.1 < p1 < 0.85; the latitude-weighted mean with skipna=True, a region's slice first), then the
  mean over initial times.
The data stay float32 as ERA5's, so comparisons with the dry threshold are in float32 as WB2's;
the thresholds are cast to float32 as the climatology file stores them. The forecast is read from
its NetCDF file with xarray; the truth and the climatology-baseline forecast (wxcast's mean
climatology of tp at each record's valid time) from raw float32 dumps of the test.

Usage: ref_seeps.py DIR FORECAST.nc[,...]
  DIR/truth.f32      [count, nlat, nlon] tp records (rows north->south as in the archive)
  DIR/climmean.f32   [count, nlat, nlon] climatology baseline's tp at each record's valid time
  DIR/meta.txt       "start_iso step_s count nlat nlon lat0 dlat lon0 dlon dry_m window"
Writes DIR/ref_clim.f32 [366, nhours, 2, nlat, nlon] (dry fraction, wet threshold; archive rows)
and DIR/ref.csv: region,model,lead_hours,seeps (models "m" and "persistence", "climatology").
"""
import sys

import numpy as np
import xarray as xr

REGIONS = {"global": slice(None, None), "tropics": slice(-20, 20)}
MIN_P1, MAX_P1 = 0.1, 0.85


def lat_weights(lat_deg):
    """WB2 get_lat_weights: cell areas between midpoints of increasing latitudes, mean 1."""
    phi = np.deg2rad(lat_deg)
    bounds = np.concatenate([[-np.pi / 2], (phi[:-1] + phi[1:]) / 2, [np.pi / 2]])
    w = np.sin(bounds[1:]) - np.sin(bounds[:-1])
    return w / w.mean()


def window_weights(window_size):
    """WB2 utils.create_window_weights."""
    half = window_size // 2
    w = np.concatenate([np.linspace(0, 1, half + 1), np.linspace(1, 0, half + 1)[1:]])
    return xr.DataArray(w / w.mean(), dims=["window"])


def seeps_climatology(obs, dry_m, window):
    """WB2 compute_hourly_stat with SEEPSThreshold: [dayofyear, hour, lat, lon] twice."""
    half = window // 2
    ww = window_weights(window)
    hours = np.unique(obs.time.dt.hour.values)
    dfs, ths = [], []
    for hour in hours:
        ds = obs.isel(time=obs.time.dt.hour == hour)
        ds = ds.assign_coords(time=ds.time.astype("datetime64[D]"))
        stacked = xr.concat(
            [ds.sel(time=str(y)).assign_coords(time=lambda d: d.time.dt.dayofyear)
             .rename(time="dayofyear") for y in np.unique(ds.time.dt.year)], dim="year")
        stacked = stacked.fillna(stacked.sel(dayofyear=365))
        stacked = stacked.pad(pad_width={"dayofyear": half}, mode="wrap")
        stacked = stacked.rolling(dayofyear=window, center=True).construct("window")
        # WB2 removes the padded edges after the statistic; removing them first is the same
        # per-day result and half the work.
        stacked = stacked.isel(dayofyear=slice(half, -half))
        is_dry = stacked < dry_m
        dfs.append(is_dry.mean(dim=("window", "year")))
        not_dry = stacked.where(~is_dry)
        ths.append(not_dry.weighted(ww).quantile(2 / 3, dim=("window", "year")).drop_vars("quantile"))
    hours_da = xr.DataArray(hours, dims=["hour"])
    return (xr.concat(dfs, dim=hours_da).transpose("dayofyear", "hour", ...),
            xr.concat(ths, dim=hours_da).transpose("dayofyear", "hour", ...).astype(np.float32))


def seeps_cat(da, wet, dry_m):
    dry = da < dry_m
    light = np.logical_and(da > dry_m, da < wet)
    heavy = da >= wet
    result = xr.concat([dry, light, heavy],
                       dim=xr.DataArray(["dry", "light", "heavy"], dims=["seeps_cat"]))
    return result.astype("int").where(da.notnull())


def spatial_seeps(fc, tr, wet, p1, dry_m):
    """WB2 SpatialSEEPS.compute_chunk for one case."""
    out = (seeps_cat(fc, wet, dry_m).rename(seeps_cat="forecast_cat")
           * seeps_cat(tr, wet, dry_m).rename(seeps_cat="truth_cat"))
    z = xr.zeros_like(p1)
    rows = [[z, 1 / (1 - p1), 4 / (1 - p1)],
            [1 / p1, z, 3 / (1 - p1)],
            [1 / p1 + 3 / (2 + p1), 3 / (2 + p1), z]]
    matrix = 0.5 * xr.concat([xr.concat(r, dim=out.truth_cat) for r in rows], dim=out.forecast_cat)
    result = xr.dot(out, matrix, dims=("forecast_cat", "truth_cat"))
    result = result.where(p1 < MAX_P1, np.nan)
    return result.where(p1 > MIN_P1, np.nan)


def main():
    d, files = sys.argv[1], sys.argv[2].split(",")
    start, step, count, nlat, nlon, lat0, dlat, lon0, dlon, dry_m, window = \
        open(d + "/meta.txt").read().split()
    step, count, nlat, nlon, window = int(step), int(count), int(nlat), int(nlon), int(window)
    dry_m = float(dry_m)
    lat = float(lat0) - np.arange(nlat) * float(dlat)
    lon = float(lon0) + np.arange(nlon) * float(dlon)
    t0 = np.datetime64(start)
    times = t0 + np.arange(count) * np.timedelta64(step, "s")
    coords = {"time": times, "latitude": lat, "longitude": lon}
    truth = xr.DataArray(np.fromfile(d + "/truth.f32", dtype="<f4").reshape(count, nlat, nlon),
                         dims=["time", "latitude", "longitude"], coords=coords)
    climmean = xr.DataArray(np.fromfile(d + "/climmean.f32", dtype="<f4").reshape(count, nlat, nlon),
                            dims=["time", "latitude", "longitude"], coords=coords)
    dry_fraction, wet = seeps_climatology(truth, dry_m, window)
    np.stack([dry_fraction.values.astype(np.float32), wet.values], axis=2).astype("<f4").tofile(
        d + "/ref_clim.f32")
    p1 = dry_fraction.mean(("hour", "dayofyear"))

    cases = {}  # (model, lead) -> [per-region per-initial-time SEEPS]
    for path in files:
        ds = xr.open_dataset(path)
        tname = "valid_time" if "valid_time" in ds.coords else "time"
        vts = ds[tname].values
        init = vts.min()
        for k, vt in enumerate(vts):
            lead = float((vt - init) / np.timedelta64(1, "h"))
            f = ds["tp"].isel({tname: k})
            if f.latitude.values[0] < f.latitude.values[-1]:
                f = f.isel(latitude=slice(None, None, -1))
            f = xr.DataArray(f.values.astype(np.float32), dims=["latitude", "longitude"],
                             coords={"latitude": lat, "longitude": lon})
            tr = truth.sel(time=vt, drop=True)
            vtd = xr.DataArray(vt)  # the threshold at the valid time, for forecast and truth
            w_vt = wet.sel(dayofyear=int(vtd.dt.dayofyear), hour=int(vtd.dt.hour), drop=True)
            for model, fc in (("m", f), ("persistence", truth.sel(time=init, drop=True)),
                              ("climatology", climmean.sel(time=vt, drop=True))):
                sp = spatial_seeps(fc, tr, w_vt, p1, dry_m).sortby("latitude")
                wts = xr.DataArray(lat_weights(sp.latitude.values), dims=["latitude"],
                                   coords={"latitude": sp.latitude})
                for region, sl in REGIONS.items():
                    v = sp.sel(latitude=sl).weighted(wts.sel(latitude=sl)).mean(
                        ["latitude", "longitude"], skipna=True)
                    cases.setdefault((region, model, lead), []).append(float(v))
        ds.close()
    with open(d + "/ref.csv", "w") as out:
        out.write("region,model,lead_hours,seeps\n")
        for (region, model, lead), vals in sorted(cases.items()):
            out.write("%s,%s,%g,%.17g\n" % (region, model, lead, np.mean(vals)))


if __name__ == "__main__":
    main()
