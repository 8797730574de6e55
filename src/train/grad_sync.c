/* The bucketed gradient all-reduce of data-parallel training (distributed.h): a ring of
 * point-to-point messages in general, node shared memory when every rank runs on one node. */
#include "train/distributed.h"
#include "train/watchdog.h"
#include "train/distributed_mpi.h"

#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "core/wx_log.h"
#include "core/wx_timer.h"

#if WX_HAVE_MPI

#define MPI_TRY(call) WX_TRY(wx_dist_mpi_check((call), #call))
/* Bucketed gradient all-reduce ------------------------------------------------------------------
 * Each bucket is cut into N chunks and reduced by a ring over point-to-point messages: N − 1
 * reduce-scatter steps (receive a partial sum of one chunk from the left neighbour, add this
 * rank's part, pass it on), after which rank r holds the finished sum of chunk r + 1, scaled by
 * 1/N in the same pass; then N − 1 all-gather steps that pass the finished chunks round. Why not
 * MPI_Iallreduce: Open MPI's non-blocking all-reduce (libnbc) takes, for fewer than 4 ranks or an
 * in-place buffer, a binomial tree — rank 0 copies the whole bucket aside, receives all of rank
 * 1's, adds, and sends the whole bucket back while rank 1 waits — and the mean then needs another
 * pass over the gradient. The ring moves 2(N−1)/N of a bucket per rank, splits the additions
 * evenly, and folds the 1/N scaling into the last addition; on 2 ranks it needed ~40% less CPU
 * time per step (docs/benchmarks.md). Every chunk is summed on one rank in a fixed order and
 * copied to the others, so all ranks get the same bits, and the same bits run to run.
 *
 * Each bucket is a small state machine (its ring step); a step completes when both its receive
 * and its send have, which only MPI calls can notice, so the backward's hooks call
 * wx_grad_sync_progress to advance every bucket in flight. Messages carry the bucket index as the
 * tag: buckets advance independently, and the ring order within one bucket is kept by MPI's
 * non-overtaking rule (same source, tag and communicator). */

/* Node shared memory ----------------------------------------------------------------------------
 * When every rank runs on one node (MPI_Comm_split_type SHARED covers the whole job) and the
 * caller lets the sync allocate the gradient (grad NULL), each rank's gradient is its segment of
 * an MPI-3 shared window: the backward writes straight into memory the other ranks can read. The
 * finish is then plain loads and stores and no message at all: after a barrier rank r sums chunk
 * r of every rank's gradient (in rank order, scaled by 1/N) into its own segment; after a second
 * barrier it copies every other chunk from its owner's segment; a third barrier keeps the next
 * backward from overwriting a chunk another rank is still copying. ZeRO-1 stops after the sums
 * (the reduce-scatter) and later passes the updated parameter shards the same way, through the
 * same segments (wx_grad_sync_allgather). Per rank
 * that is (N + 1)/N of the gradient read and 1 written, where the ring over Open MPI's shared-memory
 * transport reads 2 and writes 1.5 (a single-copy receive into scratch, the addition, the
 * all-gather's receive) plus the transport's own work (docs/benchmarks.md, MPI section). The sums
 * cannot start before every rank's backward has ended, so nothing overlaps the backward here;
 * on one core per rank there is no idle core for such overlap to use anyway. WXCAST_ALLREDUCE=ring
 * keeps the ring (and its overlap) on one node. */

struct wx_grad_sync {
    float *grad;
    int64_t len;
    int nb;
    int64_t *lo;          /* (nb + 1) bucket bounds, ascending */
    int next;             /* buckets [next, nb) have been started (they are started high to low) */
    int n, rank;          /* ranks in the ring, this rank */
    int *step;            /* (nb) ring step in flight: 0 .. 2(n−1) − 1; 2(n−1) = done */
    MPI_Request *req;     /* (2 nb) receive and send of each bucket's step in flight */
    float *tmp;           /* reduce-scatter receive space: bucket b's at tmp + tlo[b] */
    int64_t *tlo;         /* (nb) */
    /* Its own communicator: buckets start during the backward, so a rank whose backward fails
     * part-way must not leave a gradient reduction facing another rank's status agreement. */
    MPI_Comm comm;
    double seconds;
    int64_t early, rounds; /* buckets started before finish, summed over finishes; finishes */
    int owns;             /* grad was allocated here (malloc) */
    int have_sumsq;       /* the last reduction left sumsq (shared memory only) */
    double sumsq;         /* Σ g² of the last mean gradient (finish) or of this rank's shard */
    int shm;              /* grad is this rank's segment of win, read by every rank */
    MPI_Comm node;        /* shm: the ranks sharing win (= comm's ranks, same order) */
    MPI_Win win;
    float **seg;          /* shm: (n) every rank's gradient segment, mapped here */
};

