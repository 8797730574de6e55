"""Reference for a forecast from an imported DeepMind GraphCast checkpoint (`wxcast import-weights
FILE.npz --config ... --data DATA.yaml`, then `wxcast forecast`), made with DeepMind's own code.

A tiny GraphCast (22.5 degrees, M0..M1, latent 16) with random parameters, wrapped as DeepMind
runs a published checkpoint: graphcast.GraphCast inside normalization.InputsAndResiduals(
predictor, stddev_by_level, mean_by_level, diffs_stddev_by_level). One step from a random
physical initial state (2 times, 6 h apart), forcings from DeepMind's functions
(toa_incident_solar_radiation: solar_radiation.py; year/day_progress_sin/cos:
data_utils.add_derived_vars) and random statics. Two models, each with its own fixture set:

  gc_forecast     configs/model/graphcast_tiny.yaml: t2m, msl, z500, z850 in and out (residual
                  path), tisr + day progress, land_sea_mask
  gc_forecast_tp  configs/model/graphcast_tiny_tp.yaml, GraphCast_small/operational's task at
                  toy size: total_precipitation_6hr a target only (normalization.py de-normalises
                  it by mean/stddev, no input, no residual, no diffs_stddev), tisr + year and day
                  progress, geopotential_at_surface + land_sea_mask

Writes, in tests/ref/fixtures/<name>/:

  model.npz                     the checkpoint (graphcast.checkpoint.dump, float32 parameters)
  mean_by_level.nc, stddev_by_level.nc, diffs_stddev_by_level.nc
                                statistics in DeepMind's layout: one variable per name, a scalar
                                or a vector along `level` (here 3 levels, 300/500/850 hPa, of
                                which the model uses 500 and 850), positive random std
  statics.nc                    the statics (lat, lon), latitudes ascending as DeepMind's data
  init.nc                       the initial state: t2m, msl (and tp: in DeepMind's datasets, not
                                an input of the model) (time, lat, lon), z (time, level, lat,
                                lon) at 2020-03-20T00 and T06 (CF attributes, lat ascending)
  data.yaml                     the --data file naming them
  ../<name>.wxfx                y (Cout, 9, 16): DeepMind's physical prediction at T12 in
                                wxcast's channel order (surface variables in the config's
                                order, then z500, z850), rows from the north pole; m2g_senders
                                (Ng, 3) DeepMind's mesh->grid triangle vertices

Not run in CI (JAX, Haiku, DeepMind's code): the fixtures are committed. To regenerate, with the
environment of tests/ref/ref_graphcast_npz.py plus DeepMind's normalization.py, xarray_tree.py,
predictor_base.py, solar_radiation.py and data_utils.py on PYTHONPATH
(GRAPHCAST_PY=... tests/ref/make_fixtures.sh). GraphCast's xarray output conversion
(model_utils.stacked_to_dataset: targets sorted by name, level inner) is done here by hand, the
rest is DeepMind's. Inputs and forcings are cast to float64 before DeepMind's normalisation (the
whole reference runs in float64).
"""
import os

import jax

jax.config.update("jax_enable_x64", True)

import haiku as hk  # noqa: E402
import numpy as np  # noqa: E402
import xarray  # noqa: E402

from graphcast import checkpoint  # noqa: E402
from graphcast import data_utils  # noqa: E402
from graphcast import graphcast  # noqa: E402
from graphcast import normalization  # noqa: E402
from graphcast import solar_radiation  # noqa: E402
from gc_ref_common import randomise_params, write_wxfx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TISR = "toa_incident_solar_radiation"
ATMOS = ["geopotential"]
LEVELS = [500, 850]
STAT_LEVELS = [300, 500, 850]
RES = 22.5
MODEL = graphcast.ModelConfig(resolution=RES, mesh_size=1, latent_size=16, gnn_msg_steps=2,
                              hidden_layers=1, radius_query_fraction_edge_length=0.6,
                              mesh2grid_edge_normalization_factor=0.6180338738074472)
T0 = np.datetime64("2020-03-20T06:00:00")
DT = np.timedelta64(6, "h")
# archive (init.nc) names of the surface variables
NC_NAME = {"2m_temperature": "t2m", "mean_sea_level_pressure": "msl",
           "total_precipitation_6hr": "tp"}

