"""Reference for a forecast from an imported DeepMind GraphCast checkpoint (`wxcast import-weights
FILE.npz --config ... --data DATA.yaml`, then `wxcast forecast`), made with DeepMind's own code.

The tiny GraphCast of configs/model/graphcast_tiny.yaml (22.5 degrees, M0..M1, latent 16) with
random parameters, wrapped as DeepMind runs a published checkpoint: graphcast.GraphCast inside
normalization.InputsAndResiduals(predictor, stddev_by_level, mean_by_level,
diffs_stddev_by_level). One step from a random physical initial state (2 times, 6 h apart),
physical forcings from DeepMind's formulas (toa_incident_solar_radiation: solar_radiation.py;
day_progress_sin/cos: data_utils.py's get_day_progress, featurised as sin/cos of 2 pi x) and a
random land_sea_mask. Writes, in tests/ref/fixtures/gc_forecast/:

  model.npz                     the checkpoint (graphcast.checkpoint.dump, float32 parameters)
  mean_by_level.nc, stddev_by_level.nc, diffs_stddev_by_level.nc
                                statistics in DeepMind's layout: one variable per name, a scalar
                                or a vector along `level` (here 3 levels, 300/500/850 hPa, of
                                which the model uses 500 and 850), positive random std
  statics.nc                    land_sea_mask (lat, lon), latitudes ascending as DeepMind's data
  init.nc                       the initial state: t2m, msl (time, lat, lon), z (time, level,
                                lat, lon) at 2020-03-20T00 and T06 (CF attributes, lat ascending)
  data.yaml                     the --data file naming them
  ../gc_forecast.wxfx           y (Cout, 9, 16): DeepMind's physical prediction at T12 in
                                wxcast's channel order (t2m, msl, z500, z850), rows from the north
                                pole; m2g_senders (Ng, 3) DeepMind's mesh->grid triangle vertices

Not run in CI (JAX, Haiku, DeepMind's code): the fixtures are committed. To regenerate, with the
environment of tests/ref/ref_graphcast_npz.py plus DeepMind's normalization.py, xarray_tree.py,
predictor_base.py and solar_radiation.py on PYTHONPATH (GRAPHCAST_PY=... tests/ref/make_fixtures.sh).
GraphCast's xarray output conversion (model_utils.stacked_to_dataset: targets sorted by name,
level inner) is done here by hand, the rest is DeepMind's.
"""
import os
import struct

import jax

jax.config.update("jax_enable_x64", True)

import haiku as hk  # noqa: E402
import numpy as np  # noqa: E402
import xarray  # noqa: E402

from graphcast import checkpoint  # noqa: E402
from graphcast import graphcast  # noqa: E402
from graphcast import normalization  # noqa: E402
from graphcast import solar_radiation  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures", "gc_forecast")

SURFACE = ["2m_temperature", "mean_sea_level_pressure"]
ATMOS = ["geopotential"]
LEVELS = [500, 850]
STAT_LEVELS = [300, 500, 850]
FORCINGS = ["toa_incident_solar_radiation", "day_progress_sin", "day_progress_cos"]
STATICS = ["land_sea_mask"]
RES = 22.5
MODEL = graphcast.ModelConfig(resolution=RES, mesh_size=1, latent_size=16, gnn_msg_steps=2,
                              hidden_layers=1, radius_query_fraction_edge_length=0.6,
                              mesh2grid_edge_normalization_factor=0.6180338738074472)
TASK = graphcast.TaskConfig(input_variables=tuple(SURFACE + ATMOS + FORCINGS + STATICS),
                            target_variables=tuple(SURFACE + ATMOS),
                            forcing_variables=tuple(FORCINGS), pressure_levels=tuple(LEVELS),
                            input_duration="12h")
# rough physical scales (mean, std, diff std) so every channel is visibly de-normalised
SCALE = {"2m_temperature": (280.0, 20.0, 2.0), "mean_sea_level_pressure": (101000.0, 1200.0, 150.0),
         "geopotential": (40000.0, 3000.0, 300.0),
         "toa_incident_solar_radiation": (1.07e6, 1.4e6, 1.0e6),
         "day_progress_sin": (0.0, 0.7, 0.5), "day_progress_cos": (0.0, 0.7, 0.5),
         "land_sea_mask": (0.33, 0.46, 0.0)}
T0 = np.datetime64("2020-03-20T06:00:00")
DT = np.timedelta64(6, "h")


def write_wxfx(path, tensors):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(b"WXFX" + struct.pack("<II", 1, len(tensors)))
        for key, value in tensors.items():
            a = np.ascontiguousarray(np.asarray(value, dtype=np.float64))
            raw = key.encode()
            f.write(struct.pack("<I", len(raw)) + raw + struct.pack("<I", a.ndim))
            for d in a.shape:
                f.write(struct.pack("<q", d))
            f.write(a.tobytes())
    os.replace(tmp, path)


