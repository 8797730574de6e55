/* The tiny GraphCast configuration shared by the GraphCast unit tests: 22.5° grid, mesh level 1,
 * latent 8, 2 message-passing steps — the model the PyTorch fixtures of tests/ref/ref_graphcast.py
 * are made for, so tests comparing against them and tests comparing paths use the same one. */
#ifndef GC_TINY_H
#define GC_TINY_H

static const char *const GC_TINY_YAML =
    "type: graphcast\nresolution: 22.5\nmesh_max_level: 1\nlatent_size: 8\ngnn_msg_steps: 2\n"
    "surface_variables: [2m_temperature, mean_sea_level_pressure]\n"
    "atmospheric_variables: [geopotential]\npressure_levels: [500, 850]\n"
    "forcings: [toa_incident_solar_radiation, day_progress_sin, day_progress_cos]\n"
    "static_variables: [land_sea_mask]\n";

#endif