/* Chunk c (taken mod n) of bucket b: [*a, *a + *k). */
static void chunk(const wx_grad_sync *s, int b, int c, int64_t *a, int64_t *k) {
    c = ((c % s->n) + s->n) % s->n;
    int64_t len = s->lo[b + 1] - s->lo[b];
    *a = s->lo[b] + len * c / s->n;
    *k = s->lo[b] + len * (c + 1) / s->n - *a;
}

/* Posts bucket b's receive and send of its current ring step. */
static wx_status ring_post(wx_grad_sync *s, int b) {
    int k = s->step[b], r = s->rank, n = s->n, left = (r + n - 1) % n, right = (r + 1) % n;
    int64_t sa, sk, ra, rk;
    float *rbuf;
    if (k < n - 1) { /* reduce-scatter: pass on the partial sum of chunk r − k, receive r − k − 1 */
        chunk(s, b, r - k, &sa, &sk);
        chunk(s, b, r - k - 1, &ra, &rk);
        rbuf = s->tmp + s->tlo[b];
    } else { /* all-gather: pass on finished chunk r + 1 − j, receive r − j in place */
        int j = k - (n - 1);
        chunk(s, b, r + 1 - j, &sa, &sk);
        chunk(s, b, r - j, &ra, &rk);
        rbuf = s->grad + ra;
    }
    MPI_TRY(MPI_Irecv(rbuf, (int)rk, MPI_FLOAT, left, b, s->comm, &s->req[2 * b]));
    MPI_TRY(MPI_Isend(s->grad + sa, (int)sk, MPI_FLOAT, right, b, s->comm, &s->req[2 * b + 1]));
    return WX_OK;
}

/* Bucket b's step in flight has completed: add what came in (the last addition also scales by
 * 1/n, giving the mean), move to the next step and post it. */
static wx_status ring_advance(wx_grad_sync *s, int b) {
    int k = s->step[b], n = s->n;
    if (k < n - 1) {
        int64_t a, m;
        chunk(s, b, s->rank - k - 1, &a, &m);
        float *x = s->grad + a;
        const float *y = s->tmp + s->tlo[b];
        if (k < n - 2) {
            for (int64_t i = 0; i < m; i++) x[i] += y[i];
        } else {
            float sc = 1.0f / (float)n;
            for (int64_t i = 0; i < m; i++) x[i] = (x[i] + y[i]) * sc;
        }
    }
    if (++s->step[b] < 2 * (n - 1)) return ring_post(s, b);
    return WX_OK;
}

/* Byte offset of a segment's partial Σ g²: after the gradient (len floats), 64-byte aligned. */
static size_t shm_sumsq_offset(int64_t len) { return (sizeof(float) * (size_t)(len + 1) + 63) / 64 * 64; }

/* Memory written by any rank before the fence is visible to every rank after it (the MPI-3
 * shared-memory idiom: a passive-target epoch stays open; Win_sync orders this rank's loads and
 * stores, the barrier orders the ranks). */
static wx_status shm_fence(wx_grad_sync *s) {
    MPI_TRY(MPI_Win_sync(s->win));
    MPI_TRY(MPI_Barrier(s->node));
    MPI_TRY(MPI_Win_sync(s->win));
    return WX_OK;
}

/* The directory Open MPI backs shared windows with (its osc_sm_backing_directory). */
static const char *shm_dir(void) {
    const char *d = getenv("OMPI_MCA_osc_sm_backing_directory");
    return d && *d ? d : "/dev/shm";
}

static double shm_window_bytes(const wx_grad_sync *s) { return (double)shm_sumsq_offset(s->len) + 64; }

