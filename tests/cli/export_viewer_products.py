#!/usr/bin/python3
"""More helpers of tests/cli/export_viewer.sh (Debian's /usr/bin/python3: numpy, netCDF4, PIL,
eccodes): exports of files other than the synthetic forecast.

  export_viewer_products.py check-regional GRIB DIR   the ERA5 UK extract (lon0 350: a regional
        grid west of 180°E) exported with --width 1440: every map pixel inside the box shows the
        documented temperature colour of the field (decoded here with eccodes, interpolated
        bilinearly here), pixels outside are grey
  export_viewer_products.py check-init DIR INIT LEADS   manifest init (or "null") and lead hours
  export_viewer_products.py make-spread OUT.nc   an ensemble spread file as another producer writes
        it (netCDF4-python): per-variable CF cell_methods "realization: standard_deviation" only
  export_viewer_products.py check-spread DIR   its export: spread scale, names, colours, no wind
Prints one line per check; exits 1 on failure."""
import json
import os
import sys

failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


# docs/products.md: ECMWF sh-all-fm48t56i4 colours evenly over -40..40 °C
TEMPERATURE = [0x000080, 0x0080ff, 0x00ffff, 0x80ff00, 0xffff00, 0xff8000, 0xff0000, 0xff00ff]
# docs/products.md: the spread scale, YlOrRd evenly over 0..max
YLORRD = [0xffffcc, 0xffeda0, 0xfed976, 0xfeb24c, 0xfd8d3c, 0xfc4e2a, 0xe31a1c, 0xb10026]


def ramp(hexes, lo, hi, v):
    """Colour of v on stops spread evenly over lo..hi, linear between them, clamped."""
    import numpy as np
    rgb = np.array([[(h >> 16) & 255, (h >> 8) & 255, h & 255] for h in hexes], float)
    t = np.clip((v - lo) / (hi - lo), 0, 1) * (len(hexes) - 1)
    k = np.minimum(np.floor(t).astype(int), len(hexes) - 2)
    f = (t - k)[..., None]
    return rgb[k] * (1 - f) + rgb[k + 1] * f


def manifest(d):
    return json.load(open(os.path.join(d, "manifest.json")))


def map_pixels(png, box):
    """RGB array of the map area and the lon/lat of every pixel centre (the map from -180)."""
    import numpy as np
    from PIL import Image
    x0, y0, w, h = box
    im = np.asarray(Image.open(png).convert("RGB"), dtype=float)[y0:y0 + h, x0:x0 + w]
    lon = -180 + (np.arange(w) + 0.5) * 360.0 / w
    lat = 90 - (np.arange(h) + 0.5) * 180.0 / h
    return im, np.meshgrid(lon, lat)


def check_regional(grib, d):
    import numpy as np
    import eccodes
    with open(grib, "rb") as f:
        g = eccodes.codes_grib_new_from_file(f)
        ni, nj = eccodes.codes_get(g, "Ni"), eccodes.codes_get(g, "Nj")
        la0 = eccodes.codes_get(g, "latitudeOfFirstGridPointInDegrees")
        lo0 = eccodes.codes_get(g, "longitudeOfFirstGridPointInDegrees")
        dx = eccodes.codes_get(g, "iDirectionIncrementInDegrees")
        dy = eccodes.codes_get(g, "jDirectionIncrementInDegrees")
        vals = eccodes.codes_get_values(g).reshape(nj, ni)
        eccodes.codes_release(g)
    lo0 = (lo0 + 180) % 360 - 180  # -10: the box spans Greenwich
    m = manifest(d)
    v = m["variables"][0]
    check(v["id"] == "2t" and (v["vmin"], v["vmax"], v["units"]) == (-40, 40, "°C"),
          "UK extract: 2t on the documented -40..40 °C scale")
    im, (LON, LAT) = map_pixels(os.path.join(d, v["files"][0]), v["image"]["map"])
    lon1, lat1 = lo0 + (ni - 1) * dx, la0 - (nj - 1) * dy
    inside = (LON >= lo0) & (LON <= lon1) & (LAT <= la0) & (LAT >= lat1)
    fi, fj = (LON[inside] - lo0) / dx, (la0 - LAT[inside]) / dy
    i0, j0 = np.minimum(fi.astype(int), ni - 2), np.minimum(fj.astype(int), nj - 2)
    ti, tj = fi - i0, fj - j0
    val = ((1 - tj) * ((1 - ti) * vals[j0, i0] + ti * vals[j0, i0 + 1]) +
           tj * ((1 - ti) * vals[j0 + 1, i0] + ti * vals[j0 + 1, i0 + 1]))
    want = ramp(TEMPERATURE, -40, 40, val - 273.15)
    err = np.abs(im[inside] - want).max(axis=1)
    n = int(inside.sum())
    check(n == (lon1 - lo0) * 4 * (la0 - lat1) * 4 and (err <= 2).all(),
          "UK extract (lon0 %g): %d map pixels in the box %g..%g E %g..%g N, %d off the field's "
          "colour by more than 2 (max %g)" % (lo0 % 360, n, lo0, lon1, lat1, la0,
                                              int((err > 2).sum()), err.max()))
    far = (np.abs(LON - 40) < 5) & (np.abs(LAT - 54) < 2)  # east of the box: no data there
    check((im[far] == 160).all(), "outside the box grey")


