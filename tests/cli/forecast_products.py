"""Checks of wxcast forecast products with independent readers (netCDF4, xarray, cfgrib, eccodes).
Usage: forecast_products.py DIR (the files forecast_products.sh made). Prints failures, then
"N passed, N failed"; exit 1 on failure."""
import sys, numpy as np, netCDF4, xarray as xr, cfgrib, eccodes

d = sys.argv[1]
npass = nfail = 0
def ok(what, cond):
    global npass, nfail
    if cond: npass += 1
    else: nfail += 1; print("FAIL:", what)

init = np.datetime64("2000-12-27T06:00")
ds = xr.open_dataset(f"{d}/f.nc")
ok("time decodes to valid times init+6h*k", list(ds.time.values) == [init + np.timedelta64(6 * k, "h") for k in range(5)])
ok("forecast_period decodes to timedelta 0..24h", ds.forecast_period.dtype.kind == "m" and
   list(ds.forecast_period.values.astype("timedelta64[h]").astype(int)) == [0, 6, 12, 18, 24])
ok("forecast_reference_time scalar = init", ds.forecast_reference_time.values == init)
ok("latitude north->south from 90", ds.latitude.values[0] == 90 and np.all(np.diff(ds.latitude.values) < 0) and ds.latitude.units == "degrees_north")
ok("longitude 0..354.375", ds.longitude.values[0] == 0 and ds.longitude.values[-1] == 354.375)
ok("z(time, level, latitude, longitude) on level [500]", ds.z.dims == ("time", "level", "latitude", "longitude") and list(ds.level.values) == [500])
ok("u and v share z's level axis; t on its own [850]", ds.u.dims == ds.z.dims and ds.t.dims[1] == "level_2" and list(ds.level_2.values) == [850])
ok("units/standard_name", ds.z.units == "m2 s-2" and ds.z.standard_name == "geopotential" and ds.t2m.units == "K" and ds.tp.units == "m")
# CF standard names (the CF standard-name table: canonical units kg m-2 for the water-vapour
# column, m for the lwe_ thickness of precipitation)
ok(f"tcwv: atmosphere_mass_content_of_water_vapor in kg m-2 (got {ds.tcwv.attrs.get('standard_name')})",
   ds.tcwv.standard_name == "atmosphere_mass_content_of_water_vapor" and ds.tcwv.units == "kg m-2")
ok(f"tp: lwe_thickness_of_precipitation_amount in m, cell_methods 'time: sum', 6h period in long_name (got {ds.tp.attrs})",
   ds.tp.attrs.get("standard_name") == "lwe_thickness_of_precipitation_amount" and ds.tp.attrs.get("cell_methods") == "time: sum"
   and "accumulated over the 6h ending at time" in ds.tp.long_name)
ok("instantaneous variables carry no cell_methods", all("cell_methods" not in ds[v].attrs for v in ds.data_vars if v != "tp"))
ok("every variable has units and a standard_name", all(ds[v].attrs.get("units") and ds[v].attrs.get("standard_name") for v in ds.data_vars))
# CF 5.7 auxiliary coordinates: xarray lists them as coordinates (they used to be data variables)
for n in ["f", "e", "e_mean", "e_spread"]:
    x = xr.open_dataset(f"{d}/{n}.nc")
    ok(f"{n}.nc: forecast_reference_time, forecast_period are coordinates (coords {sorted(x.coords)}, data {sorted(x.data_vars)[:4]}...)",
       {"forecast_reference_time", "forecast_period"} <= set(x.coords) and not {"forecast_reference_time", "forecast_period"} & set(x.data_vars))
ok("at most 4 dims everywhere", all(len(v.dims) <= 4 for v in ds.data_vars.values()))
nc = netCDF4.Dataset(f"{d}/f.nc")
ok("netCDF4: deflate on with --compress", nc["t2m"].filters()["zlib"])
ok("netCDF4: time unlimited", nc.dimensions["time"].isunlimited())
ok("netCDF4: coordinates attribute on every data variable", all(nc[v].__dict__.get("coordinates") == "forecast_reference_time forecast_period" for v in ds.data_vars))

