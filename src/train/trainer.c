#include "train/trainer.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <cblas.h>

#include "backend/wx_backend.h"
#include "backend/wx_batch_stage.h"
#include "core/wx_fs.h"
#include "core/wx_log.h"
#include "core/wx_metrics.h"
#include "core/wx_progress.h"
#include "core/wx_timer.h"
#include "ops/wx_ops.h"
#include "train/checkpoint.h"
#include "train/dataset.h"
#include "train/distributed.h"
#include "train/train_model.h"
#include "train/validate.h"
#include "wx_build_config.h"
#if WX_HAVE_CUDA
#include "train/distributed_nccl.h"
#include "wx_cuda_backend.h"
#include "wx_cuda_basic.h"
#endif

/* A run of consecutive tensors with one weight-decay setting: one AdamW call each. */
typedef struct {
    int64_t offset, len;
    double wd;
} decay_group;

typedef struct {
    const wx_train_config *c;
    const wx_train_opts *o;
    wx_ctx *ctx;
    const wx_backend *be;
    wx_train_model *m;
    wx_dataset ds;
    wx_train_loss loss;
    int rank, nranks;
    int zero1;                /* m and v hold only this rank's shard [shard_off, +shard_len) */
    int64_t shard_off, shard_len;
    wx_grad_sync *sync;       /* MPI all-reduce of the host gradient (of hgrad on a device) */
    double comm_s;            /* seconds in MPI during the last step */
    int64_t first_step;       /* the step this run started from */
    float *adam_m, *adam_v;   /* (shard_len) in the backend's memory */
    /* Device backends (be->on_device): parameters, gradients, AdamW moments, the batch and the
     * gradient norm live in device memory; the host sees copies (checkpoints, broadcasts). */
    int dev;
    double *dsumsq;           /* (1) device gradient sum of squares */
    float *hgrad;             /* (len) host copy of the gradient for MPI (device without NCCL) */
#if WX_HAVE_CUDA
    wx_nccl_sync *nccl;       /* CUDA under MPI: the gradient all-reduce on the device */
#endif
    wx_batch_stage stage;     /* batches: pinned host slots, uploaded to the backend's memory */
    decay_group *groups;
    int ngroups;
    wx_ckpt_state st;
    int64_t bpe, total, batch, valid_batch; /* batch: this rank's part of the global batch */
    char *model_text, *data_text;
    wx_metrics *metrics;
    char last_path[WX_TRAIN_PATH_MAX + 32], best_path[WX_TRAIN_PATH_MAX + 32];
} trainer;

static void make_groups(trainer *t, double wd) {
    const wx_params *p = t->m->params;
    t->groups = wx_calloc((size_t)p->count + 1, sizeof *t->groups);
    for (int i = 0; i < p->count; i++) {
        const wx_param_info *pi = &p->t[i];
        double w = pi->flags & (WX_PARAM_NO_DECAY | WX_PARAM_UNUSED) ? 0.0 : wd;
        decay_group *g = t->ngroups ? &t->groups[t->ngroups - 1] : NULL;
        if (g && g->wd == w && g->offset + g->len <= pi->offset) {
            g->len = pi->offset + pi->size - g->offset; /* padding between is zero and stays zero */
        } else {
            t->groups[t->ngroups++] = (decay_group){pi->offset, pi->size, w};
        }
    }
}

static char *data_yaml(const trainer *t) {
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    WX_ASSERT(f != NULL);
    const wx_dataset *ds = &t->ds;
    const wx_archive_meta *am = ds->meta;
    for (int k = 0; k < 2; k++) {
        int n = k ? ds->nout : ds->nin;
        const int *ch = k ? ds->cout : ds->cin;
        fprintf(f, "%s:\n", k ? "channels_out" : "channels_in");
        for (int i = 0; i < n; i++)
            fprintf(f, "  - {name: \"%s\", units: \"%s\", mean: %.17g, std: %.17g, diff_std: "
                    "%.17g}\n", am->chan[ch[i]].name, am->chan[ch[i]].units, ds->mean[ch[i]],
                    ds->std[ch[i]], am->diff_std ? am->diff_std[ch[i]] : 0.0);
    }
    fprintf(f, "time_step_s: %lld\n", (long long)t->c->time_step_s);
    /* GraphCast: input states per step; static fields (values in the FLDS section) */
    fprintf(f, "window: %lld\n", (long long)ds->window);
    if (ds->model && ds->model->nstatic) {
        fprintf(f, "statics:\n");
        for (int i = 0; i < ds->model->nstatic; i++)
            fprintf(f, "  - {name: \"%s\", archive_channel: \"%s\"}\n", ds->model->statics[i].name,
                    ds->cstatic[i] >= 0 ? am->chan[ds->cstatic[i]].name : "(absent: zeros)");
    }
    fprintf(f, "grid: {nlat: %d, nlon: %d, lat0: %.17g, dlat: %.17g, lon0: %.17g, dlon: %.17g}\n",
            ds->grid.nlat, ds->grid.nlon, ds->grid.lat0, ds->grid.dlat, ds->grid.lon0, ds->grid.dlon);
    fprintf(f, "archive: \"%s\"\n", t->c->archive);
    fclose(f);
    return s;
}

/* The parameters must be the same bits on every rank; a checkpoint is where a silent divergence
 * would be frozen, so it is checked there (crc32 of each rank's parameters). */
