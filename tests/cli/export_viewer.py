#!/usr/bin/python3
"""Helpers of tests/cli/export_viewer.sh (Debian's /usr/bin/python3: numpy, netCDF4, PIL).

  export_viewer.py make-nc OUT.nc        a small CF forecast file in wxcast's product layout,
                                         written with netCDF4-python (an independent writer)
  export_viewer.py check-files NC DIR    the manifest, PNGs and wind layers against the file
  export_viewer.py browse DIR SHOTS      drives headless Chromium through chromedriver's W3C HTTP
                                         API (a tiny urllib client, no selenium) and checks the
                                         viewer; prints one line per check, exits 1 on failure
  export_viewer.py colours PNG x0 y0 x1 y1   number of distinct colours in a box of a PNG
"""
import base64
import io
import json
import math
import os
import socket
import subprocess
import sys
import time
import urllib.request


# ---- the forecast file --------------------------------------------------------------------------
def make_nc(path):
    import numpy as np
    import netCDF4

    nlat, nlon = 91, 180  # 2 degrees, both poles, longitudes 0..358
    lat = np.linspace(90, -90, nlat)
    lon = np.arange(nlon) * 2.0
    leads_h = [0, 6, 12, 18, 24]
    init = 1704067200  # 2024-01-01T00:00Z
    levels = [850.0, 500.0]
    LON, LAT = np.meshgrid(np.radians(lon), np.radians(lat))
    g = 9.80665

    def blobs(t_h, amp, drift_deg_per_day):
        """Moving highs and lows: a smooth, weather-like pattern that changes with lead."""
        out = np.zeros_like(LAT)
        rng = np.random.RandomState(7)
        for k in range(14):
            lat0 = np.radians(rng.uniform(-70, 70))
            lon0 = np.radians(rng.uniform(0, 360) + drift_deg_per_day * t_h / 24 * (1 + 0.3 * k % 3))
            s = np.radians(rng.uniform(8, 16))
            sign = 1 if k % 2 else -1
            d2 = (LAT - lat0) ** 2 + (np.angle(np.exp(1j * (LON - lon0))) * np.cos(lat0)) ** 2
            out += sign * amp * np.exp(-d2 / (2 * s * s))
        return out

    ds = netCDF4.Dataset(path + ".tmp", "w", format="NETCDF4")
    ds.Conventions = "CF-1.8"
    ds.createDimension("valid_time", None)
    ds.createDimension("pressure_level", len(levels))
    ds.createDimension("latitude", nlat)
    ds.createDimension("longitude", nlon)
    vt = ds.createVariable("valid_time", "i8", ("valid_time",))
    vt.units = "seconds since 1970-01-01"
    vt.calendar = "proleptic_gregorian"
    vt.standard_name = "time"
    rt = ds.createVariable("forecast_reference_time", "i8", ())
    rt.units = "seconds since 1970-01-01"
    rt.calendar = "proleptic_gregorian"
    rt.standard_name = "forecast_reference_time"
    fp = ds.createVariable("forecast_period", "i8", ("valid_time",))
    fp.units = "hours"
    fp.standard_name = "forecast_period"
    pl = ds.createVariable("pressure_level", "f8", ("pressure_level",))
    pl.units = "hPa"
    pl.positive = "down"
    la = ds.createVariable("latitude", "f8", ("latitude",))
    la.units = "degrees_north"
    la.standard_name = "latitude"
    lo = ds.createVariable("longitude", "f8", ("longitude",))
    lo.units = "degrees_east"
    lo.standard_name = "longitude"
    la[:], lo[:], pl[:] = lat, lon, levels
    rt.assignValue(init)

    def var(name, units, std, long, level):
        dims = ("valid_time", "pressure_level", "latitude", "longitude") if level else \
               ("valid_time", "latitude", "longitude")
        v = ds.createVariable(name, "f4", dims, fill_value=np.float32(np.nan))
        v.units, v.long_name = units, long
        if std:
            v.standard_name = std
        return v

    t2m = var("t2m", "K", "air_temperature", "2 metre temperature", False)
    msl = var("msl", "Pa", "air_pressure_at_mean_sea_level", "Mean sea level pressure", False)
    u10 = var("u10", "m s-1", "eastward_wind", "10 metre U wind component", False)
    v10 = var("v10", "m s-1", "northward_wind", "10 metre V wind component", False)
    tp = var("tp", "m", "", "Total precipitation", False)
    z = var("z", "m2 s-2", "geopotential", "Geopotential", True)
    t = var("t", "K", "air_temperature", "Temperature", True)
    u = var("u", "m s-1", "eastward_wind", "U component of wind", True)
    v = var("v", "m s-1", "northward_wind", "V component of wind", True)

    a = 6.371e6
    for k, h in enumerate(leads_h):
        vt[k] = init + h * 3600
        fp[k] = h
        wave = np.cos(4 * (LON - np.radians(30 * h / 24)))
        t2m[k] = (300 - 55 * np.sin(LAT) ** 2 + 6 * wave * np.cos(LAT) + blobs(h, 12, 40)).astype("f4")
        p = 101300 + 900 * np.cos(2 * LAT) * np.cos(6 * LAT) + blobs(h, 2200, 25)
        msl[k] = p.astype("f4")
        # Geostrophic winds of the pressure field (|f| held >= its value at 15 degrees), 0.7 of
        # it at 10 m for friction, plus trades and westerlies.
        f = 2 * 7.292e-5 * np.sin(LAT)
        f = np.where(np.abs(f) < 3.8e-5, np.where(LAT >= 0, 3.8e-5, -3.8e-5), f)
        dp_dy = -np.gradient(p, np.radians(2.0), axis=0) / a  # rows run north to south
        dp_dx = np.gradient(p, np.radians(2.0), axis=1) / (a * np.maximum(np.cos(LAT), 0.05))
        uu = -0.7 * dp_dy / (1.2 * f) + 6 * np.sin(3 * LAT) * np.cos(LAT)
        vv = 0.7 * dp_dx / (1.2 * f)
        u10[k] = np.clip(uu, -35, 35).astype("f4")
        v10[k] = np.clip(vv, -35, 35).astype("f4")
        tp[k] = (np.maximum(0, -blobs(h, 1, 25)) ** 2 * 0.03 * (h > 0)).astype("f4")
        for li, lev in enumerate(levels):
            base = 1460 if lev == 850 else 5640
            amp = 1 if lev == 850 else 2.2
            zz = base - (120 if lev == 850 else 420) * np.sin(LAT) ** 2 + amp * blobs(h, 60, 30) \
                + 40 * wave * np.cos(LAT)
            z[k, li] = (zz * g).astype("f4")
            t[k, li] = (t2m[k] - (12 if lev == 850 else 40)).astype("f4")
            u[k, li] = (u10[k] * (1.6 if lev == 850 else 2.4) + 10 * np.cos(LAT) ** 2).astype("f4")
            v[k, li] = (v10[k] * (1.6 if lev == 850 else 2.4)).astype("f4")
    ds.close()
    os.replace(path + ".tmp", path)