/* Whether the backing directory can take every rank's segment (with 8 MB to spare). A window that
 * does not fit is not refused by Open MPI 4.1: it warns, then the job aborts or hangs (seen with
 * an 8 MB tmpfs), so the ring is taken instead. */
static int shm_has_room(const wx_grad_sync *s) {
    struct statvfs v;
    if (statvfs(shm_dir(), &v) != 0) return 0;
    double avail = (double)v.f_bavail * (double)v.f_frsize;
    return avail >= (double)s->n * (shm_window_bytes(s) + 4096) + 8e6;
}

/* Sets up the shared window when the whole job is on one node, the window fits its backing
 * directory and the environment does not ask for the ring; leaves s->shm 0 (ring) otherwise. */
static wx_status shm_setup(wx_grad_sync *s) {
    const char *want = getenv("WXCAST_ALLREDUCE");
    if (want && *want && strcmp(want, "ring") && strcmp(want, "shm"))
        return wx_error_set(WX_ERR_USAGE, "WXCAST_ALLREDUCE=%s: expected 'shm' (node shared memory, "
                            "the default when all ranks share a node) or 'ring'", want);
    int local = !(want && !strcmp(want, "ring")), node_n = 0, every = 0;
    MPI_TRY(MPI_Comm_split_type(s->comm, MPI_COMM_TYPE_SHARED, s->rank, MPI_INFO_NULL, &s->node));
    MPI_TRY(MPI_Comm_size(s->node, &node_n));
    local &= node_n == s->n;
    int room = local ? shm_has_room(s) : 1;
    /* Every rank must take the same path: one allreduce decides. */
    int mine[2] = {local, room}, all[2] = {0, 0};
    MPI_TRY(MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MIN, s->comm));
    every = all[0] && all[1];
    if (all[0] && !all[1] && s->rank == 0)
        wx_log_warn("gradient all-reduce: not enough room for a %.1f MB shared window per rank in %s "
                    "(Open MPI's osc_sm_backing_directory; containers often give /dev/shm 64 MB): "
                    "using the ring of MPI messages (enlarge it, e.g. docker --shm-size, or set "
                    "WXCAST_ALLREDUCE=ring to silence this)", shm_window_bytes(s) / 1e6, shm_dir());
    if (!every) return WX_OK;
    MPI_Info info;
    MPI_TRY(MPI_Info_create(&info));
    /* Each segment on its own pages, placed by its owner's first touch (its NUMA node). */
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    float *base = NULL;
    /* The gradient, then (at a 64-byte boundary) its owner's partial Σ g² (one double). */
    MPI_Aint bytes = (MPI_Aint)(shm_sumsq_offset(s->len) + 64);
    int rc = MPI_Win_allocate_shared(bytes, (int)sizeof(float), info, s->node, &base, &s->win);
    MPI_Info_free(&info);
    if (rc != MPI_SUCCESS) {
        s->win = MPI_WIN_NULL;
        return wx_dist_mpi_check(rc, "MPI_Win_allocate_shared (gradient, node shared memory)");
    }
    s->seg = wx_calloc((size_t)s->n, sizeof(float *));
    for (int q = 0; q < s->n; q++) {
        MPI_Aint size;
        int unit;
        MPI_TRY(MPI_Win_shared_query(s->win, q, &size, &unit, &s->seg[q]));
    }
    MPI_TRY(MPI_Win_lock_all(MPI_MODE_NOCHECK, s->win));
    memset(base, 0, (size_t)bytes);
    s->grad = base, s->shm = 1;
    return WX_OK;
}

/* Rank q's partial Σ g², after its gradient in its segment. */
static double *shm_partial(const wx_grad_sync *s, int q) {
    return (double *)((char *)s->seg[q] + shm_sumsq_offset(s->len));
}

/* Rank q's chunk of the buffer: the ZeRO-1 shard layout (wx_dist_split). */
static void shm_chunk(const wx_grad_sync *s, int q, int64_t *off, int64_t *cnt) {
    int64_t base = s->len / s->n, rem = s->len % s->n;
    *cnt = base + (q < rem);
    *off = q * base + (q < rem ? q : rem);
}

/* After a fence: this rank's chunk of its own segment becomes the mean of that chunk over every
 * rank's segment. ((g_0 + g_1) + g_2) ... · 1/n: one order, computed once, so every rank that
 * copies the chunk gets these bits. Other ranks read only their own chunks of this segment. */