static wx_status check_ranks_agree(const trainer *t, const float *hp) {
    if (t->nranks == 1) return WX_OK;
    const wx_params *p = t->m->params;
    uint32_t mine = (uint32_t)crc32(0L, (const Bytef *)hp, (uInt)(sizeof(float) * (size_t)p->len));
    uint32_t *all = wx_malloc(sizeof(uint32_t) * (size_t)t->nranks);
    wx_status s = wx_dist_allgather_u32(mine, all);
    for (int r = 1; s == WX_OK && r < t->nranks; r++)
        if (all[r] != all[0])
            s = wx_error_set(WX_ERR_RUN, "step %lld: the parameters of rank %d (crc32 %08x) differ "
                             "from rank 0's (%08x): the ranks diverged", (long long)t->st.step, r,
                             all[r], all[0]);
    if (s == WX_OK)
        wx_log_debug("step %lld: parameters identical on all %d ranks (crc32 %08x)",
                     (long long)t->st.step, t->nranks, mine);
    free(all);
    return s;
}

/* A host copy of n floats of backend memory (src itself on the CPU; free with host_put). */
static wx_status host_get(const trainer *t, const float *src, int64_t n, float **out) {
    *out = (float *)src;
    if (!t->dev) return WX_OK;
    *out = wx_malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    wx_status s = t->be->copy_d2h(t->ctx, *out, src, sizeof(float) * (size_t)n);
    if (s != WX_OK) free(*out), *out = NULL;
    return s;
}

static void host_put(const trainer *t, float *h, const float *src) {
    if (h != src) free(h);
    (void)t;
}

/* Rank 0 writes; with ZeRO-1 it first collects the AdamW shards, so the file is the same as a
 * one-process run's and any rank count can resume from it. After device training the file is
 * written from host copies: the same bytes as a CPU run's, loadable by either backend. */
static wx_status save(trainer *t, const char *path) {
    const wx_params *p = t->m->params;
    float *hp = NULL;
    WX_TRY(wx_dist_agree(host_get(t, p->data, p->len, &hp)));
    wx_status s0 = wx_dist_agree(check_ranks_agree(t, hp));
    if (s0 != WX_OK) {
        host_put(t, hp, p->data);
        return s0;
    }
    int64_t len = p->len;
    float *m = t->adam_m, *v = t->adam_v;
    wx_status s = WX_OK;
    if (t->dev) { /* not sharded on a device (setup_local refuses ZeRO-1 there) */
        m = v = NULL;
        if (t->rank == 0) s = host_get(t, t->adam_m, len, &m);
        if (t->rank == 0 && s == WX_OK) s = host_get(t, t->adam_v, len, &v);
    } else if (t->zero1 && t->nranks > 1) {
        m = t->rank == 0 ? wx_malloc(sizeof(float) * (size_t)len) : NULL;
        v = t->rank == 0 ? wx_malloc(sizeof(float) * (size_t)len) : NULL;
        s = wx_dist_gather_shards(t->adam_m, m, len, 0);
        if (s == WX_OK) s = wx_dist_gather_shards(t->adam_v, v, len, 0);
        if (s != WX_OK) {
            free(m), free(v);
            host_put(t, hp, p->data);
            return s;
        }
    }
    if (t->rank == 0 && s == WX_OK) {
        wx_params view = *p; /* the table with the host copy of the values */
        view.data = hp, view.grad = NULL, view.be = NULL, view.be_ctx = NULL;
        wx_ckpt_out out = {t->c->text, t->model_text, t->data_text, &t->st, &view, m, v,
                           t->m->nstatic, t->m->h, t->m->w, t->m->data.statics};
        s = wx_checkpoint_write(path, &out);
    }
    if (m != t->adam_m) free(m), free(v);
    host_put(t, hp, p->data);
    return wx_dist_agree(s);
}

/* The data the model needs (normalisation, residual scales, statics, time step). */
static wx_status attach_data(trainer *t) {
    int n = t->ds.nout;
    double *mean = wx_calloc((size_t)n + 1, sizeof(double)), *sd = wx_calloc((size_t)n + 1, sizeof(double));
    double *dd = wx_calloc((size_t)n + 1, sizeof(double));
    char (*names)[WX_TRAIN_NAME_MAX] = wx_calloc((size_t)n + 1, WX_TRAIN_NAME_MAX);
    wx_train_data d;
    wx_dataset_model_data(&t->ds, &d, mean, sd, dd, names);
    wx_status s = WX_OK;
    if (t->m->nstate || d.nstate == t->m->out_channels) s = wx_train_model_attach(t->m, &d);
    free(mean), free(sd), free(dd), free(names);
    return s;
}

/* loss.type auto: the family's own (GraphCast's weighted MSE in residual space, else the NVlabs
 * relative L2); graphcast: the model's weights (lat × level × variable / residual scale²). */