def check_init(d, init, leads):
    m = manifest(d)
    want = None if init == "null" else init
    got = [l["lead_h"] for l in m["leads"]]
    check(m["init"] == want and got == [float(x) for x in leads.split(",")],
          "%s: init %s (want %s), leads %s (want %s)" % (d, m["init"], want, got, leads))


def make_spread(path):
    import numpy as np
    import netCDF4
    nlat, nlon, init = 91, 180, 1704067200
    ds = netCDF4.Dataset(path, "w", format="NETCDF4")
    ds.Conventions = "CF-1.8"
    for n, size in [("time", None), ("level", 1), ("latitude", nlat), ("longitude", nlon)]:
        ds.createDimension(n, size)
    t = ds.createVariable("time", "i8", ("time",))
    t.units, t.standard_name = "seconds since 1970-01-01", "time"
    lev = ds.createVariable("level", "f8", ("level",))
    lev.units = "hPa"
    la = ds.createVariable("latitude", "f8", ("latitude",))
    la.units, la.standard_name = "degrees_north", "latitude"
    lo = ds.createVariable("longitude", "f8", ("longitude",))
    lo.units, lo.standard_name = "degrees_east", "longitude"
    la[:], lo[:], lev[:] = np.linspace(90, -90, nlat), np.arange(nlon) * 2.0, [850]
    rt = ds.createVariable("forecast_reference_time", "i8", ())
    rt.units, rt.standard_name = "seconds since 1970-01-01", "forecast_reference_time"
    rt.assignValue(init)

    def var(name, units, std, long, dims):
        v = ds.createVariable(name, "f4", dims)
        v.units, v.standard_name = units, std
        v.long_name = "ensemble standard deviation of " + long
        v.cell_methods = "realization: standard_deviation"
        return v

    tv = var("t", "K", "air_temperature", "temperature", ("time", "level", "latitude", "longitude"))
    t2 = var("t2m", "K", "air_temperature", "2 metre temperature", ("time", "latitude", "longitude"))
    u = var("u10", "m s-1", "eastward_wind", "10 metre U wind", ("time", "latitude", "longitude"))
    v = var("v10", "m s-1", "northward_wind", "10 metre V wind", ("time", "latitude", "longitude"))
    for k in range(3):  # leads 0, 6, 12 h
        t[k] = init + 6 * 3600 * k
        tv[k, 0] = np.full((nlat, nlon), 0.5 + 0.1 * k, "f4")  # uniform: one expected colour
        t2[k] = np.full((nlat, nlon), 0.3 + 0.2 * k, "f4")
        u[k], v[k] = np.full((nlat, nlon), 0.375, "f4"), np.full((nlat, nlon), 0.5, "f4")
    ds.close()


def check_spread(d):
    import numpy as np
    m = manifest(d)
    byid = {v["id"]: v for v in m["variables"]}
    check(m["title"] == "wxcast ensemble spread" and m["wind"] == [],
          "spread export: title '%s', no wind layers (%d)" % (m["title"], len(m["wind"])))
    check(sorted(byid) == ["10ws", "2t", "t850"], "variables %s" % sorted(byid))
    t = byid["t850"]
    # 0.5..0.7 K over the leads: 0..max on a 0.1 step, in K, no offset
    check((t["vmin"], t["units"], t["offset"]) == (0, "K", 0) and abs(t["vmax"] - 0.7) < 1e-9,
          "t850 spread scale %g..%g %s offset %g (want 0..0.7 K, offset 0)" %
          (t["vmin"], t["vmax"], t["units"], t["offset"]))
    check(t["name"].startswith("Ensemble spread of temperature at 850 hPa"), "name '%s'" % t["name"])
    t2 = byid["2t"]
    check((t2["vmin"], t2["units"]) == (0, "K") and abs(t2["vmax"] - 0.7) < 1e-9,
          "2t spread 0..%g %s, not -273 °C" % (t2["vmax"], t2["units"]))
    w = byid["10ws"]
    check(w["name"] == "Ensemble spread of the 10 m wind vector" and abs(w["vmax"] - 0.7) < 1e-9,
          "10ws: '%s', 0..%g m/s (hypot of 0.375 and 0.5 is 0.625: 0..0.7)" % (w["name"], w["vmax"]))
    im, _ = map_pixels(os.path.join(d, t["files"][0]), t["image"]["map"])
    want = ramp(YLORRD, 0, 0.7, 0.5)  # 5/7 of the way: stop 5, #fc4e2a
    err = np.abs(im.reshape(-1, 3) - want).max(axis=1)
    check((err <= 2).mean() > 0.99, "t850 lead 0 (0.5 K everywhere) drawn #fc4e2a: %.4f of the map "
          "within 2" % (err <= 2).mean())


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "check-regional":
        check_regional(sys.argv[2], sys.argv[3])
    elif cmd == "check-init":
        check_init(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "make-spread":
        make_spread(sys.argv[2])
    elif cmd == "check-spread":
        check_spread(sys.argv[2])
    else:
        sys.exit("unknown command " + cmd)
    sys.exit(1 if failures else 0)