static wx_status shm_reduce_own(wx_grad_sync *s) {
    enum { BLK = 2048 }; /* partial sums stay in L1 */
    const float sc = 1.0f / (float)s->n;
    float *mine = s->seg[s->rank], acc[BLK];
    int64_t a, k;
    shm_chunk(s, s->rank, &a, &k);
    /* Σ g² of the chunk on the way (the clipping norm needs it, and a separate pass costs a read
     * of the whole gradient per rank): eight accumulators, element i into i mod 8, added in a fixed
     * order, so the value is the same run to run. */
    double q8[8] = {0};
    WX_TRY(shm_fence(s)); /* every rank's backward has written its gradient */
    for (int64_t i0 = a; i0 < a + k; i0 += BLK) {
        const int64_t m = a + k - i0 < BLK ? a + k - i0 : BLK;
        memcpy(acc, s->seg[0] + i0, sizeof(float) * (size_t)m);
        for (int q = 1; q < s->n; q++) {
            const float *x = s->seg[q] + i0;
            for (int64_t i = 0; i < m; i++) acc[i] += x[i];
        }
        for (int64_t i = 0; i < m; i++) acc[i] *= sc;
        memcpy(mine + i0, acc, sizeof(float) * (size_t)m);
        int64_t i = 0;
        for (; i + 8 <= m; i += 8) /* BLK is a multiple of 8: every block starts at lane 0 */
            for (int l = 0; l < 8; l++) q8[l] += (double)acc[i + l] * (double)acc[i + l];
        for (; i < m; i++) q8[i & 7] += (double)acc[i] * (double)acc[i];
    }
    double sum = 0;
    for (int l = 0; l < 8; l++) sum += q8[l];
    *shm_partial(s, s->rank) = sum;
    s->sumsq = sum, s->have_sumsq = 1;
    return WX_OK;
}

/* Every rank's chunk q of dst (len) from chunk q of rank q's segment, where its owner has put
 * it; dst may be this rank's own segment. The closing fence: nobody reads this rank's segment
 * any more, so the next backward may overwrite it. */
static wx_status shm_gather(wx_grad_sync *s, float *dst, int total_sumsq) {
    WX_TRY(shm_fence(s)); /* every owner's chunk (and partial Σ g²) is in place */
    if (total_sumsq) { /* in rank order: the same bits on every rank */
        s->sumsq = 0;
        for (int q = 0; q < s->n; q++) s->sumsq += *shm_partial(s, q);
    }
    for (int q = 0; q < s->n; q++) {
        int64_t a, k;
        shm_chunk(s, q, &a, &k);
        if (dst + a != s->seg[q] + a) memcpy(dst + a, s->seg[q] + a, sizeof(float) * (size_t)k);
    }
    return shm_fence(s);
}

wx_status wx_grad_sync_create(float *grad, int64_t len, int64_t bucket_bytes, wx_grad_sync **out) {
    wx_grad_sync *s = wx_calloc(1, sizeof *s);
    int64_t per = bucket_bytes / (int64_t)sizeof(float);
    if (per < 1) per = 1;
    if (per > WX_MPI_CHUNK) per = WX_MPI_CHUNK;
    /* The bucket index is the message tag, and MPI guarantees tags up to 32767 only. */
    if ((len + per - 1) / per > 32767) per = (len + 32766) / 32767;
    s->grad = grad, s->len = len;
    s->nb = (int)((len + per - 1) / per);
    if (s->nb < 1) s->nb = 1;
    s->n = wx_dist_size(), s->rank = wx_dist_rank();
    s->lo = wx_malloc(sizeof(int64_t) * (size_t)(s->nb + 1));
    /* Equal buckets rather than full ones plus a runt: the last message is not a tiny one. */
    for (int b = 0; b <= s->nb; b++) s->lo[b] = len * b / s->nb;
    s->req = wx_malloc(sizeof(MPI_Request) * (size_t)(2 * s->nb));
    for (int b = 0; b < 2 * s->nb; b++) s->req[b] = MPI_REQUEST_NULL;
    s->step = wx_malloc(sizeof(int) * (size_t)s->nb);
    s->tlo = wx_malloc(sizeof(int64_t) * (size_t)s->nb);
    s->next = s->nb;
    s->comm = s->node = MPI_COMM_NULL;
    s->win = MPI_WIN_NULL;
    wx_status st = WX_OK;
    if (wx_dist_active()) {
        st = wx_dist_mpi_check(MPI_Comm_dup(wx_dist_comm(), &s->comm), "MPI_Comm_dup");
        if (st == WX_OK) st = wx_dist_mpi_check(MPI_Comm_set_errhandler(s->comm, MPI_ERRORS_RETURN),
                                                "MPI_Comm_set_errhandler");
        if (st == WX_OK && !grad) st = shm_setup(s);
    }
    if (st == WX_OK && !s->grad) {
        s->grad = wx_calloc((size_t)len + 1, sizeof(float));
        s->owns = 1;
    }
    int64_t t = 0;
    for (int b = 0; b < s->nb; b++) { /* room for the bucket's largest chunk */
        s->tlo[b] = t;
        t += s->shm ? 0 : (s->lo[b + 1] - s->lo[b] + s->n - 1) / s->n;
    }
    s->tmp = wx_malloc(sizeof(float) * (size_t)(t + 1));
    if (st != WX_OK) {
        wx_grad_sync_destroy(s);
        return st;
    }
    *out = s;
    return WX_OK;
}