static wx_status loss_setup(trainer *t) {
    const wx_train_config *c = t->c;
    wx_train_model *m = t->m;
    wx_loss_kind kind = c->loss;
    if (kind == WX_LOSS_AUTO) kind = m->ops->loss_weights ? WX_LOSS_GRAPHCAST : WX_LOSS_REL_L2;
    if (kind == WX_LOSS_GRAPHCAST && !m->ops->loss_weights)
        return wx_error_set(WX_ERR_USAGE, "%s: key '%s.loss.type': graphcast is GraphCast's loss; "
                            "this model is %s", c->path, wx_train_stage_name(c->stage), m->family);
    wx_train_loss_init(&t->loss, kind == WX_LOSS_GRAPHCAST ? WX_LOSS_LATW_MSE : kind, t->ctx, t->be,
                       m->out_channels, m->h, m->w, t->ds.wlat,
                       c->nweights ? c->channel_weights : NULL);
    t->loss.kind = kind;
    if (kind == WX_LOSS_GRAPHCAST) WX_TRY(m->ops->loss_weights(m, t->loss.wlat, t->loss.wch));
    return WX_OK;
}

/* Rollout steps of optimizer step `step` (0-based): rollout_start, one more every rollout_every
 * steps, up to rollout_steps (the GraphCast fine-tuning curriculum); fixed when rollout_every = 0. */
static int64_t rollout_at(const wx_train_config *c, int64_t step) {
    if (c->rollout_every <= 0) return c->rollout_steps;
    int64_t k = c->rollout_start + step / c->rollout_every;
    return k < c->rollout_steps ? k : c->rollout_steps;
}

/* Called by the model's last backward pass (wx_params_grads_final_from): grad[lo, len) is final, so
 * its buckets' all-reduces start now, and the ones already started get a chance to progress. */
static wx_status grad_ready(void *arg, int64_t lo) {
    wx_grad_sync *s = arg;
    WX_TRY(wx_grad_sync_ready(s, lo));
    return wx_grad_sync_progress(s);
}

static int is_cuda(const wx_backend *be) {
#if WX_HAVE_CUDA
    return be == wx_backend_cuda();
#else
    (void)be;
    return 0;
#endif
}

#if WX_HAVE_CUDA
static wx_status nccl_ready(void *arg, int64_t lo) { return wx_nccl_sync_ready(arg, lo); }
#endif

/* The backend and its settings: the config's device (or the test hook's backend), one GPU per
 * rank on its node, the GEMM precision. What cannot run on a device backend is refused here,
 * before any data is read. */
static wx_status setup_backend(trainer *t, const char *what) {
    const wx_train_config *c = t->c;
    if (t->o->backend) t->be = t->o->backend; /* tests only: not reachable from the CLI */
    else WX_TRY(wx_backend_by_name(c->device, what, &t->be));
    t->dev = t->be->on_device;
    if (c->bf16 && !is_cuda(t->be))
        return wx_error_set(WX_ERR_USAGE, "%s: key 'precision': bf16 needs the CUDA backend; "
                            "backend '%s' computes in fp32", c->path, t->be->name);
    if (!t->dev) return WX_OK;
    if (c->stage == WX_STAGE_PRECIP)
        return wx_error_set(WX_ERR_USAGE, "%s: device '%s': stage precip runs on the CPU backend "
                            "only (the PrecipNet head and the frozen wind model are host code); use "
                            "device: cpu for this stage", what, t->be->name);
    if (t->o->zero1 && t->nranks > 1)
        return wx_error_set(WX_ERR_USAGE, "%s: device '%s': --zero1 shards the AdamW state through "
                            "host MPI and runs on the CPU backend only; on a device the whole "
                            "state stays on every GPU (drop --zero1)", what, t->be->name);
#if WX_HAVE_CUDA
    if (is_cuda(t->be)) { /* one process per GPU: the rank's index on its node picks the device */
        int count = 0;
        WX_TRY(wx_cuda_device_count(&count));
        if (count < 1) return wx_error_set(WX_ERR_RUN, "%s: no CUDA device visible", what);
        WX_TRY(wx_cuda_ctx_attach(t->ctx, wx_dist_local_rank() % count));
        WX_TRY(wx_cuda_set_precision(t->ctx, c->bf16 ? WX_CUDA_BF16 : WX_CUDA_FP32));
    }
#endif
    return WX_OK;
}

/* The gradient all-reduce under MPI: host MPI for host gradients; on a device, NCCL when the
 * backend is CUDA (buckets start during the backward, on a side stream), else through a host copy
 * of the gradient (a device backend without NCCL: the test simulator). */
static wx_status setup_grad_sync(trainer *t) {
    wx_params *p = t->m->params;
    const int64_t bucket = t->o->bucket_bytes > 0 ? t->o->bucket_bytes : WX_DIST_BUCKET_BYTES_DEFAULT;
    if (!t->dev) {
        WX_TRY(wx_grad_sync_create(p->grad, p->len, bucket, &t->sync));
        if (t->nranks > 1 && !t->zero1) /* overlap the all-reduce with the rest of the backward */
            p->grad_ready = grad_ready, p->grad_ready_arg = t->sync;
        return WX_OK;
    }
#if WX_HAVE_CUDA
    if (t->nranks > 1 && is_cuda(t->be)) {
        WX_TRY(wx_grad_sync_nccl_create(t->ctx, p->grad, p->len, bucket, &t->nccl));
        p->grad_ready = nccl_ready, p->grad_ready_arg = t->nccl;
    }
#endif
    if (t->nranks > 1 && !is_cuda(t->be)) t->hgrad = wx_calloc((size_t)p->len + 1, sizeof(float));
    return wx_grad_sync_create(t->hgrad, p->len, bucket, &t->sync);
}

