/* FourCastNet (AFNO) model config: the schema (keys named as in NVlabs FourCastNet
 * networks/afnonet.py, defaults = the paper model, shared/reference/fourcastnet.md §1.1) and the
 * parameter count (§1.6; 74,691,840 for the paper config, the unused final `norm` included as in
 * train.py's count_parameters). */
#ifndef WX_FOURCASTNET_CONFIG_H
#define WX_FOURCASTNET_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#include "core/wx_config.h"

typedef struct {
    int64_t img_h, img_w;      /* img_size [H, W] (720, 1440: ERA5 without the south-pole row) */
    int64_t patch;             /* patch_size */
    int64_t in_channels, out_channels;
    int64_t embed_dim, depth, num_blocks;
    int64_t hidden_size_factor;
    double mlp_ratio, sparsity_threshold, hard_thresholding_fraction;
    int count_unused_norm;
    int two_sided_modes;       /* 0: NVlabs v1 truncation quirk (default); 1: makani v2 */
    /* FourCastNet+ (OpenCastKit) extra inputs after the state channels, in this order:
     * time: day_progress_sin/cos (local solar time), year_progress_sin/cos; location: sin lat,
     * cos lon, sin lon; static: surface geopotential, land-sea mask. */
    int extra_time, extra_location, extra_static;
    /* derived */
    int64_t n_extra;            /* extra input channels: in_channels = out_channels + n_extra */
    int64_t h_tokens, w_tokens; /* img / patch */
    int64_t block_size;         /* embed_dim / num_blocks */
    int64_t mlp_hidden;         /* int(embed_dim * mlp_ratio), as Python's int() */
} wx_fcn_config;

typedef struct {
    int64_t pos_embed, patch_embed;
    int64_t block_norms, block_filter, block_mlp, per_block, blocks;
    int64_t norm, head, total;
} wx_fcn_param_counts;

extern const wx_cfg_field wx_fcn_config_fields[];

/* Validates `map` (the model mapping; `path` names it in messages, "" at the root) with the
 * schema and the cross-checks (img_size is two positive integers divisible by patch_size,
 * embed_dim divisible by num_blocks) and fills `cfg`. Usage errors name the key and line. */
wx_status wx_fcn_config_parse(const wx_yaml *map, const char *path, wx_fcn_config *cfg);

void wx_fcn_param_count(const wx_fcn_config *cfg, wx_fcn_param_counts *counts);

/* The effective config as YAML with defaults and help comments (for --print-config). */
void wx_fcn_config_print(FILE *out, const wx_yaml *map, int indent);

#endif