# ---- the exported files ---------------------------------------------------------------------------
def check_files(nc_path, outdir):
    """The manifest, PNGs and wind layers against the forecast file (read with netCDF4)."""
    import numpy as np
    import netCDF4
    from PIL import Image

    failures = []

    def check(ok, what):
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    m = json.load(open(os.path.join(outdir, "manifest.json")))
    js = open(os.path.join(outdir, "manifest.js")).read()
    body = js[js.index("=") + 1:].strip().rstrip(";")
    check(json.loads(body) == m, "manifest.js assigns the same object as manifest.json")
    ds = netCDF4.Dataset(nc_path)
    init = int(ds["forecast_reference_time"][...])
    valid = [int(x) for x in ds["valid_time"][:]]
    check(m["init_unix"] == init and m["init"] == "2024-01-01T00:00Z", "init time %s" % m["init"])
    check([l["valid_unix"] for l in m["leads"]] == valid and
          [l["lead_h"] for l in m["leads"]] == [(v - init) / 3600 for v in valid],
          "leads %s with valid times from the file" % [l["lead_h"] for l in m["leads"]])
    ids = [v["id"] for v in m["variables"]]
    want = ["2t", "msl", "10ws", "tp", "z850", "z500", "t850", "t500", "ws850", "ws500"]
    check(sorted(ids) == sorted(want), "variables %s (u/v pairs as wind speed)" % ids)
    # Documented ranges (docs/products.md, src/io/png_map.h).
    ranges = {"2t": (-40, 40, "°C"), "msl": (960, 1050, "hPa"), "tp": (0, 100, "mm"),
              "10ws": (0, 40, "m/s"), "ws850": (0, 80, "m/s"), "z500": (480, 600, "dam"),
              "z850": (110, 165, "dam"), "t500": (-70, 10, "°C")}
    byid = {v["id"]: v for v in m["variables"]}
    for k, (lo, hi, u) in ranges.items():
        v = byid[k]
        check((v["vmin"], v["vmax"], v["units"]) == (lo, hi, u),
              "%s range %g..%g %s" % (k, v["vmin"], v["vmax"], v["units"]))
    # an accumulation's title says over what (the CDS file's tp: hourly sums)
    check(byid["tp"]["name"] == "Total precipitation, 1h sum" and byid["2t"]["name"] == "2 metre temperature",
          "titles: tp %r, 2t %r" % (byid["tp"]["name"], byid["2t"]["name"]))
    npng = 0
    for v in m["variables"]:
        for f in v["files"]:
            im = Image.open(os.path.join(outdir, f))
            npng += im.size == (v["image"]["width"], v["image"]["height"])
    check(npng == len(ids) * len(valid), "%d PNGs of the manifest's size (want %d)" %
          (npng, len(ids) * len(valid)))
    check([w["id"] for w in m["wind"]] == ["10m", "850hPa", "500hPa"],
          "wind layers %s" % [w["id"] for w in m["wind"]])
    # grib2json layout and values: every point of u10/v10 (no thinning at 180 columns).
    lead = 2
    rec = json.load(open(os.path.join(outdir, m["wind"][0]["files"][lead])))
    h = rec[0]["header"]
    check(len(rec) == 2 and [r["header"]["parameterNumber"] for r in rec] == [2, 3] and
          h["parameterCategory"] == 2 and h["surface1Type"] == 103 and h["surface1Value"] == 10,
          "grib2json records: U (2,2) and V (2,3) at 10 m above ground")
    check((h["nx"], h["ny"], h["lo1"], h["la1"], h["dx"], h["dy"], h["forecastTime"]) ==
          (180, 91, 0, 90, 2, 2, 12) and h["refTime"] == "2024-01-01T00:00:00.000Z",
          "grib2json grid header nx=%d ny=%d lo1=%g la1=%g dx=%g dy=%g forecastTime=%d" %
          (h["nx"], h["ny"], h["lo1"], h["la1"], h["dx"], h["dy"], h["forecastTime"]))
    u = np.array(rec[0]["data"], dtype=float).reshape(91, 180)
    v = np.array(rec[1]["data"], dtype=float).reshape(91, 180)
    eu = np.abs(u - ds["u10"][lead]).max()
    ev = np.abs(v - ds["v10"][lead]).max()
    check(eu <= 0.005 + 1e-6 and ev <= 0.005 + 1e-6,
          "wind data equal u10/v10 at lead index %d (max diff %.4f, %.4f; rounding 0.005)" %
          (lead, eu, ev))
    wjs = open(os.path.join(outdir, m["wind"][0]["files"][lead][:-5] + ".js")).read()
    pre = '(window.WXCAST_WIND = window.WXCAST_WIND || {})["10m_f012"] = '
    check(wjs.startswith(pre) and json.loads(wjs[len(pre):].strip().rstrip(";")) == rec,
          "wind .js assigns the same records")
    return 1 if failures else 0


