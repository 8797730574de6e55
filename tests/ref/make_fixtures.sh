#!/usr/bin/env bash
# Regenerates every reference fixture in tests/ref/fixtures/ from the PyTorch float64 scripts.
# Needs Debian's python3-torch (/usr/bin/python3). One line per tests/ref/ref_*.py script.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PY:-/usr/bin/python3}
"$PY" ref_dense.py
"$PY" ref_dense_fused.py
"$PY" ref_graph.py
"$PY" ref_loss.py
"$PY" ref_optim.py
"$PY" ref_spectral.py
"$PY" ref_fourcastnet.py
"$PY" ref_metrics.py
"$PY" ref_conv.py
"$PY" ref_precipnet.py
"$PY" ref_graphcast.py
"$PY" ref_weights.py
# GraphCast .npz import (gc_import.*): DeepMind's graphcast code with JAX and Haiku, not torch;
# needs a virtual environment (see the script's header): GRAPHCAST_PY=venv/bin/python with
# PYTHONPATH holding google-deepmind/graphcast.
if [ -n "${GRAPHCAST_PY:-}" ]; then "$GRAPHCAST_PY" ref_graphcast_npz.py
else echo "ref_graphcast_npz.py skipped: set GRAPHCAST_PY (its header says how)"; fi
# Mesh->grid faces at 1 deg/M5 (gc_m2g_1deg.wxfx): DeepMind's grid_mesh_connectivity with trimesh,
# same virtual environment.
if [ -n "${GRAPHCAST_PY:-}" ]; then "$GRAPHCAST_PY" ref_mesh_m2g.py
else echo "ref_mesh_m2g.py skipped: set GRAPHCAST_PY (its header says how)"; fi
# Forecast from an imported GraphCast checkpoint (gc_forecast.wxfx, fixtures/gc_forecast/; with a
# target-only tp, year progress and geopotential_at_surface: gc_forecast_tp.wxfx,
# fixtures/gc_forecast_tp/): normalization.InputsAndResiduals around graphcast.GraphCast, same
# virtual environment plus DeepMind's data_utils.py (the script's header).
if [ -n "${GRAPHCAST_PY:-}" ]; then "$GRAPHCAST_PY" ref_graphcast_forecast.py
else echo "ref_graphcast_forecast.py skipped: set GRAPHCAST_PY (its header says how)"; fi
# Conservative regridding (regrid.wxfx): WeatherBench2's ConservativeRegridder (JAX); WB2_PY=a
# python with jax and numpy, PYTHONPATH holding google-research/weatherbench2 (ref_regrid.py).
if [ -n "${WB2_PY:-}" ]; then "$WB2_PY" ref_regrid.py
else echo "ref_regrid.py skipped: set WB2_PY (its header says how)"; fi