/* What every rank does on its own: model, data, buffers. */
static wx_status setup_local(trainer *t) {
    const wx_train_config *c = t->c;
    t->rank = wx_dist_rank(), t->nranks = wx_dist_size();
    if (c->batch_size % t->nranks)
        return wx_error_set(WX_ERR_USAGE, "%s: key '%s.batch_size': the global batch of %lld samples "
                            "does not divide over %d ranks (each rank takes batch_size / ranks); use "
                            "a rank count that divides it", c->path, wx_train_stage_name(c->stage),
                            (long long)c->batch_size, t->nranks);
    int threads = t->o->threads > 0 ? t->o->threads : c->threads;
    t->ctx = wx_ctx_create(threads);
    openblas_set_num_threads(t->ctx->threads); /* GEMM results depend on the split: fix it */
    {
        char what[WX_TRAIN_PATH_MAX + 48];
        snprintf(what, sizeof what, "%s: line %d: key 'device'", c->path, c->device_line);
        WX_TRY(setup_backend(t, what));
    }
    t->batch = c->batch_size / t->nranks;
    t->valid_batch = c->valid_batch > 0 ? c->valid_batch : t->batch;
    int64_t maxb = t->batch > t->valid_batch ? t->batch : t->valid_batch;
    if (c->stage == WX_STAGE_PRECIP)
        WX_TRY(wx_train_model_precip_create(c, t->ctx, t->be, c->seed, maxb, &t->m));
    else
        WX_TRY(wx_train_model_create_ex(c->model, c->model_path[0] ? "" : "model", t->ctx, t->be,
                                        c->seed, maxb, c->rollout_steps, c->act_checkpoint, &t->m));
    wx_train_model *m = t->m;
    if (t->dev && m->params->be != t->be)
        return wx_error_set(WX_ERR_USAGE, "%s: device '%s': the %s model keeps its parameters in "
                            "host memory; it trains on the CPU backend only", c->path, t->be->name,
                            m->family);
    WX_TRY(wx_dataset_open_model(&t->ds, c, m, t->batch, c->rollout_steps));
    WX_TRY(attach_data(t));
    WX_TRY(wx_dataset_set_ranks(&t->ds, c, t->rank, t->nranks));
    if (c->nweights && c->nweights != m->out_channels)
        return wx_error_set(WX_ERR_USAGE, "%s: key '%s.loss.channel_weights': %d weights for %lld "
                            "output channels", c->path, wx_train_stage_name(c->stage), c->nweights,
                            (long long)m->out_channels);
    WX_TRY(loss_setup(t));
    t->zero1 = t->o->zero1 && t->nranks > 1;
    t->shard_off = 0, t->shard_len = m->params->len;
    if (t->zero1) {
        int64_t *off = wx_malloc(sizeof(int64_t) * (size_t)t->nranks);
        int64_t *cnt = wx_malloc(sizeof(int64_t) * (size_t)t->nranks);
        wx_dist_split(m->params->len, t->nranks, off, cnt);
        t->shard_off = off[t->rank], t->shard_len = cnt[t->rank];
        free(off);
        free(cnt);
    }
    /* zeroed: a fresh run's moments (the backends' mem_alloc zeroes) */
    const size_t sbytes = sizeof(float) * (size_t)t->shard_len;
    t->adam_m = wx_backend_alloc(t->be, t->ctx, sbytes, "AdamW first moments");
    t->adam_v = t->adam_m ? wx_backend_alloc(t->be, t->ctx, sbytes, "AdamW second moments") : NULL;
    if (!t->adam_v) return WX_ERR_RUN;
    if (t->dev && !(t->dsumsq = wx_backend_alloc(t->be, t->ctx, sizeof(double), "gradient norm")))
        return WX_ERR_RUN;
    WX_TRY(setup_grad_sync(t));
    make_groups(t, c->opt.weight_decay);
    int64_t hw = m->h * m->w;
    WX_TRY(wx_batch_stage_init(&t->stage, t->be, t->ctx, t->batch * m->in_channels * hw,
                               c->rollout_steps * t->batch * m->out_channels * hw));
    size_t len = 0;
    FILE *f = open_memstream(&t->model_text, &len);
    WX_ASSERT(f != NULL);
    m->ops->print_config(m, f);
    fclose(f);
    t->data_text = data_yaml(t);
    t->bpe = wx_dataset_batches_per_epoch(&t->ds);
    t->total = c->steps > 0 ? c->steps : c->epochs * t->bpe;

    snprintf(t->st.stage, sizeof t->st.stage, "%s", wx_train_stage_name(c->stage));
    t->st.total_steps = t->total;
    t->st.best_loss = INFINITY;
    t->st.best_step = -1;
    wx_rng_init(&t->st.order, c->seed, 1);
    wx_rng_init(&t->st.noise, c->seed, 2);
    snprintf(t->last_path, sizeof t->last_path, "%s/last.ckpt", c->checkpoint_dir);
    snprintf(t->best_path, sizeof t->best_path, "%s/best.ckpt", c->checkpoint_dir);
    return WX_OK;
}

/* Rank 0: the starting point (fresh, init_from weights or a resumed run) and the output files.
 * hp (the parameters), m and v are full (params->len) host buffers here. */
