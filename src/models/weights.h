/* Weights interchange with PyTorch: a model's named parameter table (models/params.h) to and from
 * safetensors (io/safetensors.h), by the published state_dict names (NVlabs FourCastNet for the
 * AFNO model: pos_embed, patch_embed.proj.weight, blocks.{i}.filter.w1, ..., head.weight).
 *
 * Import accepts what NVlabs checkpoints hold: names with the DDP "module." prefix, and the unused
 * final LayerNorm (norm.weight, norm.bias, also under backbone.) whether or not this model's table
 * carries it. Floating dtypes F32, F64, F16 and BF16 are converted to float32. */
#ifndef WX_MODELS_WEIGHTS_H
#define WX_MODELS_WEIGHTS_H

#include "io/safetensors.h"
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

#endif