# GRIB: keys through the eccodes API
def keys(path, names):
    out = []
    with open(path, "rb") as f:
        while True:
            h = eccodes.codes_grib_new_from_file(f)
            if h is None: break
            out.append({k: eccodes.codes_get(h, k) for k in names}); eccodes.codes_release(h)
    return out
stem = f"{d}/g/forecast_20001227T06"
sfc = keys(stem + "_sfc.grib2", ["shortName", "paramId", "typeOfLevel", "level", "step", "stepRange", "productDefinitionTemplateNumber", "packingType", "bitsPerValue", "dataType", "typeOfGeneratingProcess"])
ok("typeOfGeneratingProcess 2 (forecast) on every message", all(m["typeOfGeneratingProcess"] == 2 for m in sfc))
pl = keys(stem + "_pl.grib2", ["shortName", "paramId", "typeOfLevel", "level", "step"])
tp = [m for m in sfc if m["shortName"] == "tp"]
ok("tp: paramId 228, PDT 4.8, stepRange 0-6..18-24, no lead 0", [m["stepRange"] for m in tp] == ["0-6", "6-12", "12-18", "18-24"] and all(m["paramId"] == 228 and m["productDefinitionTemplateNumber"] == 8 for m in tp))
ok("2t paramId 167 heightAboveGround 2, steps 0..24", [m["step"] for m in sfc if m["paramId"] == 167] == [0, 6, 12, 18, 24] and all(m["typeOfLevel"] == "heightAboveGround" and m["level"] == 2 for m in sfc if m["paramId"] == 167))
ok("msl 151 meanSea; all fc, grid_simple 16 bits", all(m["typeOfLevel"] == "meanSea" for m in sfc if m["paramId"] == 151) and all(m["dataType"] == "fc" and m["packingType"] == "grid_simple" and m["bitsPerValue"] == 16 for m in sfc))
ok("pressure file: z 129 / t 130 / u 131 / v 132 isobaricInhPa", {(m["paramId"], m["level"]) for m in pl} == {(129, 500), (130, 850), (131, 500), (132, 500)} and all(m["typeOfLevel"] == "isobaricInhPa" for m in pl))
c = keys(f"{d}/g3/forecast_20001227T12_sfc.grib2", ["packingType", "bitsPerValue"])
ok("--grib-packing ccsds --grib-bits 12", all(m["packingType"] == "grid_ccsds" and m["bitsPerValue"] == 12 for m in c))

# cfgrib opens the surface file (2t at 2 m and 10u/10v at 10 m: two heightAboveGround levels)
# with the filter_by_keys of docs/products.md, one dataset per level, and nothing is dropped
SFC_FILTERS = {  # as in docs/products.md
    "2 m": {"typeOfLevel": "heightAboveGround", "level": 2},
    "10 m": {"typeOfLevel": "heightAboveGround", "level": 10},
    "msl": {"typeOfLevel": "meanSea"},
    "column": {"typeOfLevel": "entireAtmosphere"},
    "surface, accumulated": {"typeOfLevel": "surface", "stepType": "accum"},
}
def cf_open(path, fk):
    return xr.open_dataset(path, engine="cfgrib", backend_kwargs={"filter_by_keys": fk, "indexpath": ""})
sets = {k: cf_open(stem + "_sfc.grib2", fk) for k, fk in SFC_FILTERS.items()}
got = {k: sorted(x.data_vars) for k, x in sets.items()}
ok(f"cfgrib per documented filter: 2 m [t2m], 10 m [u10, v10], msl, tcwv, tp (got {got})",
   got == {"2 m": ["t2m"], "10 m": ["u10", "v10"], "msl": ["msl"], "column": ["tcwv"], "surface, accumulated": ["tp"]})