static wx_status setup_root(trainer *t, float *hp, float *adam_m, float *adam_v) {
    const wx_train_config *c = t->c;
    wx_train_model *m = t->m;
    WX_TRY(wx_mkdir_p(c->checkpoint_dir));
    const char *from = t->o->resume ? t->o->resume : c->init_from[0] ? c->init_from : NULL;
    if (from) {
        wx_checkpoint ck;
        wx_status s = wx_checkpoint_read(from, &ck);
        if (s == WX_OK) s = wx_checkpoint_load(&ck, WX_CKPT_PARAM, m->params, hp);
        if (s == WX_OK && t->o->resume) {
            if (!ck.has_state || strcmp(ck.st.stage, t->st.stage))
                s = wx_error_set(WX_ERR_USAGE, "--resume %s: the checkpoint is from stage '%s', this "
                                 "run is stage '%s' (use the stage's init_from to start a new stage "
                                 "from it)", from, ck.has_state ? ck.st.stage : "?", t->st.stage);
            if (s == WX_OK) s = wx_checkpoint_load(&ck, WX_CKPT_ADAM_M, m->params, adam_m);
            if (s == WX_OK) s = wx_checkpoint_load(&ck, WX_CKPT_ADAM_V, m->params, adam_v);
            if (s == WX_OK) {
                t->st = ck.st;
                t->st.total_steps = t->total;
                if (!ck.config_text || strcmp(ck.config_text, c->text))
                    wx_log_warn("%s: the config differs from the one this checkpoint was trained "
                                "with; the run continues with the new one (not bit-identical)", from);
                if (ck.st.epoch_pos > t->bpe)
                    s = wx_error_set(WX_ERR_RUN, "%s: %lld batches done in the epoch, but an epoch "
                                     "now has %lld", from, (long long)ck.st.epoch_pos,
                                     (long long)t->bpe);
            }
        }
        if (s == WX_OK)
            wx_log_info("%s %s (step %lld)", t->o->resume ? "resuming from" : "weights from", from,
                        (long long)(ck.has_state ? ck.st.step : 0));
        wx_checkpoint_free(&ck);
        if (s != WX_OK && !t->o->resume)
            return wx_error_wrap(s, "%s: %s.init_from: ", c->path, wx_train_stage_name(c->stage));
        WX_TRY(s);
    }
    if (t->o->metrics)
        WX_TRY(t->o->resume ? wx_metrics_open_append(&t->metrics, t->o->metrics)
                            : wx_metrics_open(&t->metrics, t->o->metrics));
    return WX_OK;
}

/* Every rank builds its model, then rank 0 decides the starting state and broadcasts it: the
 * parameters (fresh ones too, so no rank depends on its own initialisation), the AdamW state
 * (scattered by shard with ZeRO-1) and the step/epoch/data-order state. */
static wx_status setup(trainer *t) {
    WX_TRY(wx_dist_agree(setup_local(t)));
    wx_params *p = t->m->params;
    const size_t bytes = sizeof(float) * (size_t)p->len;
    int split = t->zero1;
    /* On a device the start is decided and broadcast in host copies, then uploaded once. */
    float *hp = NULL, *m = t->adam_m, *v = t->adam_v;
    WX_TRY(wx_dist_agree(host_get(t, p->data, p->len, &hp)));
    if (split || t->dev) {
        m = t->rank == 0 || t->dev ? wx_calloc((size_t)p->len + 1, sizeof(float)) : NULL;
        v = t->rank == 0 || t->dev ? wx_calloc((size_t)p->len + 1, sizeof(float)) : NULL;
    }
    wx_status s = wx_dist_agree(t->rank == 0 ? setup_root(t, hp, m, v) : WX_OK);
    if (s == WX_OK) s = wx_dist_bcast(hp, bytes, 0);
    if (s == WX_OK) s = wx_dist_bcast(&t->st, sizeof t->st, 0);
    if (s == WX_OK && split) s = wx_dist_scatter_shards(m, t->adam_m, p->len, 0);
    if (s == WX_OK && split) s = wx_dist_scatter_shards(v, t->adam_v, p->len, 0);
    if (s == WX_OK && !split) s = wx_dist_bcast(m, bytes, 0);
    if (s == WX_OK && !split) s = wx_dist_bcast(v, bytes, 0);
    if (s == WX_OK && t->dev) {
        s = t->be->copy_h2d(t->ctx, p->data, hp, bytes);
        if (s == WX_OK) s = t->be->copy_h2d(t->ctx, t->adam_m, m, bytes);
        if (s == WX_OK) s = t->be->copy_h2d(t->ctx, t->adam_v, v, bytes);
        s = wx_dist_agree(s);
    }
    if (split || t->dev) free(m), free(v);
    host_put(t, hp, p->data);
    return s;
}

static void teardown(trainer *t) {
    wx_dataset_close(&t->ds);
    wx_train_loss_free(&t->loss);
    wx_train_model_destroy(t->m);
    wx_batch_stage_free(&t->stage);
    if (t->be) { /* backend memory goes before the context it was made on */
        t->be->mem_free(t->ctx, t->adam_m);
        t->be->mem_free(t->ctx, t->adam_v);
        t->be->mem_free(t->ctx, t->dsumsq);
    }
#if WX_HAVE_CUDA
    wx_nccl_sync_destroy(t->nccl);
#endif
    wx_ctx_destroy(t->ctx);
    wx_grad_sync_destroy(t->sync);
    free(t->hgrad);
    free(t->groups);
    free(t->model_text);
    free(t->data_text);
}