# ---- PNG inspection -----------------------------------------------------------------------------
def colours(png_bytes, box):
    from PIL import Image
    im = Image.open(io.BytesIO(png_bytes)).convert("RGB")
    return len(set(im.crop(box).getdata())), im.size


def diff_fraction(a_bytes, b_bytes, box):
    from PIL import Image, ImageChops
    a = Image.open(io.BytesIO(a_bytes)).convert("RGB").crop(box)
    b = Image.open(io.BytesIO(b_bytes)).convert("RGB").crop(box)
    d = ImageChops.difference(a, b).convert("L").point(lambda x: 255 if x > 24 else 0)
    return sum(1 for p in d.getdata() if p) / float(d.size[0] * d.size[1])


# ---- a tiny W3C WebDriver client -----------------------------------------------------------------
class Driver:
    def __init__(self, port):
        self.base = "http://127.0.0.1:%d" % port
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": os.environ.get("CHROMIUM", "/usr/bin/chromium"),
                                   "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                                            "--disable-dev-shm-usage", "--window-size=1280,900",
                                            "--hide-scrollbars", "--force-device-scale-factor=1"]},
            "goog:loggingPrefs": {"browser": "ALL"}}}}
        self.sid = self.call("POST", "/session", caps)["sessionId"]

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        if method == "POST" and data is None:
            data = b"{}"
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return json.loads(r.read().decode()).get("value")
        except urllib.error.HTTPError as e:
            raise RuntimeError("webdriver %s %s: %s" % (method, path, e.read().decode()[:400]))

    def s(self, method, path, body=None):
        return self.call(method, "/session/%s%s" % (self.sid, path), body)

    def go(self, url):
        self.s("POST", "/url", {"url": url})

    def js(self, script, *args):
        return self.s("POST", "/execute/sync", {"script": script, "args": list(args)})

    def find(self, css):
        v = self.s("POST", "/element", {"using": "css selector", "value": css})
        return list(v.values())[0]

    def keys(self, el, text):
        self.s("POST", "/element/%s/value" % el, {"text": text})

    def click(self, el):
        self.s("POST", "/element/%s/click" % el)

    def screenshot(self):
        return base64.b64decode(self.s("GET", "/screenshot"))

    def logs(self):
        return self.s("POST", "/se/log", {"type": "browser"}) or []

    def wait(self, script, what, timeout=15):
        t0 = time.time()
        while time.time() - t0 < timeout:
            if self.js(script):
                return
            time.sleep(0.1)
        raise RuntimeError("timed out waiting for " + what)

    def quit(self):
        try:
            self.call("DELETE", "/session/" + self.sid)
        except Exception:
            pass


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def browse(outdir, shots):
    failures = []

    def check(ok, what):
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    manifest = json.load(open(os.path.join(outdir, "manifest.json")))
    port = free_port()
    drv_log = open(os.path.join(shots, "chromedriver.log"), "w")
    proc = subprocess.Popen([os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"),
                             "--port=%d" % port], stdout=drv_log, stderr=subprocess.STDOUT)
    d = None
    server = None
    try:
        t0 = time.time()
        while True:
            try:
                urllib.request.urlopen("http://127.0.0.1:%d/status" % port, timeout=1)
                break
            except Exception:
                if time.time() - t0 > 15:
                    raise RuntimeError("chromedriver did not start")
                time.sleep(0.1)
        d = Driver(port)
        url = "file://" + os.path.abspath(os.path.join(outdir, "index.html"))
        v0 = manifest["variables"][0]
        # Particles off for the image comparison: they move between screenshots by design.
        d.go(url + "#var=" + v0["id"] + "&lead=0&wind=0")
        want = v0["files"][0]
        d.wait("return document.body.dataset.loaded === arguments[0] && "
               "document.getElementById('map').naturalWidth > 0".replace("arguments[0]",
                                                                         json.dumps(want)),
               "the first map")
        rect = d.js("var r = document.getElementById('map').getBoundingClientRect();"
                    "return [r.left, r.top, r.width, r.height];")
        im = v0["image"]
        s = rect[2] / im["width"]
        mx, my, mw, mh = im["map"]
        box = (int(rect[0] + (mx + 4) * s), int(rect[1] + (my + 4) * s),
               int(rect[0] + (mx + mw - 4) * s), int(rect[1] + (my + mh - 4) * s))
        before = d.screenshot()
        open(os.path.join(shots, "viewer_lead0.png"), "wb").write(before)
        n, size = colours(before, box)
        check(n > 200, "map area shows a field: %d distinct colours in %s (want > 200)" % (n, box))
        check(d.js("return document.getElementById('valid').textContent;").startswith("Valid Mon 01 Jan 2024 00:00"),
              "valid time shown for lead 0: %r" % d.js("return document.getElementById('valid').textContent;"))

        # Move the slider the way a user does: keys sent to the slider focus it, then the right
        # arrow twice (the range input's own key handling fires its input event).
        slider = d.find("#slider")
        d.keys(slider, "\ue014\ue014")
        k = d.js("return window.wxViewer.state.k;")
        check(k == 2, "slider moved to lead index 2 (got %r)" % k)
        want = v0["files"][2]
        d.wait("return document.body.dataset.loaded === %s" % json.dumps(want), "the lead-2 map")
        time.sleep(0.2)
        after = d.screenshot()
        open(os.path.join(shots, "viewer_lead2.png"), "wb").write(after)
        frac = diff_fraction(before, after, box)
        check(frac > 0.05, "map changed after moving the slider: %.1f%% of map pixels differ "
              "(want > 5%%)" % (100 * frac))
        lead_txt = d.js("return document.getElementById('lead').textContent;")
        check(lead_txt.startswith("Lead +%gh" % manifest["leads"][2]["lead_h"]),
              "lead label follows the slider: %r" % lead_txt)
        hash_ = d.js("return location.hash;")
        check("lead=%g" % manifest["leads"][2]["lead_h"] in hash_, "URL hash holds the lead: %r" % hash_)

        # Keyboard: ArrowDown picks the next variable, ArrowLeft steps back one lead.
        body = d.find("body")
        d.keys(body, "\ue015\ue012")
        st = d.js("return [window.wxViewer.state.v, window.wxViewer.state.k];")
        check(st[1] == 1 and st[0] != 0, "keys: variable changed and lead back to 1 (%r)" % st)

        # Wind particles: pick a variable with a wind layer, turn particles on, count drawn pixels.
        if manifest["wind"]:
            ws = [v for v in manifest["variables"] if v["id"] == "10ws"]
            target = ws[0]["id"] if ws else manifest["variables"][0]["id"]
            d.go(url + "#var=" + target + "&lead=0&wind=1")
            d.js("location.reload();")
            d.wait("return window.wxViewer && window.wxViewer.particles.field !== null", "wind data")
            time.sleep(1.0)
            painted = d.js("var c = document.getElementById('particle-canvas');"
                           "var d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
                           "var n = 0; for (var i = 3; i < d.length; i += 4) if (d[i] > 40) n++;"
                           "return [n, c.width * c.height];")
            check(painted[0] > 0.002 * painted[1], "wind particles drawn: %d of %d canvas pixels" %
                  (painted[0], painted[1]))
            open(os.path.join(shots, "viewer_particles.png"), "wb").write(d.screenshot())

        logs = d.logs()
        bad = [l for l in logs if l.get("level") in ("SEVERE", "ERROR")]
        check(not bad, "no console errors (%d log entries, %d severe: %s)" %
              (len(logs), len(bad), "; ".join(l.get("message", "")[:160] for l in bad)))

        # The same page from a static server: wind comes through fetch() of the .json there.
        port2 = free_port()
        server = subprocess.Popen([sys.executable, "-m", "http.server", str(port2), "--bind",
                                   "127.0.0.1", "--directory", outdir],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t0 = time.time()
        while True:
            try:
                urllib.request.urlopen("http://127.0.0.1:%d/manifest.js" % port2, timeout=1)
                break
            except Exception:
                if time.time() - t0 > 10:
                    raise RuntimeError("http.server did not start")
                time.sleep(0.1)
        d.go("http://127.0.0.1:%d/index.html#lead=%g" % (port2, manifest["leads"][-1]["lead_h"]))
        want = v0["files"][-1]
        d.wait("return document.body.dataset.loaded === %s" % json.dumps(want), "the map over http")
        if manifest["wind"]:
            d.wait("return window.wxViewer.particles.field !== null", "wind over http (fetch)")
        bad = [l for l in d.logs() if l.get("level") in ("SEVERE", "ERROR")]
        check(not bad, "over http: map and wind load, no console errors (%s)" %
              "; ".join(l.get("message", "")[:160] for l in bad))
    finally:
        if d:
            d.quit()
        proc.terminate()
        if server:
            server.terminate()
    return 1 if failures else 0


if __name__ == "__main__":
    if sys.argv[1] == "make-nc":
        make_nc(sys.argv[2])
    elif sys.argv[1] == "check-files":
        sys.exit(check_files(sys.argv[2], sys.argv[3]))
    elif sys.argv[1] == "browse":
        sys.exit(browse(sys.argv[2], sys.argv[3]))
    elif sys.argv[1] == "colours":
        box = tuple(int(x) for x in sys.argv[3:7])
        print(colours(open(sys.argv[2], "rb").read(), box)[0])