ok("cfgrib: heightAboveGround 2 / 10 coordinates", float(sets["2 m"].heightAboveGround) == 2 and float(sets["10 m"].heightAboveGround) == 10)
inst = xr.merge([sets["2 m"], sets["msl"]], compat="override")
acc = sets["surface, accumulated"]
ok("cfgrib: t2m, msl in K / Pa; u10 in m s**-1", inst.t2m.attrs["units"] == "K" and inst.msl.attrs["units"] == "Pa" and sets["10 m"].u10.attrs["units"] == "m s**-1")
ok("cfgrib: time = init, step 0..24h, valid_time", inst.time.values == init and list(inst.step.values.astype("timedelta64[h]").astype(int)) == [0, 6, 12, 18, 24] and inst.valid_time.values[1] == init + np.timedelta64(6, "h"))
ok("cfgrib: tp steps 6..24h in m", acc.tp.attrs["units"] == "m" and list(acc.step.values.astype("timedelta64[h]").astype(int)) == [6, 12, 18, 24])
ok("cfgrib latitude 90 first", inst.latitude.values[0] == 90)
tol = lambda a: (a.max() - a.min()) / 2**16 * 1.01
for name, x in [("t2m", inst), ("msl", inst), ("u10", sets["10 m"]), ("tcwv", sets["column"])]:
    a, b = x[name].values, ds[name].values
    ok(f"cfgrib {name} = NetCDF within 16-bit packing ({np.abs(a - b).max():.3g} <= {tol(b):.3g})", np.abs(a - b).max() <= tol(b))
pls = cfgrib.open_datasets(stem + "_pl.grib2", backend_kwargs={"indexpath": ""})
names = sorted(v for p in pls for v in p.data_vars)
ok(f"cfgrib pressure datasets hold z, t, u, v (got {names})", names == ["t", "u", "v", "z"])
zg = [p for p in pls if "z" in p][0]
ok("cfgrib z on isobaricInhPa 500 in m2 s-2", float(zg.isobaricInhPa) == 500 and zg.z.attrs["units"] == "m**2 s**-2")

# Round trips
r = xr.open_dataset(f"{d}/r.nc")
ok("NetCDF round trip: lead 0 and the whole forecast identical", all(np.array_equal(r[v].values, ds[v].values) for v in ds.data_vars))
r3 = xr.open_dataset(f"{d}/r3.nc")
for v in ["z", "t2m", "tp"]:
    a, b = r3[v].values[0], ds[v].values[1]
    ok(f"GRIB round trip at +6h: {v} within packing ({np.abs(a - b).max():.3g})", np.abs(a - b).max() <= tol(b))
ok("GRIB round trip: reference time is +6h", r3.forecast_reference_time.values == init + np.timedelta64(6, "h"))

