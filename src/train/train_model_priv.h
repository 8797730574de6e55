/* The model families' constructors that wx_train_model_create_ex (train_model.c) dispatches to by
 * model.type; each lives in its adapter's file. Private to src/train. */
#ifndef WX_TRAIN_MODEL_PRIV_H
#define WX_TRAIN_MODEL_PRIV_H

#include "train/train_model.h"

/* One family's constructor: the arguments of wx_train_model_create_ex, `map` its model mapping. */
typedef wx_status wx_train_family_create_fn(const wx_yaml *map, const char *path, wx_ctx *ctx,
                                            const wx_backend *be, uint64_t seed,
                                            int64_t max_batch, int64_t max_rollout,
                                            int act_checkpoint, wx_train_model **out);

/* FourCastNet / FourCastNet+ (train_model_fcn.c; no activation checkpointing: ignored). */
wx_train_family_create_fn wx_train_model_fcn_create;
/* GraphCast (train_model_gc.c). */
wx_train_family_create_fn wx_train_model_gc_create;

#endif