/* Test hooks, off unless set. WXCAST_FAULT=RANK:STEP:MODE makes rank RANK fail in step STEP:
 * `batch` as a failed batch before the step's status agreement (every rank stops cleanly), or
 * after it, with its peers waiting in the gradient all-reduce: `kill` (SIGKILL), `exit` (_exit(3)
 * without MPI_Finalize), `error` (a returned error nobody else knows of: the CLI aborts the job).
 * WXCAST_DEBUG_DUMP=DIR makes every rank write its averaged gradient of the run's first step and
 * its final parameters (raw float32, <what>.rank<r>). */
static wx_status fault_hook(const trainer *t, int agreed) {
    const char *f = getenv("WXCAST_FAULT");
    int rank;
    long long step;
    char mode[16];
    if (!f || sscanf(f, "%d:%lld:%15s", &rank, &step, mode) != 3) return WX_OK;
    if (rank != t->rank || step != t->st.step + 1 || agreed != !!strcmp(mode, "batch")) return WX_OK;
    wx_log_warn("WXCAST_FAULT: %s in step %lld", mode, step);
    if (!strcmp(mode, "kill")) raise(SIGKILL);
    if (!strcmp(mode, "exit")) _exit(3);
    return wx_error_set(WX_ERR_RUN, "step %lld: fault injected by WXCAST_FAULT (%s)", step, mode);
}

