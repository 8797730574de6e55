/* ingest's private state, shared by ingest.c (the plan and the shard loop), ingest_fields.c (which
 * source field is each archive channel at each time, and its decoding), ingest_batch.c (records
 * made a batch at a time on worker threads) and ingest_stats.c (statistics, climatology). */
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

/* One channel of one record: its moments, and those of its difference from the record `lag`
 * steps earlier (y, NULL when outside the window). */
typedef struct {
    double n, mean, m2, mn, mx, dn, dm, dm2;
} chan_stats;

typedef struct batch_pool batch_pool;

typedef struct {
    wx_recipe r;
    wx_source **src;
    ix_entry *ix;
    int nix;
    uint64_t legacy_key; /* the key as wxcast hashed it before 2026-12-01 (sources as spelled) */
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
/* Every record's source fields exist (no decoding): a recipe naming a parameter or time the
 * sources lack fails before anything in the output folder is touched. */
wx_status wx_ingest_check_fields(ingest_ctx *c);

/* ingest_stats.c */
/* Moments of channel values x[np] and of their differences from y[np] (NULL: none). */
void wx_ingest_stats_compute(const float *x, const float *y, size_t np, chan_stats *s);
/* Adds one record's channel ch to the running totals (one thread, in (record, channel) order). */
void wx_ingest_stats_merge(ingest_ctx *c, int ch, const chan_stats *s);
/* Whether the record valid at t enters the statistics; whether record k's difference does too. */
int wx_ingest_stats_in(const ingest_ctx *c, wx_time t);
int wx_ingest_stats_diff(const ingest_ctx *c, int64_t k, wx_time t);
/* One record [nchan, points] valid at t, as read back from a complete shard (resumed ingest). */
void wx_ingest_stats_add(ingest_ctx *c, const float *rec, wx_time t);
/* Record r of complete shard `shard` into rec [nchan, points] (float16 widened). */
wx_status wx_ingest_record_read(ingest_ctx *c, int shard, int64_t r, float *rec);
/* m's mean, std, min, max and diff_std from the running totals. */
void wx_ingest_stats_finish(ingest_ctx *c);
/* The archive's climatology.wxc from its written shards (or a warning when out of proportion
 * and not asked for); sets m->climatology. */
wx_status wx_ingest_climatology_make(ingest_ctx *c, wx_archive_meta *m);

/* ingest_batch.c */
/* Buffers of one batch of records. val: [nb, stride32 / 4] floats, each record's channels
 * [nchan, points] then zero padding (the float32 on-disk layout); disk: the float16 layout (NULL
 * for float32); crc: [nb * nchan] per channel, then per record; st/err: per task. val and disk
 * point into one of two buffer sets: the writer thread writes the other set's batch meanwhile. */
typedef struct {
    int64_t cap, stride32, stride16;
    float *val, *val_set[2];
    uint16_t *disk, *disk_set[2];
    int set;
    uint32_t *crc_ch, *crc;
    chan_stats *cs;
    wx_status *st;
    char **err;
} ingest_batch;

void wx_ingest_batch_init(ingest_batch *b, const wx_archive_meta *m);
void wx_ingest_batch_free(ingest_batch *b);
/* Makes records t0..t0+nb-1 into b on c->pool and this thread: values, crc32s, statistics
 * (merged into c). */
wx_status wx_ingest_batch_make(ingest_ctx *c, ingest_batch *b, int64_t t0, int64_t nb);
/* Worker threads 1..nthreads-1, kept until wx_ingest_pool_stop (NULL: nothing to stop). */
batch_pool *wx_ingest_pool_start(int nthreads);
void wx_ingest_pool_stop(batch_pool *p);

#endif
