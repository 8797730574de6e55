// Bucketed NCCL all-reduce of the device gradient buffer on a side stream (wx_cuda_nccl.h).
#include <nccl.h>
#include <stdlib.h>
#include <string.h>

#include "train/zero1_shard.h"
#include "wx_cuda_nccl.h"
#include "wx_cuda_state.h"

static_assert(sizeof(ncclUniqueId) == WX_NCCL_ID_BYTES, "WX_NCCL_ID_BYTES must match NCCL");

#define WX_NCCL_CHECK(call)                                                                 \
    do {                                                                                    \
        ncclResult_t wx_n_ = (call);                                                        \
        if (wx_n_ != ncclSuccess)                                                           \
            return wx_error_set(WX_ERR_RUN, "NCCL: %s failed: %s", #call,                   \
                                ncclGetErrorString(wx_n_));                                 \
    } while (0)

struct wx_nccl_sync {
    wx_cuda_state *st;
    float *grad;
    int64_t len;
    int nb;
    int64_t *lo;        // (nb + 1) bucket bounds, ascending
    int next;           // buckets [next, nb) have been started (high to low, as backward goes)
    ncclComm_t comm;
    cudaStream_t side;  // the reductions' stream
    cudaEvent_t ev;
    int64_t early, rounds;
    int rank, nranks;   // ZeRO-1's shard layout
};

extern "C" wx_status wx_cuda_nccl_unique_id(unsigned char *id) {
    ncclUniqueId u;
    WX_NCCL_CHECK(ncclGetUniqueId(&u));
    memcpy(id, &u, sizeof u);
    return WX_OK;
}

extern "C" void wx_nccl_sync_destroy(wx_nccl_sync *s) {
    if (!s) return;
    // Teardown cannot report; each handle is released only if it was made.
    if (s->comm) (void)ncclCommDestroy(s->comm);
    if (s->ev) (void)cudaEventDestroy(s->ev);
    if (s->side) (void)cudaStreamDestroy(s->side);
    free(s->lo);
    free(s);
}

static wx_status sync_make(wx_nccl_sync *s, wx_ctx *ctx, int rank, int nranks,
                           const unsigned char *id) {
    WX_TRY(wx_cuda_state_get(ctx, &s->st));
    WX_CUDA_CHECK(cudaStreamCreateWithFlags(&s->side, cudaStreamNonBlocking));
    WX_CUDA_CHECK(cudaEventCreateWithFlags(&s->ev, cudaEventDisableTiming));
    ncclUniqueId u;
    memcpy(&u, id, sizeof u);
    WX_NCCL_CHECK(ncclCommInitRank(&s->comm, nranks, u, rank));
    return WX_OK;
}

extern "C" wx_status wx_nccl_sync_create(wx_ctx *ctx, float *grad, int64_t len, int64_t bucket_bytes,
                                         int rank, int nranks, const unsigned char *id,
                                         wx_nccl_sync **out) {
    *out = NULL;
    if (len < 1 || nranks < 1 || rank < 0 || rank >= nranks)
        return wx_error_set(WX_ERR_USAGE, "NCCL gradient sync: len %lld, rank %d of %d",
                            (long long)len, rank, nranks);
    wx_nccl_sync *s = (wx_nccl_sync *)wx_calloc(1, sizeof *s);
    int64_t per = (bucket_bytes > 0 ? bucket_bytes : 25 * 1000 * 1000) / (int64_t)sizeof(float);
    if (per < 1) per = 1;
    s->grad = grad, s->len = len;
    s->nb = (int)((len + per - 1) / per);
    s->lo = (int64_t *)wx_malloc(sizeof(int64_t) * (size_t)(s->nb + 1));
    // Equal buckets (as the MPI path): the same split every step, so the same sums.
    for (int b = 0; b <= s->nb; b++) s->lo[b] = len * b / s->nb;
    s->next = s->nb;
    s->rank = rank, s->nranks = nranks;
    wx_status st = sync_make(s, ctx, rank, nranks, id);
    if (st != WX_OK) {
        wx_nccl_sync_destroy(s);
        return st;
    }
    *out = s;
    return WX_OK;
}

extern "C" int wx_nccl_sync_buckets(const wx_nccl_sync *s) { return s->nb; }

extern "C" double wx_nccl_sync_started_early(const wx_nccl_sync *s) {
    return s->rounds ? (double)s->early / (double)s->rounds : 0.0;
}

