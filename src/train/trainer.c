#include "train/trainer.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "core/wx_fs.h"
#include "core/wx_log.h"
#include "core/wx_progress.h"
#include "core/wx_timer.h"
#include "ops/wx_ops.h"
#include "backend/wx_cuda_api.h"
#include "train/trainer_priv.h"
#include "train/validate.h"
#include "train/watchdog.h"

/* The parameters must be the same bits on every rank; a checkpoint is where a silent divergence
 * would be frozen, so it is checked there (crc32 of each rank's parameters). */
static wx_status check_ranks_agree(const wx_trainer *t, const float *hp) {
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

/* Rank 0 writes; with ZeRO-1 it first collects the AdamW shards, so the file is the same as a
 * one-process run's and any rank count can resume from it. After device training the file is
 * written from host copies: the same bytes as a CPU run's, loadable by either backend. */
static wx_status save(wx_trainer *t, const char *path) {
    const wx_params *p = t->m->params;
    float *hp = NULL;
    WX_TRY(wx_dist_agree(wx_trainer_host_get(t, p->data, p->len, &hp)));
    wx_status s0 = wx_dist_agree(check_ranks_agree(t, hp));
    if (s0 != WX_OK) {
        wx_trainer_host_put(t, hp, p->data);
        return s0;
    }
    int64_t len = p->len;
    /* This rank's moments (its shard with ZeRO-1) on the host: themselves, or copies on a device
     * (only rank 0's matter without ZeRO-1). */
    float *ms = t->adam_m, *vs = t->adam_v, *m, *v;
    wx_status s = WX_OK;
    if (t->dev) {
        ms = vs = NULL;
        if (t->zero1 || t->rank == 0) s = wx_trainer_host_get(t, t->adam_m, t->shard_len, &ms);
        if ((t->zero1 || t->rank == 0) && s == WX_OK) s = wx_trainer_host_get(t, t->adam_v, t->shard_len, &vs);
    }
    m = ms, v = vs;
    if (s == WX_OK && t->zero1) {
        m = t->rank == 0 ? wx_malloc(sizeof(float) * (size_t)len) : NULL;
        v = t->rank == 0 ? wx_malloc(sizeof(float) * (size_t)len) : NULL;
        s = wx_dist_gather_shards(ms, m, len, 0);
        if (s == WX_OK) s = wx_dist_gather_shards(vs, v, len, 0);
        if (s != WX_OK) {
            free(m), free(v);
            if (t->dev) free(ms), free(vs);
            wx_trainer_host_put(t, hp, p->data);
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
    if (m != ms) free(m), free(v);         /* gathered (ZeRO-1) */
    if (ms != t->adam_m) free(ms), free(vs); /* host copies of device moments */
    wx_trainer_host_put(t, hp, p->data);
    return wx_dist_agree(s);
}

/* Rollout steps of optimizer step `step` (0-based): rollout_start, one more every rollout_every
 * steps, up to rollout_steps (the GraphCast fine-tuning curriculum); fixed when rollout_every = 0. */
static int64_t rollout_at(const wx_train_config *c, int64_t step) {
    if (c->rollout_every <= 0) return c->rollout_steps;
    int64_t k = c->rollout_start + step / c->rollout_every;
    return k < c->rollout_steps ? k : c->rollout_steps;
}

/* Test hooks, off unless set. WXCAST_FAULT=RANK:STEP:MODE makes rank RANK fail in step STEP:
 * `batch` as a failed batch before the step's status agreement (every rank stops cleanly), or
 * after it, with its peers waiting in the gradient all-reduce: `kill` (SIGKILL), `exit` (_exit(3)
 * without MPI_Finalize), `error` (a returned error nobody else knows of: the CLI aborts the job).
 * WXCAST_DEBUG_DUMP=DIR makes every rank write its averaged gradient of the run's first step and
 * its final parameters (raw float32, <what>.rank<r>). */
static wx_status fault_hook(const wx_trainer *t, int agreed) {
    const char *f = getenv("WXCAST_FAULT");
    int rank;
    long long step;
    char mode[16];
    if (!f || sscanf(f, "%d:%lld:%15s", &rank, &step, mode) != 3) return WX_OK;
    if (rank != t->rank || step != t->st.step + 1 || agreed != !!strcmp(mode, "batch")) return WX_OK;
    wx_log_warn("WXCAST_FAULT: %s in step %lld", mode, step);
    if (!strcmp(mode, "kill")) raise(SIGKILL);
    if (!strcmp(mode, "exit")) _exit(3);
    if (!strcmp(mode, "hang")) /* alive but silent, like a stuck read: the others' watchdog ends it */
        for (;;) pause();
    return wx_error_set(WX_ERR_RUN, "step %lld: fault injected by WXCAST_FAULT (%s)", step, mode);
}

/* buf (n): backend memory. */
static wx_status debug_dump(const wx_trainer *t, const char *what, const float *buf, int64_t n) {
    const char *dir = getenv("WXCAST_DEBUG_DUMP");
    if (!dir || !*dir) return WX_OK;
    char path[WX_TRAIN_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s.rank%d", dir, what, t->rank);
    float *h;
    WX_TRY(wx_trainer_host_get(t, buf, n, &h));
    wx_atomic_file f;
    wx_status s = wx_atomic_open(&f, path);
    if (s == WX_OK && fwrite(h, sizeof(float), (size_t)n, f.fp) != (size_t)n) {
        wx_atomic_abort(&f);
        s = wx_error_set(WX_ERR_RUN, "%s: cannot write", path);
    } else if (s == WX_OK) {
        s = wx_atomic_commit(&f);
    }
    wx_trainer_host_put(t, h, buf);
    return s;
}

/* The mean gradient over the global batch (this rank's shard of it with ZeRO-1) and its global
 * squared norm, identical on every rank. */
static wx_status reduce_grads(wx_trainer *t, double *sumsq) {
    wx_params *p = t->m->params;
    *sumsq = 0;
    if (t->zero1 && t->dcoll.reduce_scatter) { /* on the device buffers (NCCL) */
        WX_TRY(t->dcoll.reduce_scatter(t->dcoll.state, p->grad, p->len));
        WX_TRY(t->be->mem_zero(t->ctx, t->dsumsq, sizeof(double)));
        WX_TRY(t->be->grad_norm_forward(t->ctx, t->dsumsq, p->grad + t->shard_off, t->shard_len));
        WX_TRY(t->be->copy_d2h(t->ctx, sumsq, t->dsumsq, sizeof(double)));
        return wx_dist_allreduce_f64(sumsq, 1, WX_DIST_SUM);
    }
    if (t->zero1) { /* on a device through the host: the whole gradient down, the shard back */
        const size_t shard = sizeof(float) * (size_t)t->shard_len;
        if (t->dev) WX_TRY(t->be->copy_d2h(t->ctx, t->hgrad, p->grad, sizeof(float) * (size_t)p->len));
        WX_TRY(wx_grad_sync_reduce_scatter(t->sync));
        if (t->dev)
            WX_TRY(t->be->copy_h2d(t->ctx, p->grad + t->shard_off, t->hgrad + t->shard_off, shard));
        if (!wx_grad_sync_sumsq(t->sync, sumsq)) { /* the shared-memory reduction has it already */
            if (!t->dev) {
                WX_TRY(t->be->grad_norm_forward(t->ctx, sumsq, p->grad + t->shard_off, t->shard_len));
            } else {
                WX_TRY(t->be->mem_zero(t->ctx, t->dsumsq, sizeof(double)));
                WX_TRY(t->be->grad_norm_forward(t->ctx, t->dsumsq, p->grad + t->shard_off, t->shard_len));
                WX_TRY(t->be->copy_d2h(t->ctx, sumsq, t->dsumsq, sizeof(double)));
            }
        }
        return wx_dist_allreduce_f64(sumsq, 1, WX_DIST_SUM);
    }
    if (!t->dev) {
        WX_TRY(wx_grad_sync_finish(t->sync));
        if (wx_grad_sync_sumsq(t->sync, sumsq)) return WX_OK;
        return t->be->grad_norm_forward(t->ctx, sumsq, p->grad, p->len);
    }
    const size_t bytes = sizeof(float) * (size_t)p->len;
#if WX_HAVE_CUDA
    if (t->nccl) WX_TRY(wx_cuda()->nccl_sync_finish(t->nccl)); /* the compute stream waits for it */
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
static wx_status train_step(wx_trainer *t, const float *x, const float *tg, double *loss,
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
    {   /* the device paths wait for NCCL inside copies, not in an MPI call */
        WX_WATCHDOG_SCOPE("the gradient all-reduce");
        WX_TRY(reduce_grads(t, &sumsq));
    }
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
        WX_WATCHDOG_SCOPE("the parameter all-gather");
        double c1 = wx_time_now();
        if (!t->dev) {
            WX_TRY(wx_grad_sync_allgather(t->sync, p->data));
        } else if (t->dcoll.allgather) { /* on the device (NCCL) */
            WX_TRY(t->dcoll.allgather(t->dcoll.state, p->data, p->len));
        } else { /* this rank's updated shard down, everyone's back up */
            const size_t shard = sizeof(float) * (size_t)t->shard_len;
            WX_TRY(t->be->copy_d2h(t->ctx, t->hdata + t->shard_off, p->data + t->shard_off, shard));
            WX_TRY(wx_grad_sync_allgather(t->sync, t->hdata));
            WX_TRY(t->be->copy_h2d(t->ctx, p->data, t->hdata, sizeof(float) * (size_t)p->len));
        }
        t->comm_s += wx_time_now() - c1;
    }
    t->st.step++;
    return WX_OK;
}

/* at_stop: the validation of a run that --max-steps stops before its stage's first validation, so
 * that best.ckpt exists (a next stage's init_from names it). It does not count in the run's state:
 * last.ckpt and the --metrics file stay those of an uninterrupted run, so a --resume continues
 * bit-identically, and its next validation (the first that counts, best against nothing) replaces
 * best.ckpt. best.ckpt itself carries this validation as its best. */
static wx_status validate_and_save(wx_trainer *t, int at_stop, double *loss) {
    wx_dataset *ds = &t->ds;
    wx_valid_result r;
    double t0 = wx_time_now();
    wx_watchdog_phase("the validation after step %lld", (long long)t->st.step);
    WX_TRY(wx_validate(t->m, ds, &t->loss, t->c->leads, t->c->nleads, t->c->valid_max_samples,
                       t->valid_batch, &r));
    const wx_ckpt_state kept = t->st;
    *loss = r.loss;
    int best = at_stop || r.loss < t->st.best_loss;
    if (best) t->st.best_loss = r.loss, t->st.best_step = t->st.step;
    char line[1024];
    int used = snprintf(line, sizeof line, "step %lld: valid loss %.6g%s (%lld samples, %.1f s)",
                        (long long)t->st.step, r.loss,
                        at_stop ? " (--max-steps stop: best.ckpt until the next validation)"
                        : best  ? " (best)"
                                : "",
                        (long long)r.samples, wx_time_now() - t0);
    for (int l = 0; l < r.nleads && used < (int)sizeof line - 64; l++)
        for (int c = 0; c < r.nch && c < 4 && used < (int)sizeof line - 64; c++)
            used += snprintf(line + used, sizeof line - (size_t)used, "%s %s@%lldh %.4g",
                             l || c ? "," : "; rmse", ds->meta->chan[ds->cout[c]].name,
                             (long long)(r.leads[l] * t->c->time_step_s / 3600), r.rmse[l * r.nch + c]);
    wx_log_info("%s", line);
    wx_status s = WX_OK;
    if (t->metrics && !at_stop) {
        int n = 5 + r.nleads * r.nch;
        wx_metric_kv *kv = wx_calloc((size_t)n, sizeof *kv);
        char (*keys)[128] = wx_calloc((size_t)n, 128);
        kv[0] = WX_M_STR("phase", "valid");
        kv[1] = WX_M_INT("step", t->st.step);
        /* the epoch the validated step belongs to, 0-based as in the train rows (at an epoch's
         * end the state has already moved on to the next one) */
        kv[2] = WX_M_INT("epoch", t->st.epoch_pos == 0 && t->st.epoch > 0 ? t->st.epoch - 1 : t->st.epoch);
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
    if (best) s = save(t, t->best_path);
    if (at_stop) t->st = kept;
    return s;
}

static wx_status loop(wx_trainer *t, wx_train_summary *sum) {
    const wx_train_config *c = t->c;
    wx_dataset *ds = &t->ds;
    int64_t stop = t->o->max_steps > 0 && t->o->max_steps < t->total ? t->o->max_steps : t->total;
    int64_t epochs = (t->total + t->bpe - 1) / t->bpe;
    sum->first_step = t->first_step = t->st.step;
    sum->last_loss = NAN;
    double vloss, stop_loss = NAN; /* the validation at a --max-steps stop (validate_and_save) */
    const double run_t0 = wx_time_now();
    const int64_t run_step0 = t->st.step;
    while (t->st.step < stop) {
        wx_dataset_epoch_begin(ds, &t->st.order);
        wx_progress pr;
        char label[32], run_eta[48] = "";
        snprintf(label, sizeof label, "epoch %lld/%lld", (long long)t->st.epoch + 1, (long long)epochs);
        /* the batches this process runs in this epoch: not those a resumed run did before it
         * (its rate and ETA counted them over the time since the resume), nor those past a
         * `steps:` or --max-steps stop in the middle of the epoch */
        const int64_t pos0 = t->st.epoch_pos;
        const int64_t left = stop - t->st.step;
        wx_progress_start(&pr, label, (t->bpe - pos0 < left ? t->bpe - pos0 : left), "batches");
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
            double loss = 0, gnorm = 0, lr = 0, s0 = wx_time_now();
            wx_watchdog_phase("training step %lld", (long long)t->st.step + 1);
            WX_TRY(train_step(t, x, tg, &loss, &gnorm, &lr));
            /* the optimizer step alone: samples_per_s restarts every epoch and also carries the
             * batch reads, so throughput comparisons (weak scaling) need this one */
            double step_s = wx_time_now() - s0;
            t->st.epoch_pos++;
            sum->last_loss = loss;
            double dt = wx_time_now() - t0;
            double sps = dt > 0 ? (double)((t->st.step - done0) * c->batch_size) / dt : 0;
            /* the rollout length of this step: a curriculum (rollout_every) changes it, and the
             * loss sums over it, so a jump in the loss at a change needs it beside the loss */
            const int64_t k_roll = rollout_at(c, t->st.step - 1);
            if (stop - t->st.step > t->bpe - t->st.epoch_pos) { /* more epochs to come */
                char d[16];
                wx_progress_format_duration(d, sizeof d, (double)(stop - t->st.step) *
                                            (wx_time_now() - run_t0) / (double)(t->st.step - run_step0));
                snprintf(run_eta, sizeof run_eta, "  run ETA %s", d);
            } else {
                run_eta[0] = 0;
            }
            if (t->metrics && (t->st.step % c->log_every == 0 || t->st.step == t->total)) {
                wx_metric_kv kv[] = {WX_M_STR("phase", "train"), WX_M_INT("step", t->st.step),
                                     WX_M_INT("epoch", t->st.epoch), WX_M_NUM("loss", loss),
                                     WX_M_NUM("lr", lr), WX_M_NUM("grad_norm", gnorm),
                                     WX_M_NUM("samples_per_s", sps), WX_M_NUM("step_s", step_s),
                                     WX_M_INT("rollout_steps", k_roll), WX_M_INT("ranks", t->nranks),
                                     WX_M_NUM("comm_s", t->comm_s)};
                WX_TRY(wx_metrics_write(t->metrics, kv, t->nranks > 1 ? 11 : 9));
            }
            if (c->rollout_steps > 1)
                wx_progress_update(&pr, t->st.epoch_pos - pos0, "step %lld/%lld  rollout %lld  "
                                   "loss %.4g  %.1f samples/s%s", (long long)t->st.step,
                                   (long long)t->total, (long long)k_roll, loss, sps, run_eta);
            else
                wx_progress_update(&pr, t->st.epoch_pos - pos0, "step %lld/%lld  loss %.4g  %.1f "
                                   "samples/s%s", (long long)t->st.step, (long long)t->total, loss,
                                   sps, run_eta);
            if (c->checkpoint_every && t->st.step % c->checkpoint_every == 0 &&
                t->st.epoch_pos < t->bpe && t->st.step < t->total) {
                wx_dataset_drain(ds); /* the prefetch of the next batch restarts below */
                wx_watchdog_phase("the checkpoint after step %lld", (long long)t->st.step);
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
            WX_TRY(validate_and_save(t, 0, &vloss));
        } else if (t->st.step == stop && t->st.best_step < 0) {
            WX_TRY(validate_and_save(t, 1, &vloss));
            stop_loss = vloss;
        }
        wx_watchdog_phase("the checkpoint after step %lld", (long long)t->st.step);
        WX_TRY(save(t, t->last_path));
    }
    sum->step = t->st.step;
    sum->total_steps = t->total;
    sum->best_loss = t->st.best_step < 0 ? stop_loss : t->st.best_loss;
    sum->best_step = t->st.best_step < 0 && !isnan(stop_loss) ? t->st.step : t->st.best_step;
    snprintf(sum->last_path, sizeof sum->last_path, "%s", t->last_path);
    snprintf(sum->best_path, sizeof sum->best_path, "%s", t->best_path);
    return WX_OK;
}

wx_status wx_train_run(const wx_train_config *c, const wx_train_opts *o, wx_train_summary *sum) {
    wx_trainer t;
    memset(&t, 0, sizeof t);
    memset(sum, 0, sizeof *sum);
    t.c = c, t.o = o;
    wx_status s = wx_trainer_setup(&t);
    /* a resumed run with nothing left to do: say so (and how to go on) rather than exit 0 */
    if (s == WX_OK && o->resume && t.st.step >= t.total) {
        const char *stage = wx_train_stage_name(c->stage);
        char how[256];
        if (c->steps > 0)
            snprintf(how, sizeof how, "raise %s.steps above %lld", stage, (long long)t.st.step);
        else
            snprintf(how, sizeof how, "set %s.steps above %lld (or raise %s.epochs above %lld)",
                     stage, (long long)t.st.step, stage, (long long)c->epochs);
        s = wx_dist_agree(wx_error_set(WX_ERR_USAGE, "--resume %s: stage %s is already finished at "
                                       "step %lld of %lld; to train it further, %s in %s and resume "
                                       "again", o->resume, stage, (long long)t.st.step,
                                       (long long)t.total, how, c->path));
    }
    /* a resumed run already past --max-steps would do nothing: say so rather than exit 0 */
    if (s == WX_OK && o->resume && o->max_steps > 0 && o->max_steps <= t.st.step)
        s = wx_dist_agree(wx_error_set(WX_ERR_USAGE, "--max-steps %lld: %s is already at step %lld of "
                                       "%lld, nothing to train (expected --max-steps above %lld)",
                                       (long long)o->max_steps, o->resume, (long long)t.st.step,
                                       (long long)t.total, (long long)t.st.step));
    if (s == WX_OK) {
        wx_log_info("training %s on %s%s: %lld parameters, %lld training and %lld validation "
                    "samples, %lld batches of %lld per epoch, %lld steps (%lld done)",
                    wx_train_stage_name(c->stage), c->device, c->bf16 ? " (bf16 GEMM inputs)" : "",
                    (long long)wx_params_total(t.m->params),
                    (long long)t.ds.ntrain, (long long)t.ds.nvalid, (long long)t.bpe,
                    (long long)c->batch_size, (long long)t.total, (long long)t.st.step);
        int buckets = wx_grad_sync_buckets(t.sync);
        /* Buckets start during the backward with the host ring and NCCL; a device gradient goes
         * through host copies after the backward; shared memory reduces it all at the end. */
        int overlaps = !t.dev && !strcmp(wx_grad_sync_method(t.sync), WX_GRAD_SYNC_RING);
        char via[128];
        snprintf(via, sizeof via, "%s%s", wx_grad_sync_method(t.sync), t.dev ? ", through host copies" : "");
#if WX_HAVE_CUDA
        if (t.nccl) buckets = wx_cuda()->nccl_sync_buckets(t.nccl), overlaps = 1, snprintf(via, sizeof via, "NCCL");
#endif
        if (t.nranks > 1 && t.zero1)
            wx_log_info("data parallel over %d ranks on %s: %lld samples per rank per step, AdamW "
                        "state sharded (ZeRO-1): gradients reduce-scattered, parameters all-gathered "
                        "(%s)", t.nranks, t.be->name, (long long)t.batch,
                        t.dcoll.reduce_scatter ? t.dcoll.name : t.dev ? "through host copies"
                                                                    : wx_grad_sync_method(t.sync));
        else if (t.nranks > 1)
            wx_log_info("data parallel over %d ranks on %s: %lld samples per rank per step, gradient "
                        "all-reduce by %s in %d bucket(s)", t.nranks, t.be->name, (long long)t.batch,
                        via, buckets);
        s = loop(&t, sum);
        double early = wx_grad_sync_started_early(t.sync);
#if WX_HAVE_CUDA
        if (t.nccl) early = wx_cuda()->nccl_sync_started_early(t.nccl);
#endif
        if (s == WX_OK && t.nranks > 1 && !t.zero1 && overlaps)
            wx_log_info("gradient all-reduce: %.1f of %d bucket(s) per step started during the backward",
                        early, buckets);
        if (s == WX_OK) s = debug_dump(&t, "params.last", t.m->params->data, t.m->params->len);
    }
    wx_status ms = wx_metrics_close(t.metrics);
    if (s == WX_OK) s = ms;
    t.failed_alone = s != WX_OK && wx_dist_active() && !wx_dist_failure_is_agreed();
    wx_trainer_teardown(&t);
    return s;
}