/* buf (n): backend memory. */
static wx_status debug_dump(const trainer *t, const char *what, const float *buf, int64_t n) {
    const char *dir = getenv("WXCAST_DEBUG_DUMP");
    if (!dir || !*dir) return WX_OK;
    char path[WX_TRAIN_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s.rank%d", dir, what, t->rank);
    float *h;
    WX_TRY(host_get(t, buf, n, &h));
    wx_atomic_file f;
    wx_status s = wx_atomic_open(&f, path);
    if (s == WX_OK && fwrite(h, sizeof(float), (size_t)n, f.fp) != (size_t)n) {
        wx_atomic_abort(&f);
        s = wx_error_set(WX_ERR_RUN, "%s: cannot write", path);
    } else if (s == WX_OK) {
        s = wx_atomic_commit(&f);
    }
    host_put(t, h, buf);
    return s;
}

/* The mean gradient over the global batch (this rank's shard of it with ZeRO-1) and its global
 * squared norm, identical on every rank. */
static wx_status reduce_grads(trainer *t, double *sumsq) {
    wx_params *p = t->m->params;
    *sumsq = 0;
    if (t->zero1) {
        WX_TRY(wx_dist_reduce_scatter_avg(p->grad, p->len));
        WX_TRY(t->be->grad_norm_forward(t->ctx, sumsq, p->grad + t->shard_off, t->shard_len));
        return wx_dist_allreduce_f64(sumsq, 1, WX_DIST_SUM);
    }
    if (!t->dev) {
        WX_TRY(wx_grad_sync_finish(t->sync));
        return t->be->grad_norm_forward(t->ctx, sumsq, p->grad, p->len);
    }
    const size_t bytes = sizeof(float) * (size_t)p->len;
#if WX_HAVE_CUDA
    if (t->nccl) WX_TRY(wx_nccl_sync_finish(t->nccl)); /* the compute stream waits for it */
#endif
    if (t->hgrad) { /* through the host: the same MPI sums as a CPU run's */
        WX_TRY(t->be->copy_d2h(t->ctx, t->hgrad, p->grad, bytes));
        WX_TRY(wx_grad_sync_finish(t->sync));
        WX_TRY(t->be->copy_h2d(t->ctx, p->grad, t->hgrad, bytes));
    }
    /* the norm on the device; one double comes back (clipping needs it on the host) */
    WX_TRY(t->be->mem_zero(t->ctx, t->dsumsq, sizeof(double)));
    WX_TRY(t->be->grad_norm_forward(t->ctx, t->dsumsq, p->grad, p->len));
    return t->be->copy_d2h(t->ctx, sumsq, t->dsumsq, sizeof(double));
}

/* One optimizer step on the batch x (B, Cin, H, W) / tg (K, B, Cout, H, W), both in the backend's
 * memory; returns the loss and the gradient norm. On a device the AdamW update is left queued:
 * it runs while the host reads the next batch. */
static wx_status train_step(trainer *t, const float *x, const float *tg, double *loss,
                            double *gnorm, double *lr) {
    const wx_optim_config *op = &t->c->opt;
    wx_params *p = t->m->params;
    wx_params_zero_grad(p);
    wx_grad_sync_reset_clock(t->sync);
    /* Every rank learns of a failed batch here, so a data error ends the job cleanly. */
    wx_status s = t->m->ops->loss_backward(t->m, &t->loss, x, tg, t->ds.t1,
                                           rollout_at(t->c, t->st.step), t->batch, loss);
    if (s == WX_OK) s = fault_hook(t, 0);
    WX_TRY(wx_dist_agree(s));
    double c0 = wx_time_now();
    WX_TRY(wx_dist_allreduce_f64(loss, 1, WX_DIST_AVG));
    WX_TRY(fault_hook(t, 1));
    double sumsq;
    WX_TRY(reduce_grads(t, &sumsq));
    t->comm_s = wx_time_now() - c0;
    if (!isfinite(*loss))
        return wx_dist_agree(wx_error_set(WX_ERR_RUN, "step %lld: the training loss is %g (diverged; "
                                          "lower the learning rate or set grad_clip)",
                                          (long long)t->st.step + 1, *loss));
    if (!t->zero1 && t->st.step == t->first_step) WX_TRY(debug_dump(t, "grad.first", p->grad, p->len));
    *gnorm = sqrt(sumsq);
    float *g = p->grad + t->shard_off;
    /* torch.nn.utils.clip_grad_norm_: scale by max_norm / (norm + 1e-6) when that is below 1. */
    if (op->grad_clip > 0) {
        double coef = op->grad_clip / (*gnorm + 1e-6);
        if (coef < 1.0) WX_TRY(t->be->scale_forward(t->ctx, g, t->shard_len, coef));
    }
    *lr = wx_lr_warmup_cosine(t->st.step, op->warmup, t->total, op->lr, op->lr_min);
    /* AdamW is element-wise, so updating each shard on its own rank is the same step. */
    int64_t lo = t->shard_off, hi = t->shard_off + t->shard_len;
    for (int i = 0; i < t->ngroups; i++) {
        const decay_group *gr = &t->groups[i];
        int64_t a = gr->offset > lo ? gr->offset : lo, b = gr->offset + gr->len;
        if (b > hi) b = hi;
        if (a >= b) continue;
        WX_TRY(t->be->adamw_forward(t->ctx, p->data + a, t->adam_m + (a - lo), t->adam_v + (a - lo),
                                    p->grad + a, b - a, *lr, op->beta1, op->beta2, op->eps, gr->wd,
                                    t->st.step + 1));
    }
    if (t->zero1) {
        double c1 = wx_time_now();
        WX_TRY(wx_dist_allgather_shards(p->data, p->len));
        t->comm_s += wx_time_now() - c1;
    }
    t->st.step++;
    return WX_OK;
}

static wx_status validate_and_save(trainer *t) {
    wx_dataset *ds = &t->ds;
    wx_valid_result r;
    double t0 = wx_time_now();
    WX_TRY(wx_validate(t->m, ds, &t->loss, t->c->leads, t->c->nleads, t->c->valid_max_samples,
                       t->valid_batch, &r));
    int best = r.loss < t->st.best_loss;
    if (best) t->st.best_loss = r.loss, t->st.best_step = t->st.step;
    char line[1024];
    int used = snprintf(line, sizeof line, "step %lld: valid loss %.6g%s (%lld samples, %.1f s)",
                        (long long)t->st.step, r.loss, best ? " (best)" : "", (long long)r.samples,
                        wx_time_now() - t0);
    for (int l = 0; l < r.nleads && used < (int)sizeof line - 64; l++)
        for (int c = 0; c < r.nch && c < 4 && used < (int)sizeof line - 64; c++)
            used += snprintf(line + used, sizeof line - (size_t)used, "%s %s@%lldh %.4g",
                             l || c ? "," : "; rmse", ds->meta->chan[ds->cout[c]].name,
                             (long long)(r.leads[l] * t->c->time_step_s / 3600), r.rmse[l * r.nch + c]);
    wx_log_info("%s", line);
    wx_status s = WX_OK;
    if (t->metrics) {
        int n = 5 + r.nleads * r.nch;
        wx_metric_kv *kv = wx_calloc((size_t)n, sizeof *kv);
        char (*keys)[128] = wx_calloc((size_t)n, 128);
        kv[0] = WX_M_STR("phase", "valid");
        kv[1] = WX_M_INT("step", t->st.step);
        kv[2] = WX_M_INT("epoch", t->st.epoch);
        kv[3] = WX_M_NUM("loss", r.loss);
        kv[4] = WX_M_INT("samples", r.samples);
        for (int l = 0; l < r.nleads; l++)
            for (int c = 0; c < r.nch; c++) {
                int i = 5 + l * r.nch + c;
                snprintf(keys[i], 128, "rmse.%s.%lldh", ds->meta->chan[ds->cout[c]].name,
                         (long long)(r.leads[l] * t->c->time_step_s / 3600));
                kv[i] = WX_M_NUM(keys[i], r.rmse[l * r.nch + c]);
            }
        s = wx_metrics_write(t->metrics, kv, n);
        free(kv);
        free(keys);
    }
    wx_valid_result_free(&r);
    WX_TRY(s);
    if (best) WX_TRY(save(t, t->best_path));
    return WX_OK;
}

static wx_status loop(trainer *t, wx_train_summary *sum) {
    const wx_train_config *c = t->c;
    wx_dataset *ds = &t->ds;
    int64_t stop = t->o->max_steps > 0 && t->o->max_steps < t->total ? t->o->max_steps : t->total;
    int64_t epochs = (t->total + t->bpe - 1) / t->bpe;
    sum->first_step = t->first_step = t->st.step;
    sum->last_loss = NAN;
    while (t->st.step < stop) {
        wx_dataset_epoch_begin(ds, &t->st.order);
        wx_progress pr;
        char label[32];
        snprintf(label, sizeof label, "epoch %lld/%lld", (long long)t->st.epoch + 1, (long long)epochs);
        wx_progress_start(&pr, label, t->bpe, "batches");
        if (t->st.epoch_pos < t->bpe) WX_TRY(wx_dataset_prefetch(ds, t->st.epoch_pos));
        double t0 = wx_time_now();
        int64_t done0 = t->st.step;
        while (t->st.epoch_pos < t->bpe && t->st.step < stop) {
            /* host slot (pinned on CUDA) → async upload into the backend's slot; the other slot
             * pair belongs to the previous step, whose AdamW may still be running */
            float *hx, *htg, *x, *tg;
            WX_TRY(wx_batch_stage_host(&t->stage, &hx, &htg));
            WX_TRY(wx_dataset_batch(ds, t->st.epoch_pos, hx, htg));
            WX_TRY(wx_batch_stage_upload(&t->stage, &x, &tg));
            if (t->st.epoch_pos + 1 < t->bpe && t->st.step + 1 < stop)
                WX_TRY(wx_dataset_prefetch(ds, t->st.epoch_pos + 1));
            double loss = 0, gnorm = 0, lr = 0;
            WX_TRY(train_step(t, x, tg, &loss, &gnorm, &lr));
            t->st.epoch_pos++;
            sum->last_loss = loss;
            double dt = wx_time_now() - t0;
            double sps = dt > 0 ? (double)((t->st.step - done0) * c->batch_size) / dt : 0;
            if (t->metrics && (t->st.step % c->log_every == 0 || t->st.step == t->total)) {
                wx_metric_kv kv[] = {WX_M_STR("phase", "train"), WX_M_INT("step", t->st.step),
                                     WX_M_INT("epoch", t->st.epoch), WX_M_NUM("loss", loss),
                                     WX_M_NUM("lr", lr), WX_M_NUM("grad_norm", gnorm),
                                     WX_M_NUM("samples_per_s", sps), WX_M_INT("ranks", t->nranks),
                                     WX_M_NUM("comm_s", t->comm_s)};
                WX_TRY(wx_metrics_write(t->metrics, kv, t->nranks > 1 ? 9 : 7));
            }
            wx_progress_update(&pr, t->st.epoch_pos, "step %lld/%lld  loss %.4g  %.1f samples/s",
                               (long long)t->st.step, (long long)t->total, loss, sps);
            if (c->checkpoint_every && t->st.step % c->checkpoint_every == 0 &&
                t->st.epoch_pos < t->bpe && t->st.step < t->total) {
                wx_dataset_drain(ds); /* the prefetch of the next batch restarts below */
                WX_TRY(save(t, t->last_path));
                if (t->st.epoch_pos < t->bpe && t->st.step < stop)
                    WX_TRY(wx_dataset_prefetch(ds, t->st.epoch_pos));
            }
        }
        wx_progress_finish(&pr);
        wx_dataset_drain(ds);
        int epoch_end = t->st.epoch_pos == t->bpe;
        if (epoch_end || t->st.step == t->total) {
            if (epoch_end) {
                /* The checkpoint then starts the next epoch: its order state follows this one's. */
                t->st.epoch++;
                t->st.epoch_pos = 0;
                t->st.order = ds->next_order;
            }
            WX_TRY(validate_and_save(t));
        }
        WX_TRY(save(t, t->last_path));
    }
    sum->step = t->st.step;
    sum->total_steps = t->total;
    sum->best_loss = t->st.best_loss;
    sum->best_step = t->st.best_step;
    snprintf(sum->last_path, sizeof sum->last_path, "%s", t->last_path);
    snprintf(sum->best_path, sizeof sum->best_path, "%s", t->best_path);
    return WX_OK;
}

wx_status wx_train_run(const wx_train_config *c, const wx_train_opts *o, wx_train_summary *sum) {
    trainer t;
    memset(&t, 0, sizeof t);
    memset(sum, 0, sizeof *sum);
    t.c = c, t.o = o;
    wx_status s = setup(&t);
    if (s == WX_OK) {
        wx_log_info("training %s: %lld parameters, %lld training and %lld validation samples, "
                    "%lld batches of %lld per epoch, %lld steps (%lld done)",
                    wx_train_stage_name(c->stage), (long long)wx_params_total(t.m->params),
                    (long long)t.ds.ntrain, (long long)t.ds.nvalid, (long long)t.bpe,
                    (long long)c->batch_size, (long long)t.total, (long long)t.st.step);
        int buckets = wx_grad_sync_buckets(t.sync);
        double early = 0;
        const char *via = t.dev ? " (through host copies)" : "";
#if WX_HAVE_CUDA
        if (t.nccl) buckets = wx_nccl_sync_buckets(t.nccl), via = " (NCCL)";
#endif
        if (t.nranks > 1)
            wx_log_info("data parallel over %d ranks on %s: %lld samples per rank per step, "
                        "gradients in %d bucket(s)%s%s", t.nranks, t.be->name, (long long)t.batch,
                        buckets, via, t.zero1 ? ", AdamW state sharded (ZeRO-1)" : "");
        s = loop(&t, sum);
        early = wx_grad_sync_started_early(t.sync);
#if WX_HAVE_CUDA
        if (t.nccl) early = wx_nccl_sync_started_early(t.nccl);
#endif
        if (s == WX_OK && t.nranks > 1 && !t.zero1)
            wx_log_info("gradient all-reduce: %.1f of %d bucket(s) per step started during the backward",
                        early, buckets);
        if (s == WX_OK) s = debug_dump(&t, "params.last", t.m->params->data, t.m->params->len);
    }
    wx_status ms = wx_metrics_close(t.metrics);
    if (s == WX_OK) s = ms;
    teardown(&t);
    return s;
}
