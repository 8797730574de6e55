"""Reference for `wxcast import-weights` of GraphCast checkpoints, made with DeepMind's own code.

Builds the tiny GraphCast of configs/model/graphcast_tiny.yaml (22.5-degree grid, mesh_size 1,
latent 16, 2 message-passing steps) as google-deepmind/graphcast's `graphcast.GraphCast`, takes
Haiku's parameters (names and shapes as in the published checkpoints) with every value
randomised, writes them with `graphcast.checkpoint.dump` exactly as the published .npz files are
written, and runs one step of the network on random normalised inputs (JAX float64). Writes:

  tests/ref/fixtures/gc_import.npz    the checkpoint (CheckPoint: params, model_config,
                                      task_config, description, license; float32 parameters)
  tests/ref/fixtures/gc_import.wxfx   x (1, Cin, 9, 16): the network input in wxcast's layout
                                      (rows from the north pole; channels as GraphCast stacks
                                      them), y (1, Cout, 9, 16): GraphCast's output (the
                                      normalised residual) in wxcast's channel order (the
                                      config's surface variables, then atmospheric x levels),
                                      m2g_senders (Ng, 3) in wxcast's grid order

Not run in CI (JAX, Haiku and DeepMind's graphcast package are not on the machine); the
fixtures are committed. To regenerate, in a virtual environment:

  python3 -m venv venv && venv/bin/pip install "jax[cpu]" dm-haiku jraph chex xarray trimesh \
      scipy rtree dm-tree numpy
  PYTHONPATH=<a checkout of google-deepmind/graphcast> venv/bin/python tests/ref/ref_graphcast_npz.py

(the fixture writer and the parameter randomising are tests/ref/gc_ref_common.py, shared with
ref_graphcast_forecast.py).

(the PyPI package called "graphcast" is an unrelated graph-database tool). Checked with the
graphcast.py, deep_typed_graph_net.py, typed_graph_net.py, model_utils.py, icosahedral_mesh.py,
grid_mesh_connectivity.py and checkpoint.py of the v0.2 layout, jax 0.10.2, dm-haiku 0.0.17.
"""
import os

import jax

jax.config.update("jax_enable_x64", True)

import haiku as hk  # noqa: E402
import numpy as np  # noqa: E402
import xarray  # noqa: E402

from graphcast import checkpoint  # noqa: E402
from graphcast import graphcast  # noqa: E402
from gc_ref_common import randomise_params, write_wxfx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")

# configs/model/graphcast_tiny.yaml
SURFACE = ["2m_temperature", "mean_sea_level_pressure"]
ATMOS = ["geopotential"]
LEVELS = [500, 850]
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


def main():
    rng = np.random.default_rng(20261130)
    lat = np.linspace(-90, 90, int(180 / RES) + 1)  # ERA5 datasets in graphcast: ascending
    lon = np.arange(0, 360, RES)
    nlat, nlon, b = lat.size, lon.size, 1

    def field(*lead):
        return rng.standard_normal(lead + (nlat, nlon))

    inputs, forcings = {}, {}
    for v in SURFACE + FORCINGS:
        inputs[v] = xarray.Variable(("batch", "time", "lat", "lon"), field(b, 2))
    for v in ATMOS:
        inputs[v] = xarray.Variable(("batch", "time", "level", "lat", "lon"),
                                    field(b, 2, len(LEVELS)))
    for v in STATICS:
        inputs[v] = xarray.Variable(("lat", "lon"), field())
    for v in FORCINGS:
        forcings[v] = xarray.Variable(("batch", "time", "lat", "lon"), field(b, 1))
    coords = {"lat": lat, "lon": lon, "level": np.array(LEVELS)}
    inputs = xarray.Dataset(inputs, coords=coords)
    forcings = xarray.Dataset(forcings, coords={"lat": lat, "lon": lon})

    model = {}

    @hk.transform
    def run(inputs, forcings):
        m = graphcast.GraphCast(MODEL, TASK)
        model["m"] = m
        return m(inputs, None, forcings)  # [grid nodes, batch, outputs]

    params = run.init(jax.random.PRNGKey(0), inputs, forcings)
    flat, params64 = randomise_params(params, rng)
    out = np.asarray(run.apply(params64, None, inputs, forcings))  # (lat*lon, b, cout)
    n_par = sum(v.size for ps in flat.values() for v in ps.values())

    # Network input as GraphCast stacks it (sorted names, time outer, level inner, then the
    # target-time forcings), in wxcast's (B, C, H, W) with rows from the north pole.
    m = model["m"]
    x = np.asarray(m._inputs_to_grid_node_features(inputs, forcings))  # (lat*lon, b, cin)
    x = x.reshape(nlat, nlon, b, -1).transpose(2, 3, 0, 1)[:, :, ::-1, :]
    # GraphCast's output channels: target variables sorted by name, level inner
    # (stacked_to_dataset); wxcast's: surface variables, then atmospheric x levels, config order.
    gc_order = []
    for v in sorted(TASK.target_variables):
        gc_order += [(v, lv) for lv in LEVELS] if v in ATMOS else [(v, None)]
    wx_order = [(v, None) for v in SURFACE] + [(v, lv) for v in ATMOS for lv in LEVELS]
    perm = [gc_order.index(k) for k in wx_order]
    y = out.reshape(nlat, nlon, b, -1).transpose(2, 3, 0, 1)[:, perm, ::-1, :]

    # mesh->grid senders per grid point, in wxcast's grid order (north first)
    g = m._mesh2grid_graph_structure.edges[
        m._mesh2grid_graph_structure.edge_key_by_name("mesh2grid")]
    snd = np.asarray(g.indices.senders).reshape(nlat, nlon, 3)[::-1].reshape(-1, 3)
    g2m = m._grid2mesh_graph_structure.edges[
        m._grid2mesh_graph_structure.edge_key_by_name("grid2mesh")]

    ckpt = graphcast.CheckPoint(params=flat, model_config=MODEL, task_config=TASK,
                                description="wxcast test: random GraphCast, graphcast_tiny.yaml",
                                license="test data")
    os.makedirs(FIXTURES, exist_ok=True)
    with open(os.path.join(FIXTURES, "gc_import.npz.tmp"), "wb") as f:
        checkpoint.dump(f, ckpt)
    os.replace(os.path.join(FIXTURES, "gc_import.npz.tmp"), os.path.join(FIXTURES, "gc_import.npz"))
    write_wxfx(os.path.join(FIXTURES, "gc_import.wxfx"),
               {"x": x, "y": y, "m2g_senders": snd, "params": n_par,
                "g2m_edges": np.asarray(g2m.indices.senders).size})
    print("gc_import: %d parameters, %d g2m edges, x %s, y %s, |y| max %.3f" %
          (n_par, np.asarray(g2m.indices.senders).size, x.shape, y.shape, np.abs(y).max()))
    for mod in sorted(flat):
        for k in sorted(flat[mod]):
            print("  %s:%s %s" % (mod, k, flat[mod][k].shape))