def day_progress(t, lon):
    """data_utils.get_day_progress + featurize_progress."""
    sec = (t - np.datetime64("1970-01-01T00:00:00")) / np.timedelta64(1, "s")
    p = np.mod(np.mod(sec, 86400) / 86400 + np.deg2rad(lon) / (2 * np.pi), 1.0).astype(np.float32)
    return np.sin(2 * np.pi * p), np.cos(2 * np.pi * p)


class Network:
    """GraphCast's network with its xarray output (graphcast.GraphCast.__call__ +
    _grid_node_outputs_to_prediction + model_utils.stacked_to_dataset)."""

    def __init__(self, store):
        self.store = store

    def __call__(self, inputs, targets_template, forcings):
        m = graphcast.GraphCast(MODEL, TASK)
        self.store["m"] = m
        # GraphCast.__call__ up to its xarray conversion, method by method (as DeepMind's)
        m._maybe_init(inputs)
        latent_mesh, latent_grid = m._run_grid2mesh_gnn(
            m._inputs_to_grid_node_features(inputs, forcings))
        out = np.asarray(m._run_mesh2grid_gnn(m._run_mesh_gnn(latent_mesh), latent_grid))
        nlat, nlon = inputs.sizes["lat"], inputs.sizes["lon"]
        out = out.reshape(nlat, nlon, out.shape[1], -1)
        data, k = {}, 0
        for v in sorted(TASK.target_variables):
            if v in ATMOS:
                a = out[..., k:k + len(LEVELS)].transpose(2, 3, 0, 1)[:, None]
                data[v] = (("batch", "time", "level", "lat", "lon"), a)
                k += len(LEVELS)
            else:
                data[v] = (("batch", "time", "lat", "lon"), out[..., k].transpose(2, 0, 1)[:, None])
                k += 1
        return xarray.Dataset(data, coords=targets_template.coords)


def stats_file(rng, k, path):
    data = {}
    for v, sc in SCALE.items():
        if k == 0:
            base, spread = sc[0], 0.1 * sc[1]
        else:
            base = sc[k] if sc[k] > 0 else 0.1
            spread = None
        n = len(STAT_LEVELS) if v in ATMOS else None
        shape = (n,) if n else ()
        if spread is not None:
            val = base + spread * rng.standard_normal(shape)
        else:
            val = base * np.exp(0.3 * rng.standard_normal(shape))
        data[v] = (("level",), val) if n else ((), val)
    ds = xarray.Dataset(data, coords={"level": np.array(STAT_LEVELS, np.int32)})
    ds.to_netcdf(path, engine="scipy")
    return ds


