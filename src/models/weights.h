/* Weights interchange with PyTorch: a model's named parameter table (models/params.h) to and from
 * safetensors (io/safetensors.h), by the published state_dict names (NVlabs FourCastNet for the
 * AFNO model: pos_embed, patch_embed.proj.weight, blocks.{i}.filter.w1, ..., head.weight).
 *
 * Import accepts what NVlabs checkpoints hold: names with the DDP "module." prefix, and the unused
 * final LayerNorm (norm.weight, norm.bias, also under backbone.) whether or not this model's table
 * carries it. Floating dtypes F32, F64, F16 and BF16 are converted to float32. */
#ifndef WX_MODELS_WEIGHTS_H
#define WX_MODELS_WEIGHTS_H

#include "io/npz.h"
#include "io/safetensors.h"
#include "models/graphcast_config.h"
#include "models/params.h"

/* Fills p->data from st. Every tensor of the table must be in the file with the table's shape,
 * except WX_PARAM_UNUSED ones (left as they are when absent); every tensor of the file must be in
 * the table, except the unused norm.* keys. Errors (WX_ERR_RUN) name the file and the tensor:
 * "missing tensor", "shape (a, b) where the model expects (c, d)", "not a parameter of this
 * model", a non-float dtype, the same tensor twice (with and without "module."). On error p->data
 * may be partly filled. */
wx_status wx_weights_import(wx_params *p, const wx_safetensors *st);

/* Writes every tensor of p (table order, plain names, F32) to path atomically, with metadata
 * format = "pt", producer = "wxcast", and wxcast_model = model_yaml when not NULL (the effective
 * model config, so the file says which model it holds). */
wx_status wx_weights_export(const char *path, const wx_params *p, const char *model_yaml);

/* GraphCast: DeepMind's published checkpoints (.npz of graphcast/checkpoint.py; mapping and the
 * output permutation in weights_gc.c). The check compares the file's model_config (resolution,
 * mesh_size = mesh_max_level with mesh_min_level 0, latent_size, gnn_msg_steps, hidden_layers,
 * radius_query_fraction_edge_length, mesh2grid_edge_normalization_factor; absent = None = 0
 * here) and task_config (target, input and forcing variable names as sets, pressure_levels in
 * order, input_duration = 6 h x input_steps) with c: a disagreement is WX_ERR_USAGE naming the
 * key, a missing or unreadable key WX_ERR_RUN. */
wx_status wx_weights_check_graphcast(const wx_npz *z, const wx_gc_config *c, const char *cfg_path);

/* Fills p (wx_gc_param_table of c) from z's params:* keys: Haiku w (in, out) transposed, b,
 * LayerNorm scale/offset; every parameter must be present with its shape and every params key
 * must be a parameter (WX_ERR_RUN naming the file and the key). GraphCast's output channels
 * (targets sorted by name, level inner) are permuted into wxcast's (surface, then atmospheric x
 * levels, config order). */
wx_status wx_weights_import_graphcast(wx_params *p, const wx_gc_config *c, const wx_npz *z);

#endif