# surface: the surface targets in the wxcast config's order; target_only: those not inputs.
# scale: rough physical (mean, std, diff std) so every channel is visibly de-normalised; tp's
# mean is large beside its std so that DeepMind's prediction stays >= 0 at most points (wxcast's
# forecast file clamps tp at 0, docs/weights.md).
VARIANTS = {
    "gc_forecast": dict(
        surface=["2m_temperature", "mean_sea_level_pressure"], target_only=[],
        forcings=[TISR, "day_progress_sin", "day_progress_cos"], statics=["land_sea_mask"],
        scale={"2m_temperature": (280.0, 20.0, 2.0),
               "mean_sea_level_pressure": (101000.0, 1200.0, 150.0),
               "geopotential": (40000.0, 3000.0, 300.0),
               TISR: (1.07e6, 1.4e6, 1.0e6),
               "day_progress_sin": (0.0, 0.7, 0.5), "day_progress_cos": (0.0, 0.7, 0.5),
               "land_sea_mask": (0.33, 0.46, 0.0)},
        description="wxcast test: random GraphCast + stats"),
    "gc_forecast_tp": dict(
        surface=["2m_temperature", "mean_sea_level_pressure", "total_precipitation_6hr"],
        target_only=["total_precipitation_6hr"],
        forcings=[TISR, "year_progress_sin", "year_progress_cos", "day_progress_sin",
                  "day_progress_cos"],
        statics=["geopotential_at_surface", "land_sea_mask"],
        scale={"2m_temperature": (280.0, 20.0, 2.0),
               "mean_sea_level_pressure": (101000.0, 1200.0, 150.0),
               "total_precipitation_6hr": (0.004, 0.0008, 0.003),
               "geopotential": (40000.0, 3000.0, 300.0),
               TISR: (1.07e6, 1.4e6, 1.0e6),
               "year_progress_sin": (0.0, 0.7, 0.02), "year_progress_cos": (0.0, 0.7, 0.02),
               "day_progress_sin": (0.0, 0.7, 0.5), "day_progress_cos": (0.0, 0.7, 0.5),
               "geopotential_at_surface": (3700.0, 8800.0, 0.0),
               "land_sea_mask": (0.33, 0.46, 0.0)},
        description="wxcast test: random GraphCast with a target-only variable + stats"),
}


class Network:
    """GraphCast's network with its xarray output (graphcast.GraphCast.__call__ +
    _grid_node_outputs_to_prediction + model_utils.stacked_to_dataset)."""

    def __init__(self, store, task):
        self.store = store
        self.task = task

    def __call__(self, inputs, targets_template, forcings):
        m = graphcast.GraphCast(MODEL, self.task)
        self.store["m"] = m
        # GraphCast.__call__ up to its xarray conversion, method by method (as DeepMind's)
        m._maybe_init(inputs)
        latent_mesh, latent_grid = m._run_grid2mesh_gnn(
            m._inputs_to_grid_node_features(inputs, forcings))
        out = np.asarray(m._run_mesh2grid_gnn(m._run_mesh_gnn(latent_mesh), latent_grid))
        nlat, nlon = inputs.sizes["lat"], inputs.sizes["lon"]
        out = out.reshape(nlat, nlon, out.shape[1], -1)
        data, k = {}, 0
        for v in sorted(self.task.target_variables):
            if v in ATMOS:
                a = out[..., k:k + len(LEVELS)].transpose(2, 3, 0, 1)[:, None]
                data[v] = (("batch", "time", "level", "lat", "lon"), a)
                k += len(LEVELS)
            else:
                data[v] = (("batch", "time", "lat", "lon"), out[..., k].transpose(2, 0, 1)[:, None])
                k += 1
        return xarray.Dataset(data, coords=targets_template.coords)


def stats_file(rng, scale, k, path):
    data = {}
    for v, sc in scale.items():
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


def forcing_vars(names, times, lat, lon):
    """DeepMind's forcings at `times`, as its data pipeline makes them: year/day progress by
    data_utils.add_derived_vars from a `datetime` coordinate ((batch, time) and (batch, time,
    lon) variables), TISR by solar_radiation; float64."""
    ds = xarray.Dataset(coords={"lon": lon, "datetime": (("batch", "time"),
                                                         np.array(times, "datetime64[ns]")[None])})
    data_utils.add_derived_vars(ds)
    out = {}
    for v in names:
        if v == TISR:
            tisr = solar_radiation.get_toa_incident_solar_radiation(times, lat, lon)
            out[v] = xarray.Variable(("batch", "time", "lat", "lon"),
                                     np.asarray(tisr, np.float64)[None])
        else:
            out[v] = xarray.Variable(ds[v].dims, np.asarray(ds[v].values, np.float64))
    return out


