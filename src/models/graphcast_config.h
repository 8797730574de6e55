/* GraphCast model config: the schema (keys named after graphcast.py ModelConfig / TaskConfig,
 * defaults = GraphCast_small, shared/reference/graphcast.md §1.1, §1.7, §1.8) and the parameter
 * count (§1.7: 35,979,347 for GraphCast_small), computed without building the model.
 *
 * Channel layout the model expects (the data layer builds it; reference §1.5):
 *   in_channels  = input_steps × (input surface vars + atmospheric vars × levels + forcings)
 *                  + static vars + forcings (at the target time)
 *   out_channels = surface vars + atmospheric vars × levels   (every target)
 * The model appends the 3 structural node features itself, so the embedders see in_channels + 3
 * (186 for GraphCast_small). */
#ifndef WX_GRAPHCAST_CONFIG_H
#define WX_GRAPHCAST_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#include "core/wx_config.h"

#define WX_GC_MAX_VARS 32
#define WX_GC_MAX_LEVELS 64
#define WX_GC_VAR_NAME 48
#define WX_GC_MAX_HIDDEN_LAYERS 4

typedef struct {
    double resolution;              /* global grid spacing in degrees, poles included */
    int64_t mesh_min_level, mesh_max_level; /* multi-mesh = faces of M_min .. M_max */
    int64_t latent_size;            /* node/edge latent width = MLP hidden width */
    int64_t gnn_msg_steps;          /* processor steps (unshared weights) */
    int64_t hidden_layers;          /* hidden layers per MLP (1 as published) */
    double radius_fraction;         /* radius_query_fraction_edge_length */
    double m2g_norm;                /* mesh2grid_edge_normalization_factor; <= 0: longest edge */
    int64_t input_steps;            /* input frames (t−6h, t): 2 */
    int n_surface, n_atmos, n_levels, n_forcings, n_static, n_target_only;
    char surface[WX_GC_MAX_VARS][WX_GC_VAR_NAME];     /* surface targets */
    char atmos[WX_GC_MAX_VARS][WX_GC_VAR_NAME];       /* pressure-level targets */
    char forcings[WX_GC_MAX_VARS][WX_GC_VAR_NAME];
    char statics[WX_GC_MAX_VARS][WX_GC_VAR_NAME];
    char target_only[WX_GC_MAX_VARS][WX_GC_VAR_NAME]; /* targets not fed as inputs */
    double levels[WX_GC_MAX_LEVELS];                  /* pressure levels in hPa */
    /* derived */
    int64_t nlat, nlon;           /* 180/res + 1, 360/res */
    int64_t in_channels;          /* data channels in (structural features excluded) */
    int64_t out_channels;         /* targets */
} wx_gc_config;

/* Parameters per module (reference §1.7 breakdown). */
typedef struct {
    int64_t encoder, processor, decoder, total;
    int64_t mlp_node_embed, mlp_edge_embed, mlp_edge, mlp_node, mlp_orphan, mlp_out;
} wx_gc_param_counts;

extern const wx_cfg_field wx_gc_config_fields[];

/* Validates `map` (the model mapping; `path` names it, "" at the root) and fills cfg, derived
 * fields included. Usage errors name the key and line. */
wx_status wx_gc_config_parse(const wx_yaml *map, const char *path, wx_gc_config *cfg);

/* Fills the derived fields (nlat, nlon, in/out channels) of a config filled by hand; checks the
 * sizes. WX_ERR_USAGE naming the field. */
wx_status wx_gc_config_derive(wx_gc_config *cfg);

/* Parameter count of the published module structure (every MLP: Linear → SiLU → ... → Linear →
 * LayerNorm; output MLP without LayerNorm; embedders for grid nodes, mesh nodes and the three
 * edge sets; the orphan node updates included). Mesh-size independent. */
void wx_gc_param_count(const wx_gc_config *cfg, wx_gc_param_counts *n);

/* Parameters of one MLP in → hidden^k → out (+ LayerNorm when ln). */
int64_t wx_gc_mlp_param_count(int64_t in, int64_t hidden, int64_t out, int64_t hidden_layers,
                              int ln);

void wx_gc_config_print(FILE *out, const wx_yaml *map, int indent);

#endif