// Starts buckets [first, next) (high to low) once the compute stream's work so far is done.
static wx_status start_down_to(wx_nccl_sync *s, int first) {
    if (first >= s->next) return WX_OK;
    WX_CUDA_CHECK(cudaEventRecord(s->ev, s->st->stream));
    WX_CUDA_CHECK(cudaStreamWaitEvent(s->side, s->ev, 0));
    WX_NCCL_CHECK(ncclGroupStart());
    for (int b = s->next - 1; b >= first; b--) {
        float *p = s->grad + s->lo[b];
        size_t n = (size_t)(s->lo[b + 1] - s->lo[b]);
        ncclResult_t r = ncclAllReduce(p, p, n, ncclFloat32, ncclAvg, s->comm, s->side);
        if (r != ncclSuccess) {
            (void)ncclGroupEnd();
            return wx_error_set(WX_ERR_RUN, "NCCL: ncclAllReduce of gradient bucket %d failed: %s",
                                b, ncclGetErrorString(r));
        }
    }
    WX_NCCL_CHECK(ncclGroupEnd());
    s->next = first;
    return WX_OK;
}

extern "C" wx_status wx_nccl_sync_ready(wx_nccl_sync *s, int64_t lo) {
    int first = s->next;
    while (first > 0 && s->lo[first - 1] >= lo) first--;
    WX_TRY(start_down_to(s, first));
    return WX_OK;
}

extern "C" wx_status wx_nccl_sync_finish(wx_nccl_sync *s) {
    s->early += s->nb - s->next;
    s->rounds++;
    WX_TRY(start_down_to(s, 0));
    // The optimizer step (compute stream) must see the averaged gradient.
    WX_CUDA_CHECK(cudaEventRecord(s->ev, s->side));
    WX_CUDA_CHECK(cudaStreamWaitEvent(s->st->stream, s->ev, 0));
    s->next = s->nb;
    return WX_OK;
}

// ---- ZeRO-1 ------------------------------------------------------------------------------------

// The side stream starts after the compute stream's work so far (the backward's gradient, the
// AdamW update of the shard).
static wx_status side_after_compute(wx_nccl_sync *s) {
    WX_CUDA_CHECK(cudaEventRecord(s->ev, s->st->stream));
    WX_CUDA_CHECK(cudaStreamWaitEvent(s->side, s->ev, 0));
    return WX_OK;
}

// And the compute stream continues after the side stream's collectives.
static wx_status compute_after_side(wx_nccl_sync *s) {
    WX_CUDA_CHECK(cudaEventRecord(s->ev, s->side));
    WX_CUDA_CHECK(cudaStreamWaitEvent(s->st->stream, s->ev, 0));
    return WX_OK;
}

__global__ static void mean_scale_kernel(float *x, int64_t n, float sc) {
    WX_CUDA_FOR(i, n) x[i] *= sc;  // as the host path: the float sum times the float 1/N
}

// Every rank's ZeRO-1 shard of buf (wx_zero1_shard's layout), one grouped NCCL call each on the
// side stream: reduce = summed onto its owner (ncclReduce), else sent from its owner to every rank
// (ncclBroadcast). Not ncclReduceScatter/ncclAllGather: those need equal shards, ours differ by one.
static wx_status shards_grouped(wx_nccl_sync *s, float *buf, int reduce) {
    WX_NCCL_CHECK(ncclGroupStart());
    for (int r = 0; r < s->nranks; r++) {
        int64_t off, cnt;
        wx_zero1_shard(s->len, s->nranks, r, &off, &cnt);
        if (cnt == 0) continue;
        float *p = buf + off;
        ncclResult_t e = reduce ? ncclReduce(p, p, (size_t)cnt, ncclFloat32, ncclSum, r, s->comm, s->side)
                                : ncclBroadcast(p, p, (size_t)cnt, ncclFloat32, r, s->comm, s->side);
        if (e != ncclSuccess) {
            (void)ncclGroupEnd();
            return wx_error_set(WX_ERR_RUN, "NCCL: %s of ZeRO-1 shard %d (%lld floats at %lld) "
                                "failed: %s", reduce ? "ncclReduce" : "ncclBroadcast", r,
                                (long long)cnt, (long long)off, ncclGetErrorString(e));
        }
    }
    WX_NCCL_CHECK(ncclGroupEnd());
    return WX_OK;
}

// One rank works too (every shard is its own; × 1.0f): test_cuda_nccl runs it on one GPU.
extern "C" wx_status wx_nccl_sync_reduce_scatter(wx_nccl_sync *s) {
    WX_TRY(side_after_compute(s));
    WX_TRY(shards_grouped(s, s->grad, 1));
    int64_t off, cnt;
    wx_zero1_shard(s->len, s->nranks, s->rank, &off, &cnt);
    if (cnt > 0) {
        mean_scale_kernel<<<wx_cuda_blocks(cnt), WX_CUDA_THREADS, 0, s->side>>>(
            s->grad + off, cnt, 1.0f / (float)s->nranks);
        WX_CUDA_LAUNCHED("mean_scale_kernel");
    }
    return compute_after_side(s);
}

extern "C" wx_status wx_nccl_sync_allgather(wx_nccl_sync *s, float *data) {
    WX_TRY(side_after_compute(s));
    WX_TRY(shards_grouped(s, data, 0));
    return compute_after_side(s);
}