def small(path):
    """`--small PATH`: a GraphCast_small-shaped checkpoint (1 degree, 13 levels, mesh 5, latent
    512, 16 steps; TASK_13 with precipitation in and out) with random values, its parameter names
    and shapes from Haiku (jax.eval_shape: nothing is computed). For checking the import of a
    published-size file (not a fixture: 144 MB)."""
    surface = ("2m_temperature", "mean_sea_level_pressure", "10m_v_component_of_wind",
               "10m_u_component_of_wind", "total_precipitation_6hr")
    atmos = ("temperature", "geopotential", "u_component_of_wind", "v_component_of_wind",
             "vertical_velocity", "specific_humidity")
    forc = ("toa_incident_solar_radiation", "year_progress_sin", "year_progress_cos",
            "day_progress_sin", "day_progress_cos")
    levels = (50, 100, 150, 200, 250, 300, 400, 500, 600, 700, 850, 925, 1000)
    task = graphcast.TaskConfig(input_variables=surface + atmos + forc +
                                ("geopotential_at_surface", "land_sea_mask"),
                                target_variables=surface + atmos, forcing_variables=forc,
                                pressure_levels=levels, input_duration="12h")
    mc = graphcast.ModelConfig(resolution=1.0, mesh_size=5, latent_size=512, gnn_msg_steps=16,
                               hidden_layers=1, radius_query_fraction_edge_length=0.6,
                               mesh2grid_edge_normalization_factor=0.6180338738074472)
    lat, lon = np.linspace(-90, 90, 181), np.arange(0, 360, 1.0)
    sds = jax.ShapeDtypeStruct

    @hk.transform
    def run(gnf):
        m = graphcast.GraphCast(mc, task)
        m._maybe_init(xarray.Dataset(coords={"lat": lat, "lon": lon}))
        lm, lg = m._run_grid2mesh_gnn(gnf)
        return m._run_mesh2grid_gnn(m._run_mesh_gnn(lm), lg)

    shapes = jax.eval_shape(run.init, jax.random.PRNGKey(0), sds((181 * 360, 1, 183), np.float32))
    rng = np.random.default_rng(1)
    params = {mod: {k: (rng.standard_normal(v.shape) * 0.02).astype(np.float32)
                    for k, v in ps.items()} for mod, ps in shapes.items()}
    n = sum(v.size for ps in params.values() for v in ps.values())
    ckpt = graphcast.CheckPoint(params=params, model_config=mc, task_config=task,
                                description="random GraphCast_small-shaped", license="test")
    with open(path, "wb") as f:
        checkpoint.dump(f, ckpt)
    print("%s: %d parameters in %d tensors" % (path, n, sum(len(p) for p in params.values())))


if __name__ == "__main__":
    import sys
    if len(sys.argv) == 3 and sys.argv[1] == "--small":
        small(sys.argv[2])
    else:
        main()
