/* The trainer's setup and teardown (trainer_priv.h): the backend and its settings, the model,
 * the data, the optimizer and gradient-sync buffers in the backend's memory, and the starting
 * point decided on rank 0 in host copies. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/wx_fs.h"
#include "core/wx_log.h"
#include "ops/wx_gemm.h"
#include "train/trainer_priv.h"
#include "backend/wx_cuda_api.h"
#if WX_HAVE_CUDA
#include "wx_cuda_backend.h" /* wx_cuda_precision */
#endif

static void make_groups(wx_trainer *t, double wd) {
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

static char *data_yaml(const wx_trainer *t) {
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    WX_ASSERT(f != NULL);
    const wx_dataset *ds = &t->ds;
    const wx_archive_meta *am = ds->meta;
    for (int k = 0; k < 2; k++) {
        int n = k ? ds->nout : ds->nin;
        const int *ch = k ? ds->cout : ds->cin;
        wx_ckpt_channel *c = wx_calloc((size_t)(n ? n : 1), sizeof *c);
        for (int i = 0; i < n; i++) {
            /* accum_s: the archive's period (the manifest reader fills in older archives') */
            const wx_archive_channel *a = &am->chan[ch[i]];
            c[i] = (wx_ckpt_channel){a->name, a->units, ds->mean[ch[i]], ds->std[ch[i]],
                                     am->diff_std ? am->diff_std[ch[i]] : 0.0, a->accum_s};
        }
        wx_ckpt_data_channels(f, k ? "channels_out" : "channels_in", c, n);
        free(c);
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
    wx_ckpt_data_grid(f, &ds->grid);
    wx_ckpt_data_string(f, "archive", t->c->archive);
    fclose(f);
    return s;
}

/* A host copy of n floats of backend memory (src itself on the CPU; free with host_put). */
wx_status wx_trainer_host_get(const wx_trainer *t, const float *src, int64_t n, float **out) {
    *out = (float *)src;
    if (!t->dev) return WX_OK;
    *out = wx_malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    wx_status s = t->be->copy_d2h(t->ctx, *out, src, sizeof(float) * (size_t)n);
    if (s != WX_OK) free(*out), *out = NULL;
    return s;
}

void wx_trainer_host_put(const wx_trainer *t, float *h, const float *src) {
    if (h != src) free(h);
    (void)t;
}

/* The data the model needs (normalisation, residual scales, statics, time step). */
static wx_status attach_data(wx_trainer *t) {
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
static wx_status loss_setup(wx_trainer *t) {
    const wx_train_config *c = t->c;
    wx_train_model *m = t->m;
    wx_loss_kind kind = c->loss;
    if (kind == WX_LOSS_AUTO) kind = m->ops->loss_weights ? WX_LOSS_GRAPHCAST : WX_LOSS_REL_L2;
    if (kind == WX_LOSS_GRAPHCAST && !m->ops->loss_weights)
        return wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s.loss.type': graphcast is GraphCast's "
                            "loss; this model is %s", c->path, c->loss_line,
                            wx_train_stage_name(c->stage), m->family);
    wx_train_loss_init(&t->loss, kind == WX_LOSS_GRAPHCAST ? WX_LOSS_LATW_MSE : kind, t->ctx, t->be,
                       m->out_channels, m->h, m->w, t->ds.wlat,
                       c->nweights ? c->channel_weights : NULL);
    t->loss.kind = kind;
    if (kind == WX_LOSS_GRAPHCAST) WX_TRY(m->ops->loss_weights(m, t->loss.wlat, t->loss.wch));
    return WX_OK;
}

/* Called by the model's last backward pass (wx_params_grads_final_from): grad[lo, len) is final, so
 * its buckets' all-reduces start now, and the ones already started get a chance to progress. */
static wx_status grad_ready(void *arg, int64_t lo) {
    wx_grad_sync *s = arg;
    WX_TRY(wx_grad_sync_ready(s, lo));
    return wx_grad_sync_progress(s);
}

#if WX_HAVE_CUDA
static wx_status nccl_ready(void *arg, int64_t lo) { return wx_cuda()->nccl_sync_ready(arg, lo); }
/* ZeRO-1 through NCCL: the sync was made over the gradient buffer and knows its length. */
static wx_status nccl_reduce_scatter(void *st, float *grad, int64_t len) {
    (void)grad, (void)len;
    return wx_cuda()->nccl_sync_reduce_scatter(st);
}
static wx_status nccl_allgather(void *st, float *data, int64_t len) {
    (void)len;
    return wx_cuda()->nccl_sync_allgather(st, data);
}
#endif

/* The backend and its settings: the config's device (or the test hook's backend), one GPU per
 * rank on its node, the GEMM precision. What cannot run on a device backend is refused here,
 * before any data is read. */
static wx_status setup_backend(wx_trainer *t, const char *what) {
    const wx_train_config *c = t->c;
    if (t->o->backend) t->be = t->o->backend; /* tests only: not reachable from the CLI */
    else WX_TRY(wx_backend_by_name(c->device, what, &t->be));
    t->dev = t->be->on_device;
    if (c->bf16 && !wx_backend_is_cuda(t->be))
        return wx_error_set(WX_ERR_USAGE, "%s: key 'precision': bf16 needs the CUDA backend; "
                            "backend '%s' computes in fp32", c->path, t->be->name);
    if (!t->dev) return WX_OK;
#if WX_HAVE_CUDA
    if (wx_backend_is_cuda(t->be)) { /* one process per GPU: the rank's index on its node picks the device */
        const wx_cuda_api *cuda = wx_cuda();
        if (!cuda) return WX_ERR_RUN;
        int count = 0;
        WX_TRY(cuda->device_count(&count));
        if (count < 1) return wx_error_set(WX_ERR_RUN, "%s: no CUDA device visible", what);
        WX_TRY(cuda->ctx_attach(t->ctx, wx_dist_local_rank() % count));
        WX_TRY(cuda->set_precision(t->ctx, c->bf16 ? WX_CUDA_BF16 : WX_CUDA_FP32));
    }
#endif
    return WX_OK;
}

/* The gradient all-reduce under MPI: host MPI for host gradients; on a device, NCCL when the
 * backend is CUDA (buckets start during the backward, on a side stream; with ZeRO-1 the shards'
 * reduce-scatter and all-gather), else through a host copy of the gradient (a device backend
 * without NCCL: the test simulator, unless a test gives device collectives for ZeRO-1). */
static wx_status setup_grad_sync(wx_trainer *t) {
    wx_params *p = t->m->params;
    const int64_t bucket = t->o->bucket_bytes > 0 ? t->o->bucket_bytes : WX_DIST_BUCKET_BYTES_DEFAULT;
    if (!t->dev) {
        if (t->nranks < 2) return wx_grad_sync_create(p->grad, p->len, bucket, &t->sync);
        /* The sync places the gradient (node shared memory when the ranks share a node, so the
         * reductions read the other ranks' gradients in place), and with the ring its buckets
         * start while the backward goes on (not with ZeRO-1: it reduce-scatters at the end). */
        WX_TRY(wx_grad_sync_create(NULL, p->len, bucket, &t->sync));
        wx_params_borrow_grad(p, wx_grad_sync_buffer(t->sync));
        if (!t->zero1) p->grad_ready = grad_ready, p->grad_ready_arg = t->sync;
        return WX_OK;
    }
    /* (a sync over the device buffer only keeps the clock: it never touches the memory) */
    if (t->nranks < 2) return wx_grad_sync_create(p->grad, p->len, bucket, &t->sync);
    if (t->zero1 && t->o->dev_coll) { /* a test's device collectives */
        t->dcoll = *t->o->dev_coll;
        return wx_grad_sync_create(p->grad, p->len, bucket, &t->sync);
    }
#if WX_HAVE_CUDA
    if (wx_backend_is_cuda(t->be)) { /* NCCL on the device buffers */
        WX_TRY(wx_grad_sync_nccl_create(t->ctx, p->grad, p->len, bucket, &t->nccl));
        if (t->zero1) /* the shards' reduce-scatter and all-gather at the end of the step */
            t->dcoll = (wx_train_dev_coll){"NCCL", t->nccl, nccl_reduce_scatter, nccl_allgather};
        else /* buckets start during the backward */
            p->grad_ready = nccl_ready, p->grad_ready_arg = t->nccl;
        return wx_grad_sync_create(p->grad, p->len, bucket, &t->sync);
    }
#endif
    /* Through host copies (a device backend without NCCL: the test simulator): the sync's own host
     * buffer, node shared memory where the ranks share a node, with the CPU run's sums. ZeRO-1
     * also brings the parameters back through a host copy for the all-gather. */
    WX_TRY(wx_grad_sync_create(NULL, p->len, bucket, &t->sync));
    t->hgrad = wx_grad_sync_buffer(t->sync);
    if (t->zero1) t->hdata = wx_calloc((size_t)p->len + 1, sizeof(float));
    return WX_OK;
}

/* What every rank does on its own: model, data, buffers. */
static wx_status setup_local(wx_trainer *t) {
    const wx_train_config *c = t->c;
    t->rank = wx_dist_rank(), t->nranks = wx_dist_size();
    if (c->batch_size % t->nranks)
        return wx_error_set(WX_ERR_USAGE, "%s: key '%s.batch_size': the global batch of %lld samples "
                            "does not divide over %d ranks (each rank takes batch_size / ranks); use "
                            "a rank count that divides it", c->path, wx_train_stage_name(c->stage),
                            (long long)c->batch_size, t->nranks);
    int threads = t->o->threads > 0 ? t->o->threads : c->threads;
    t->ctx = wx_ctx_create(threads);
    wx_blas_one_thread(0); /* ops/wx_gemm.h: a stopped pool stays stopped */
    {
        char what[WX_TRAIN_PATH_MAX + 48];
        snprintf(what, sizeof what, "%s: line %d: key 'device'", c->path, c->device_line);
        WX_TRY(setup_backend(t, what));
    }
    t->batch = c->batch_size / t->nranks;
    t->valid_batch = c->valid_batch > 0 ? c->valid_batch : t->batch;
    int64_t maxb = t->batch > t->valid_batch ? t->batch : t->valid_batch;
    { /* the archive before the model: a missing archive is the error to report, not the memory a
       * paper-size model cannot get (the dataset opens only once the model is built) */
        wx_archive_meta am;
        wx_status as = wx_archive_read_manifest(c->archive, &am);
        if (as != WX_OK) return wx_error_wrap(as, "%s: key 'data.archive': ", c->path);
        wx_archive_meta_free(&am);
    }
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
    if (c->opt.warmup >= t->total && t->rank == 0)
        wx_log_warn("%s: %s.optimizer.warmup %lld is not below the stage's %lld steps: the learning "
                    "rate never reaches lr", c->path, wx_train_stage_name(c->stage),
                    (long long)c->opt.warmup, (long long)t->total);

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

/* The same config, another model: a precip stage whose wind checkpoint was replaced (its crc32
 * is in the model description). Names the first line that differs. */
static void warn_model_changed(const char *from, const char *was, const char *now) {
    const char *a = was, *b = now;
    while (*a && *a == *b) a++, b++;
    while (a > was && a[-1] != '\n') a--, b--;
    int la = (int)strcspn(a, "\n"), lb = (int)strcspn(b, "\n");
    wx_log_warn("--resume %s: the model differs from the one it was trained as (`%.*s` now, `%.*s` "
                "in the checkpoint: a replaced wind checkpoint?); the run continues with the new one",
                from, lb, b, la, a);
}

/* --metrics names a file to write: not one of the run's inputs or checkpoints (a slip of the
 * tab key would overwrite the config or the archive's manifest; a file inside any archive
 * folder is refused by wx_output_path_check), and not an earlier run's rows unless --resume (which appends) or --overwrite says so. */
static wx_status check_metrics_path(const wx_trainer *t) {
    const wx_train_config *c = t->c;
    const char *mp = t->o->metrics;
    if (!mp) return WX_OK;
    char manifest[WX_TRAIN_PATH_MAX + 16];
    snprintf(manifest, sizeof manifest, "%s/manifest.json", c->archive);
    const char *const ins[] = {c->path, c->model_path, manifest, t->o->resume, c->init_from,
                               c->wind_ckpt, t->last_path, t->best_path};
    for (size_t k = 0; k < sizeof ins / sizeof ins[0]; k++)
        if (ins[k] && ins[k][0]) WX_TRY(wx_output_not_input(mp, ins[k], "--metrics"));
    struct stat m;
    if (!t->o->resume && !t->o->overwrite && stat(mp, &m) == 0 && S_ISREG(m.st_mode) && m.st_size > 0)
        return wx_error_set(WX_ERR_USAGE, "--metrics %s already holds an earlier run's rows, which "
                            "a fresh run would replace: continue that run with --resume, start "
                            "afresh with --overwrite, or name another file", mp);
    return WX_OK;
}

/* A run resumed from another folder's checkpoint would replace this folder's best.ckpt at its
 * first validation: refused unless --overwrite (checked once that checkpoint reads). */
static wx_status resume_here(const wx_trainer *t) {
    const char *const paths[] = {t->best_path, t->last_path};
    const char *resume = t->o->resume;
    if (!resume || t->o->overwrite || wx_fs_same_folder(resume, t->last_path)) return WX_OK;
    for (int k = 0; k < 2; k++)
        if (access(paths[k], F_OK) == 0)
            return wx_error_set(WX_ERR_USAGE, "%s: %s already exists from an earlier run, and a run "
                                "resumed from another folder's checkpoint would replace it: resume "
                                "from %s, replace it with --overwrite, or set another checkpoint_dir",
                                t->c->path, paths[k], t->last_path);
    return WX_OK;
}

/* --metrics of a resumed run: a validation row at the checkpoint's best step with another loss
 * is another run's file, which would lose its later rows to the trim and get this run's appended:
 * refused. A missing row proves nothing (the run may have had no --metrics then, or its best was
 * a --max-steps stop's, never written). */
static wx_status metrics_are_this_runs(const wx_trainer *t, const wx_ckpt_state *st) {
    const char *mp = t->o->metrics;
    if (!mp || st->best_step < 0) return WX_OK;
    FILE *f = fopen(mp, "r");
    if (!f) return WX_OK; /* new, or reported by the trim */
    char *line = NULL;
    size_t cap = 0;
    double step, loss, other = NAN;
    while (isnan(other) && getline(&line, &cap, f) > 0)
        if (strstr(line, "\"valid\"") && wx_trainer_row_number(line, "step", &step) &&
            (int64_t)step == st->best_step && wx_trainer_row_number(line, "loss", &loss) &&
            fabs(loss - st->best_loss) > 1e-7 * fabs(st->best_loss) + 1e-30) /* 9 digits written */
            other = loss;
    free(line);
    fclose(f);
    if (isnan(other)) return WX_OK;
    return wx_error_set(WX_ERR_USAGE, "--metrics %s: its validation of step %lld has loss %.9g, the "
                        "run of %s had %.9g: another run's file? name that run's file or a new one",
                        mp, (long long)st->best_step, other, t->o->resume, st->best_loss);
}

/* --overwrite, once the starting point is good: the earlier run's checkpoints go now, so that a
 * run killed before its first validation leaves no best.ckpt of the earlier run beside its own
 * last.ckpt (a finetune's init_from would start from the wrong model). */
static void clear_earlier(const wx_trainer *t, const char *from) {
    const char *const paths[] = {t->best_path, t->last_path};
    /* a run resumed from this folder continues that run: its best.ckpt is its own */
    if (!t->o->overwrite || (t->o->resume && wx_fs_same_folder(t->o->resume, t->last_path))) return;
    for (int k = 0; k < 2; k++) {
        struct stat a, b; /* the starting point itself (an init_from of this folder) stays */
        int is_from = from && stat(from, &a) == 0 && stat(paths[k], &b) == 0 &&
                      a.st_dev == b.st_dev && a.st_ino == b.st_ino;
        if (!is_from && unlink(paths[k]) == 0)
            wx_log_info("train: removed %s of the earlier run (--overwrite)", paths[k]);
    }
}

/* Rank 0: the starting point (fresh, init_from weights or a resumed run) and the output files.
 * hp (the parameters), m and v are full (params->len) host buffers here. */
static wx_status setup_root(wx_trainer *t, float *hp, float *adam_m, float *adam_v) {
    const wx_train_config *c = t->c;
    wx_train_model *m = t->m;
    /* A fresh run into a folder holding an earlier run's checkpoints would replace its best.ckpt
     * at the first validation: refused unless asked for (a resumed one: resume_here below). */
    const char *const paths[] = {t->best_path, t->last_path};
    for (int k = 0; k < 2 && !t->o->resume && !t->o->overwrite; k++)
        if (access(paths[k], F_OK) == 0)
            return wx_error_set(WX_ERR_USAGE, "%s: %s already exists from an earlier run, and a "
                                "fresh run would replace it: continue that run with --resume %s, "
                                "start afresh with --overwrite, or set another checkpoint_dir",
                                c->path, paths[k], t->last_path);
    WX_TRY(check_metrics_path(t));
    if (wx_output_dir_check(c->checkpoint_dir, "checkpoint_dir") != WX_OK)
        return wx_error_wrap(WX_ERR_USAGE, "%s: ", c->path);
    WX_TRY(wx_mkdir_p(c->checkpoint_dir));
    const char *from = t->o->resume ? t->o->resume : c->init_from[0] ? c->init_from : NULL;
    if (from) {
        wx_checkpoint ck;
        char what[WX_TRAIN_PATH_MAX + 64];
        snprintf(what, sizeof what, "%s %s", t->o->resume ? "--resume" : "init_from", from);
        wx_status s = wx_checkpoint_read(from, &ck);
        if (s == WX_OK) s = wx_trainer_check_channels(t, what, ck.data_text);
        if (s == WX_OK) s = wx_checkpoint_load(&ck, WX_CKPT_PARAM, m->params, hp);
        if (s == WX_OK && t->o->resume) {
            if (!ck.has_state || strcmp(ck.st.stage, t->st.stage))
                s = wx_error_set(WX_ERR_USAGE, "--resume %s: the checkpoint is from stage '%s', this "
                                 "run is stage '%s' (use the stage's init_from to start a new stage "
                                 "from it)", from, ck.has_state ? ck.st.stage : "?", t->st.stage);
            if (s == WX_OK) s = resume_here(t);
            if (s == WX_OK) s = metrics_are_this_runs(t, &ck.st);
            if (s == WX_OK) s = wx_checkpoint_load(&ck, WX_CKPT_ADAM_M, m->params, adam_m);
            if (s == WX_OK) s = wx_checkpoint_load(&ck, WX_CKPT_ADAM_V, m->params, adam_v);
            if (s == WX_OK && ck.st.total_steps != t->total)
                wx_log_warn("--resume %s: the stage now has %lld steps, the checkpoint's run had "
                            "%lld (another archive, batch or epochs): its learning-rate schedule "
                            "and sample order are not an uninterrupted run's", from,
                            (long long)t->total, (long long)ck.st.total_steps);
            if (s == WX_OK) {
                t->st = ck.st;
                t->st.total_steps = t->total;
                if (!ck.config_text || strcmp(ck.config_text, c->text))
                    wx_log_warn("%s: the config differs from the one this checkpoint was trained "
                                "with; the run continues with the new one (not bit-identical)", from);
                else if (ck.model_text && strcmp(ck.model_text, t->model_text))
                    warn_model_changed(from, ck.model_text, t->model_text);
                if (ck.st.epoch_pos > t->bpe)
                    s = wx_error_set(WX_ERR_RUN, "%s: %lld batches done in the epoch, but an epoch "
                                     "now has %lld", from, (long long)ck.st.epoch_pos,
                                     (long long)t->bpe);
            }
        }
        if (s == WX_OK) {
            wx_log_info("%s %s (step %lld)", t->o->resume ? "resuming from" : "weights from", from,
                        (long long)(ck.has_state ? ck.st.step : 0));
            wx_trainer_warn_stats(t, what, ck.data_text);
        }
        wx_checkpoint_free(&ck);
        if (s != WX_OK && !t->o->resume)
            return wx_error_wrap(s, "%s: %s.init_from: ", c->path, wx_train_stage_name(c->stage));
        WX_TRY(s);
    }
    clear_earlier(t, from);
    if (!from && c->stage == WX_STAGE_FINETUNE)
        wx_log_warn("%s: finetune from random weights: set finetune.init_from to the pretrain "
                    "checkpoint", c->path);
    if (t->o->metrics && t->o->resume) WX_TRY(wx_trainer_metrics_trim(t->o->metrics, t->st.step));
    if (t->o->metrics)
        WX_TRY(t->o->resume ? wx_metrics_open_append(&t->metrics, t->o->metrics)
                            : wx_metrics_open(&t->metrics, t->o->metrics));
    return WX_OK;
}

/* Every rank builds its model, then rank 0 decides the starting state and broadcasts it: the
 * parameters (fresh ones too, so no rank depends on its own initialisation), the AdamW state
 * (scattered by shard with ZeRO-1) and the step/epoch/data-order state. */
wx_status wx_trainer_setup(wx_trainer *t) {
    WX_TRY(wx_dist_agree(setup_local(t)));
    /* Collective (communicators, a shared window): only once every rank's local setup went well. */
    WX_TRY(wx_dist_agree(setup_grad_sync(t)));
    wx_params *p = t->m->params;
    const size_t bytes = sizeof(float) * (size_t)p->len;
    int split = t->zero1;
    /* On a device the start is decided and broadcast in host copies, then uploaded once. */
    float *hp = NULL, *m = t->adam_m, *v = t->adam_v;
    WX_TRY(wx_dist_agree(wx_trainer_host_get(t, p->data, p->len, &hp)));
    if (split || t->dev) {
        m = t->rank == 0 || t->dev ? wx_calloc((size_t)p->len + 1, sizeof(float)) : NULL;
        v = t->rank == 0 || t->dev ? wx_calloc((size_t)p->len + 1, sizeof(float)) : NULL;
    }
    /* where this rank's AdamW shard lands: the moments themselves, or host copies on a device */
    float *ms = t->adam_m, *vs = t->adam_v;
    if (split && t->dev) {
        ms = wx_calloc((size_t)t->shard_len + 1, sizeof(float));
        vs = wx_calloc((size_t)t->shard_len + 1, sizeof(float));
    }
    wx_status s = wx_dist_agree(t->rank == 0 ? setup_root(t, hp, m, v) : WX_OK);
    if (s == WX_OK) s = wx_dist_bcast(hp, bytes, 0);
    if (s == WX_OK) s = wx_dist_bcast(&t->st, sizeof t->st, 0);
    if (s == WX_OK && split) s = wx_dist_scatter_shards(m, ms, p->len, 0);
    if (s == WX_OK && split) s = wx_dist_scatter_shards(v, vs, p->len, 0);
    if (s == WX_OK && !split) s = wx_dist_bcast(m, bytes, 0);
    if (s == WX_OK && !split) s = wx_dist_bcast(v, bytes, 0);
    if (s == WX_OK && t->dev) {
        const size_t ab = split ? sizeof(float) * (size_t)t->shard_len : bytes;
        s = t->be->copy_h2d(t->ctx, p->data, hp, bytes);
        if (s == WX_OK) s = t->be->copy_h2d(t->ctx, t->adam_m, split ? ms : m, ab);
        if (s == WX_OK) s = t->be->copy_h2d(t->ctx, t->adam_v, split ? vs : v, ab);
        s = wx_dist_agree(s);
    }
    if (split && t->dev) free(ms), free(vs);
    if (split || t->dev) free(m), free(v);
    wx_trainer_host_put(t, hp, p->data);
    return s;
}

void wx_trainer_teardown(wx_trainer *t) {
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
    if (t->nccl) wx_cuda()->nccl_sync_destroy(t->nccl); /* a sync exists only if the module does */
#endif
    wx_ctx_destroy(t->ctx);
    /* Freeing a shared-memory sync is collective: a rank that failed alone leaves it to the process
     * end, since the CLI aborts the job while the other ranks wait in the all-reduce. */
    if (!t->failed_alone) wx_grad_sync_destroy(t->sync);
    free(t->hdata); /* hgrad belongs to the sync */
    free(t->groups);
    free(t->model_text);
    free(t->data_text);
}