void wx_grad_sync_destroy(wx_grad_sync *s) {
    if (!s) return;
    /* Only reached after finish on every rank, or on a failure path the CLI follows with
     * MPI_Abort. */
    if (s->win != MPI_WIN_NULL) {
        if (s->shm) MPI_Win_unlock_all(s->win);
        MPI_Win_free(&s->win);
    }
    if (s->node != MPI_COMM_NULL) MPI_Comm_free(&s->node);
    if (s->comm != MPI_COMM_NULL) MPI_Comm_free(&s->comm);
    if (s->owns) free(s->grad);
    free(s->seg);
    free(s->lo);
    free(s->req);
    free(s->step);
    free(s->tlo);
    free(s->tmp);
    free(s);
}

float *wx_grad_sync_buffer(wx_grad_sync *s) { return s->grad; }
int wx_grad_sync_sumsq(const wx_grad_sync *s, double *sumsq) {
    if (s->have_sumsq) *sumsq = s->sumsq;
    return s->have_sumsq;
}
const char *wx_grad_sync_method(const wx_grad_sync *s) {
    if (!wx_dist_active()) return WX_GRAD_SYNC_NONE;
    return s->shm ? WX_GRAD_SYNC_SHM : WX_GRAD_SYNC_RING;
}
int wx_grad_sync_buckets(const wx_grad_sync *s) { return s->shm ? 1 : s->nb; }
double wx_grad_sync_started_early(const wx_grad_sync *s) {
    return s->rounds ? (double)s->early / (double)s->rounds : 0;
}
double wx_grad_sync_seconds(const wx_grad_sync *s) { return s->seconds; }

wx_status wx_grad_sync_ready(wx_grad_sync *s, int64_t lo) {
    if (!wx_dist_active() || s->shm) return WX_OK;
    double t0 = wx_time_now();
    wx_status st = WX_OK;
    while (st == WX_OK && s->next > 0 && s->lo[s->next - 1] >= lo) {
        int b = --s->next;
        s->step[b] = 0;
        st = ring_post(s, b);
    }
    s->seconds += wx_time_now() - t0;
    return st;
}

/* Advances every bucket in flight as far as the messages that have arrived allow. */
static wx_status ring_progress(wx_grad_sync *s) {
    for (int b = s->nb - 1; b >= s->next; b--)
        while (s->step[b] < 2 * (s->n - 1)) {
            int done = 0;
            MPI_TRY(MPI_Testall(2, s->req + 2 * b, &done, MPI_STATUSES_IGNORE));
            if (!done) break;
            WX_TRY(ring_advance(s, b));
        }
    return WX_OK;
}

wx_status wx_grad_sync_progress(wx_grad_sync *s) {
    if (!wx_dist_active() || s->shm || s->next == s->nb) return WX_OK;
    double t0 = wx_time_now();
    wx_status st = ring_progress(s);
    s->seconds += wx_time_now() - t0;
    return st;
}