def main():
    rng = np.random.default_rng(20261130)
    os.makedirs(OUT, exist_ok=True)
    lat = np.linspace(-90, 90, int(180 / RES) + 1)
    lon = np.arange(0, 360, RES)
    nlat, nlon = lat.size, lon.size
    mean = stats_file(rng, 0, os.path.join(OUT, "mean_by_level.nc"))
    std = stats_file(rng, 1, os.path.join(OUT, "stddev_by_level.nc"))
    diff = stats_file(rng, 2, os.path.join(OUT, "diffs_stddev_by_level.nc"))

    times = [T0 - DT, T0]
    inputs = {}
    for v in SURFACE:
        mu, sd = float(mean[v]), float(std[v])
        inputs[v] = (("batch", "time", "lat", "lon"), mu + sd * rng.standard_normal((1, 2, nlat, nlon)))
    for v in ATMOS:
        mu = mean[v].sel(level=LEVELS).values[:, None, None]
        sd = std[v].sel(level=LEVELS).values[:, None, None]
        inputs[v] = (("batch", "time", "level", "lat", "lon"),
                     mu + sd * rng.standard_normal((1, 2, len(LEVELS), nlat, nlon)))
    lsm = rng.uniform(0, 1, (nlat, nlon))
    inputs["land_sea_mask"] = (("lat", "lon"), lsm)

    def forcing_values(ts):
        tisr = solar_radiation.get_toa_incident_solar_radiation(ts, lat, lon)  # (T, lat, lon)
        s, c = zip(*[day_progress(t, lon) for t in ts])
        s = np.broadcast_to(np.array(s)[:, None, :], tisr.shape)
        c = np.broadcast_to(np.array(c)[:, None, :], tisr.shape)
        return {"toa_incident_solar_radiation": tisr, "day_progress_sin": s, "day_progress_cos": c}

    for k, v in forcing_values(times).items():
        inputs[k] = (("batch", "time", "lat", "lon"), np.asarray(v, np.float64)[None])
    coords = {"lat": lat, "lon": lon, "level": np.array(LEVELS)}
    inputs = xarray.Dataset(inputs, coords=dict(coords, time=np.array(times)))
    forcings = xarray.Dataset({k: (("batch", "time", "lat", "lon"), np.asarray(v, np.float64)[None])
                               for k, v in forcing_values([T0 + DT]).items()},
                              coords={"lat": lat, "lon": lon, "time": np.array([T0 + DT])})
    template = xarray.Dataset(coords=dict(coords, time=np.array([T0 + DT])))

    store = {}

    @hk.transform
    def run(inputs, forcings):
        pred = normalization.InputsAndResiduals(Network(store), std, mean, diff)
        return pred(inputs, template, forcings)

    params = run.init(jax.random.PRNGKey(0), inputs, forcings)
    flat = {}
    for mod, ps in params.items():
        flat[mod] = {}
        for k, v in ps.items():
            v = np.asarray(v)
            if k == "w":
                new = rng.standard_normal(v.shape) / np.sqrt(v.shape[0])
            elif k == "scale":
                new = 1 + 0.2 * rng.standard_normal(v.shape)
            else:
                new = 0.2 * rng.standard_normal(v.shape)
            flat[mod][k] = new.astype(np.float32)
    params64 = {m: {k: np.asarray(v, np.float64) for k, v in ps.items()} for m, ps in flat.items()}
    pred = run.apply(params64, None, inputs, forcings)

    # y in wxcast's order (surface, then atmospheric x levels), rows from the north pole
    ys = [pred[v].values[0, 0] for v in SURFACE]
    ys += [pred[v].sel(level=lv).values[0, 0] for v in ATMOS for lv in LEVELS]
    y = np.stack(ys)[:, ::-1, :]
    m = store["m"]
    g = m._mesh2grid_graph_structure.edges[
        m._mesh2grid_graph_structure.edge_key_by_name("mesh2grid")]
    snd = np.asarray(g.indices.senders).reshape(nlat, nlon, 3)[::-1].reshape(-1, 3)

    ckpt = graphcast.CheckPoint(params=flat, model_config=MODEL, task_config=TASK,
                                description="wxcast test: random GraphCast + stats",
                                license="test data")
    with open(os.path.join(OUT, "model.npz"), "wb") as f:
        checkpoint.dump(f, ckpt)
    # the files wxcast reads: CF coordinates, latitudes ascending as in DeepMind's datasets
    latc = xarray.Variable(("lat",), lat, {"units": "degrees_north", "standard_name": "latitude"})
    lonc = xarray.Variable(("lon",), lon, {"units": "degrees_east", "standard_name": "longitude"})
    xarray.Dataset({"land_sea_mask": (("lat", "lon"), lsm)},
                   coords={"lat": latc, "lon": lonc}).to_netcdf(
        os.path.join(OUT, "statics.nc"), engine="scipy")
    hours = ((np.array(times) - np.datetime64("2020-01-01T00:00:00")) / np.timedelta64(1, "h"))
    init = xarray.Dataset(
        {"t2m": (("time", "lat", "lon"), inputs["2m_temperature"].values[0]),
         "msl": (("time", "lat", "lon"), inputs["mean_sea_level_pressure"].values[0]),
         "z": (("time", "level", "lat", "lon"), inputs["geopotential"].values[0])},
        coords={"lat": latc, "lon": lonc,
                "level": xarray.Variable(("level",), np.array(LEVELS, np.int32),
                                         {"units": "hPa", "standard_name": "air_pressure"}),
                "time": xarray.Variable(("time",), hours.astype(np.float64),
                                        {"units": "hours since 2020-01-01 00:00:00",
                                         "standard_name": "time", "calendar": "gregorian"})})
    init.to_netcdf(os.path.join(OUT, "init.nc"), engine="scipy")
    with open(os.path.join(OUT, "data.yaml"), "w") as f:
        f.write("# --data for model.npz (tests/ref/ref_graphcast_forecast.py)\n"
                "mean_by_level: mean_by_level.nc\nstddev_by_level: stddev_by_level.nc\n"
                "diffs_stddev_by_level: diffs_stddev_by_level.nc\nstatics: statics.nc\n")
    write_wxfx(os.path.join(HERE, "fixtures", "gc_forecast.wxfx"),
               {"y": y, "m2g_senders": snd, "ymax": np.abs(y).max()})
    print("gc_forecast: y %s, per channel max |y| %s" % (y.shape, np.abs(y).max(axis=(1, 2))))


if __name__ == "__main__":
    main()
