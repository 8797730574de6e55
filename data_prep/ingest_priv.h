/* ingest's private state, shared by ingest.c (batches, statistics, shards) and ingest_fields.c
 * (which source field is each archive channel at each time, and its decoding). */
#ifndef WX_INGEST_PRIV_H
#define WX_INGEST_PRIV_H

#include "ingest_recipe.h"
#include "io/archive.h"
#include "io/wx_source.h"
#include "meteo/wx_regrid.h"

typedef struct {
    const wx_field_info *f;
    int src;
    int idx;
} ix_entry;

typedef struct batch_pool batch_pool;

typedef struct {
    wx_recipe r;
    wx_source **src;
    ix_entry *ix;
    int nix;
    wx_grid fine;      /* grid of the sources (first field) */
    wx_grid out;       /* archive grid */
    wx_regrid *coarsen; /* fine -> out (recipe grid.resolution), NULL on the native grid */
    int nthreads;
    float **fine_buf, **acc_buf, **chan_buf; /* [nthreads] scratch each */
    wx_archive_meta meta;
    /* statistics */
    double *s_n, *s_mean, *s_m2, *s_min, *s_max, *d_n, *d_mean, *d_m2;
    float *ring;       /* [lag, rec] previous records for differences */
    int lag;
    int64_t abort_after, done;
    batch_pool *pool;  /* decode threads, from the first shard written to the end */
    int clim_fd, clim_shard; /* the shard the climatology build reads from (-1: none open) */
} ingest_ctx;

/* Order of the field index: valid time, then source order (wx_ingest_find's binary search). */
int wx_ingest_ix_cmp(const void *a, const void *b);
/* The field for variable v valid at t with accumulation `accum` (-1: any); NULL when absent (*st
 * set when two fields qualify). */
const ix_entry *wx_ingest_find(ingest_ctx *c, const wx_recipe_var *v, wx_time t, int64_t accum,
                               wx_status *st);
/* The error for a (variable, time) no source holds, with what the sources do hold. */
wx_status wx_ingest_not_found(ingest_ctx *c, const wx_recipe_var *v, wx_time t);
/* Channel v at time t into out[points] with thread `th`'s scratch: decoded, regridded, hourly
 * accumulations summed. */
wx_status wx_ingest_make_channel(ingest_ctx *c, int v, wx_time t, float *out, int th);

#endif