wx_status wx_grad_sync_finish(wx_grad_sync *s) {
    if (!wx_dist_active()) return WX_OK;
    WX_WATCHDOG_SCOPE("the gradient all-reduce");
    if (s->shm) {
        double t0 = wx_time_now();
        wx_status st = shm_reduce_own(s);
        if (st == WX_OK) st = shm_gather(s, s->grad, 1);
        s->rounds++;
        s->seconds += wx_time_now() - t0;
        return st;
    }
    s->early += s->nb - s->next, s->rounds++;
    WX_TRY(wx_grad_sync_ready(s, 0));
    double t0 = wx_time_now();
    /* In start order; each bucket's steps depend only on its own messages, and every rank walks
     * the buckets in the same order, so no rank waits for a step its neighbour has not posted. */
    wx_status st = ring_progress(s);
    for (int b = s->nb - 1; st == WX_OK && b >= 0; b--)
        while (st == WX_OK && s->step[b] < 2 * (s->n - 1)) {
            st = wx_dist_mpi_check(MPI_Waitall(2, s->req + 2 * b, MPI_STATUSES_IGNORE), "MPI_Waitall");
            if (st == WX_OK) st = ring_advance(s, b);
        }
    s->next = s->nb;
    s->seconds += wx_time_now() - t0;
    return st;
}

void wx_grad_sync_reset_clock(wx_grad_sync *s) { s->seconds = 0; }

wx_status wx_grad_sync_reduce_scatter(wx_grad_sync *s) {
    if (!wx_dist_active()) return WX_OK;
    WX_WATCHDOG_SCOPE("the gradient reduce-scatter");
    double t0 = wx_time_now();
    wx_status st = s->shm ? shm_reduce_own(s) : wx_dist_reduce_scatter_avg(s->grad, s->len);
    s->seconds += wx_time_now() - t0;
    return st;
}

wx_status wx_grad_sync_allgather(wx_grad_sync *s, float *data) {
    if (!wx_dist_active()) return WX_OK;
    WX_WATCHDOG_SCOPE("the parameter all-gather");
    double t0 = wx_time_now();
    wx_status st;
    if (s->shm) { /* the shard's gradient is spent: its place in the segment carries the update */
        int64_t a, k;
        shm_chunk(s, s->rank, &a, &k);
        memcpy(s->grad + a, data + a, sizeof(float) * (size_t)k);
        st = shm_gather(s, data, 0);
    } else {
        st = wx_dist_allgather_shards(data, s->len);
    }
    s->seconds += wx_time_now() - t0;
    return st;
}

#else /* without MPI: the size-1 case ------------------------------------------------------------ */

struct wx_grad_sync {
    int64_t len;
    float *grad;
    int owns;
};
wx_status wx_grad_sync_create(float *grad, int64_t len, int64_t bucket_bytes, wx_grad_sync **out) {
    *out = wx_calloc(1, sizeof **out);
    (*out)->len = len;
    (*out)->grad = grad ? grad : wx_calloc((size_t)len + 1, sizeof(float));
    (*out)->owns = !grad;
    return WX_OK;
}
void wx_grad_sync_destroy(wx_grad_sync *s) {
    if (s && s->owns) free(s->grad);
    free(s);
}
float *wx_grad_sync_buffer(wx_grad_sync *s) { return s->grad; }
const char *wx_grad_sync_method(const wx_grad_sync *s) { return WX_GRAD_SYNC_NONE; }
int wx_grad_sync_buckets(const wx_grad_sync *s) { return 1; }
int wx_grad_sync_sumsq(const wx_grad_sync *s, double *sumsq) { return 0; }
double wx_grad_sync_started_early(const wx_grad_sync *s) { return 0; }
wx_status wx_grad_sync_ready(wx_grad_sync *s, int64_t lo) { return WX_OK; }
wx_status wx_grad_sync_progress(wx_grad_sync *s) { return WX_OK; }
wx_status wx_grad_sync_finish(wx_grad_sync *s) { return WX_OK; }
double wx_grad_sync_seconds(const wx_grad_sync *s) { return 0; }
void wx_grad_sync_reset_clock(wx_grad_sync *s) {}
wx_status wx_grad_sync_reduce_scatter(wx_grad_sync *s) { return WX_OK; }
wx_status wx_grad_sync_allgather(wx_grad_sync *s, float *data) { return WX_OK; }

#endif