def make(name, surface, target_only, forcings, statics, scale, description):
    rng = np.random.default_rng(20261130)
    out_dir = os.path.join(HERE, "fixtures", name)
    os.makedirs(out_dir, exist_ok=True)
    surface_in = [v for v in surface if v not in target_only]
    task = graphcast.TaskConfig(input_variables=tuple(surface_in + ATMOS + forcings + statics),
                                target_variables=tuple(surface + ATMOS),
                                forcing_variables=tuple(forcings), pressure_levels=tuple(LEVELS),
                                input_duration="12h")
    lat = np.linspace(-90, 90, int(180 / RES) + 1)
    lon = np.arange(0, 360, RES)
    nlat, nlon = lat.size, lon.size
    mean = stats_file(rng, scale, 0, os.path.join(out_dir, "mean_by_level.nc"))
    std = stats_file(rng, scale, 1, os.path.join(out_dir, "stddev_by_level.nc"))
    diff = stats_file(rng, scale, 2, os.path.join(out_dir, "diffs_stddev_by_level.nc"))

    times = [T0 - DT, T0]
    state = {}  # the initial state (init.nc), target-only variables included
    for v in surface:
        mu, sd = float(mean[v]), float(std[v])
        state[v] = (("batch", "time", "lat", "lon"), mu + sd * rng.standard_normal((1, 2, nlat, nlon)))
    for v in ATMOS:
        mu = mean[v].sel(level=LEVELS).values[:, None, None]
        sd = std[v].sel(level=LEVELS).values[:, None, None]
        state[v] = (("batch", "time", "level", "lat", "lon"),
                    mu + sd * rng.standard_normal((1, 2, len(LEVELS), nlat, nlon)))
    stat = {"land_sea_mask": rng.uniform(0, 1, (nlat, nlon))}
    if "geopotential_at_surface" in statics:
        mu, sd = float(mean["geopotential_at_surface"]), float(std["geopotential_at_surface"])
        stat["geopotential_at_surface"] = np.maximum(mu + sd * rng.standard_normal((nlat, nlon)),
                                                     -3000.0)
    inputs = {v: state[v] for v in surface_in + ATMOS}
    for v in statics:
        inputs[v] = (("lat", "lon"), stat[v])
    inputs.update(forcing_vars(forcings, times, lat, lon))
    coords = {"lat": lat, "lon": lon, "level": np.array(LEVELS)}
    inputs = xarray.Dataset(inputs, coords=dict(coords, time=np.array(times)))
    fvars = xarray.Dataset(forcing_vars(forcings, [T0 + DT], lat, lon),
                           coords={"lat": lat, "lon": lon, "time": np.array([T0 + DT])})
    template = xarray.Dataset(coords=dict(coords, time=np.array([T0 + DT])))

    store = {}

    @hk.transform
    def run(inputs, forcings):
        pred = normalization.InputsAndResiduals(Network(store, task), std, mean, diff)
        return pred(inputs, template, forcings)

    params = run.init(jax.random.PRNGKey(0), inputs, fvars)
    flat, params64 = randomise_params(params, rng)
    pred = run.apply(params64, None, inputs, fvars)

    # y in wxcast's order (surface, then atmospheric x levels), rows from the north pole
    ys = [pred[v].values[0, 0] for v in surface]
    ys += [pred[v].sel(level=lv).values[0, 0] for v in ATMOS for lv in LEVELS]
    y = np.stack(ys)[:, ::-1, :]
    m = store["m"]
    g = m._mesh2grid_graph_structure.edges[
        m._mesh2grid_graph_structure.edge_key_by_name("mesh2grid")]
    snd = np.asarray(g.indices.senders).reshape(nlat, nlon, 3)[::-1].reshape(-1, 3)

    ckpt = graphcast.CheckPoint(params=flat, model_config=MODEL, task_config=task,
                                description=description, license="test data")
    with open(os.path.join(out_dir, "model.npz"), "wb") as f:
        checkpoint.dump(f, ckpt)
    # the files wxcast reads: CF coordinates, latitudes ascending as in DeepMind's datasets
    latc = xarray.Variable(("lat",), lat, {"units": "degrees_north", "standard_name": "latitude"})
    lonc = xarray.Variable(("lon",), lon, {"units": "degrees_east", "standard_name": "longitude"})
    xarray.Dataset({v: (("lat", "lon"), stat[v]) for v in statics},
                   coords={"lat": latc, "lon": lonc}).to_netcdf(
        os.path.join(out_dir, "statics.nc"), engine="scipy")
    hours = ((np.array(times) - np.datetime64("2020-01-01T00:00:00")) / np.timedelta64(1, "h"))
    init = {NC_NAME[v]: (("time", "lat", "lon"), state[v][1][0]) for v in surface}
    init["z"] = (("time", "level", "lat", "lon"), state["geopotential"][1][0])
    init = xarray.Dataset(
        init,
        coords={"lat": latc, "lon": lonc,
                "level": xarray.Variable(("level",), np.array(LEVELS, np.int32),
                                         {"units": "hPa", "standard_name": "air_pressure"}),
                "time": xarray.Variable(("time",), hours.astype(np.float64),
                                        {"units": "hours since 2020-01-01 00:00:00",
                                         "standard_name": "time", "calendar": "gregorian"})})
    if "tp" in init:
        init["tp"].attrs["units"] = "m"
    init.to_netcdf(os.path.join(out_dir, "init.nc"), engine="scipy")
    with open(os.path.join(out_dir, "data.yaml"), "w") as f:
        f.write("# --data for model.npz (tests/ref/ref_graphcast_forecast.py)\n"
                "mean_by_level: mean_by_level.nc\nstddev_by_level: stddev_by_level.nc\n"
                "diffs_stddev_by_level: diffs_stddev_by_level.nc\nstatics: statics.nc\n")
    write_wxfx(os.path.join(HERE, "fixtures", name + ".wxfx"),
               {"y": y, "m2g_senders": snd, "ymax": np.abs(y).max()})
    print("%s: y %s, per channel max |y| %s, min %s" %
          (name, y.shape, np.abs(y).max(axis=(1, 2)), y.min(axis=(1, 2))))


def main():
    for name, v in VARIANTS.items():
        make(name, **v)


if __name__ == "__main__":
    main()