# Ensemble
e, em, es = (xr.open_dataset(f"{d}/{n}.nc") for n in ["e", "e_mean", "e_spread"])
ok("realization 0..3, dims (realization, time, lat, lon)", list(e.realization.values) == [0, 1, 2, 3] and e.z500.dims == ("time", "realization", "latitude", "longitude"))
ok("member 0 is the control (lead 0 = the archive state)", np.array_equal(e.z500.values[0, 0], ds.z.values[0, 0]))
ok("members 1..3 perturbed at lead 0", all(not np.array_equal(e.z500.values[0, m], e.z500.values[0, 0]) for m in (1, 2, 3)))
ok("members differ from each other", not np.array_equal(e.t2m.values[2, 1], e.t2m.values[2, 2]))
# water cannot be negative, at lead 0 either (the perturbation is clamped where the analysis is ~0)
low = {v: float(e[v].values.min()) for v in ("tcwv", "tp")}
ok(f"tcwv and tp >= 0 in every member at every lead (minima {low})", min(low.values()) >= 0)
ok("mean file = member mean", np.allclose(em.t2m.values, e.t2m.values.mean(1), rtol=1e-6, atol=1e-3))
ok("spread file = std ddof 1", np.allclose(es.t2m.values, e.t2m.values.std(1, ddof=1), rtol=1e-4, atol=1e-3))
# The summaries say what they are (CF 7.3 cell_methods over the members' axis, a global marker)
# and keep the quantity's units and standard_name; the mean file does likewise with "mean"
for x, method, words in [(es, "standard_deviation", "standard deviation"), (em, "mean", "mean")]:
    cm = {v: x[v].attrs.get("cell_methods") for v in x.data_vars}
    ok(f"{method}: global ensemble_statistic, title (got {x.attrs.get('ensemble_statistic')}, {x.attrs.get('title')})",
       x.attrs.get("ensemble_statistic") == method and f"ensemble {'mean' if method == 'mean' else 'spread'}" in x.attrs["title"]
       and "4 members" in x.attrs["title"])
    ok(f"{method}: cell_methods per variable (got {cm})",
       all(c == (f"time: sum realization: {method}" if v == "tp" else f"realization: {method}") for v, c in cm.items()))
    ok(f"{method}: long_name 'ensemble {words} of ...', units and standard_name as the forecast's",
       all(x[v].long_name.startswith(f"ensemble {words} of ") and x[v].units == ds[v].units
           and x[v].standard_name == ds[v].standard_name for v in x.data_vars))
m = __import__("json").load(open(f"{d}/es/manifest.json"))
byid = {v["id"]: v for v in m["variables"]}
t850 = byid.get("t850", {})
ok(f"export of e_spread.nc: spread title, t850 in K on 0..max (got {m['title']}, {t850.get('units')} {t850.get('vmin')}..{t850.get('vmax')}, max {float(es.t.max()):.3g})",
   m["title"] == "wxcast ensemble spread" and m["wind"] == [] and t850.get("units") == "K" and t850.get("offset") == 0
   and t850.get("vmin") == 0 and float(es.t.max()) <= t850.get("vmax", -1) < 2 * float(es.t.max()) + 1e-3
   and t850.get("name", "").startswith("Ensemble spread of"))
ens = keys(f"{d}/ge/forecast_20001227T06_sfc.grib2", ["perturbationNumber", "numberOfForecastsInEnsemble", "productDefinitionTemplateNumber", "shortName", "dataType", "typeOfProcessedData", "typeOfEnsembleForecast", "typeOfGeneratingProcess"])
ok("GRIB ensemble: typeOfGeneratingProcess 4 (ensemble forecast)", all(m["typeOfGeneratingProcess"] == 4 for m in ens))
ok("GRIB ensemble: perturbationNumber 0..3, PDT 4.1 / 4.11 (tp)", sorted({m["perturbationNumber"] for m in ens}) == [0, 1, 2, 3] and all(m["numberOfForecastsInEnsemble"] == 4 and m["productDefinitionTemplateNumber"] == (11 if m["shortName"] == "tp" else 1) for m in ens))
# member 0, the unperturbed control, is a control forecast (ECMWF: code table 1.4 = 3, table 4.6 = 1)
bad = [m for m in ens if (m["dataType"], m["typeOfEnsembleForecast"]) != (("cf", 1) if m["perturbationNumber"] == 0 else ("pf", 3))]
ok(f"GRIB ensemble: member 0 dataType cf (typeOfEnsembleForecast 1), members 1..3 pf (3) (wrong: {bad[:2]})", not bad and len(ens) > 0)
for dt, want in [("cf", [0]), ("pf", [1, 2, 3])]:
    ge = cf_open(f"{d}/ge/forecast_20001227T06_sfc.grib2", {"dataType": dt, **SFC_FILTERS["10 m"]})
    ok(f"cfgrib dataType={dt}: number {want}, u10 and v10", "number" in ge.coords and list(np.atleast_1d(ge.number.values)) == want and sorted(ge.data_vars) == ["u10", "v10"])
print(f"{npass} passed, {nfail} failed")
sys.exit(1 if nfail else 0)
