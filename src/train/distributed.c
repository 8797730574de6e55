#include "train/distributed.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wx_log.h"
#include "core/wx_timer.h"
#include "wx_build_config.h"

#if WX_HAVE_MPI
#include <mpi.h>
#endif

static struct {
    int started;  /* we called MPI_Init */
    int rank, size;
    int agreed, remote;
#if WX_HAVE_MPI
    MPI_Comm comm;
#endif
} g = {0, 0, 1, 0, 0
#if WX_HAVE_MPI
       , MPI_COMM_NULL
#endif
};

int wx_dist_rank(void) { return g.rank; }
int wx_dist_size(void) { return g.size; }
int wx_dist_active(void) { return g.started && g.size > 1; }
int wx_dist_failure_is_remote(void) { return g.remote; }
int wx_dist_failure_is_agreed(void) { return g.agreed; }

int wx_dist_local_rank(void) {
    /* OpenMPI, Slurm, MPICH/Hydra, Intel MPI / PMIx launchers in that order */
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
                                       "MPI_LOCALRANKID", "PMIX_LOCAL_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        char *end;
        long r = v && *v ? strtol(v, &end, 10) : -1;
        if (v && *v && !*end && r >= 0 && r < INT_MAX) return (int)r;
    }
    return g.rank; /* one node: the world rank */
}

void wx_dist_split(int64_t n, int size, int64_t *off, int64_t *cnt) {
    int64_t q = n / size, r = n % size, o = 0;
    for (int i = 0; i < size; i++) {
        cnt[i] = q + (i < r);
        off[i] = o;
        o += cnt[i];
    }
}

#if WX_HAVE_MPI

/* Every MPI call goes through this: the communicator returns errors instead of aborting. */
static wx_status mpi_check(int rc, const char *call) {
    if (rc == MPI_SUCCESS) return WX_OK;
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "code %d", rc);
    return wx_error_set(WX_ERR_RUN, "rank %d: %s failed: %s", g.rank, call, msg);
}
#define MPI_TRY(call) WX_TRY(mpi_check((call), #call))

static int launched_by_mpi(void) {
    const char *force = getenv("WXCAST_MPI");
    if (force && *force) return strcmp(force, "0") != 0;
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return 1;
    return 0;
}

wx_status wx_dist_init(int *argc, char ***argv) {
    if (g.started || !launched_by_mpi()) return WX_OK;
    int inited = 0, provided = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        /* Open MPI spins in its waits by default. Where ranks share cores with other work (or with
         * each other), a spinning rank takes the core from the very peer it waits for: a 2-rank
         * gradient all-reduce took 2.3x the wall time and 2x the CPU time that way on a loaded
         * 2-core machine (docs/benchmarks.md). Yielding costs one sched_yield per idle poll on a
         * dedicated core. A value the user set is kept (setenv without overwrite). */
        setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
        int rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
        if (rc != MPI_SUCCESS)
            return wx_error_set(WX_ERR_RUN, "MPI_Init_thread failed (code %d): is the launcher's "
                                "environment complete? (WXCAST_MPI=0 runs one process)", rc);
    }
    g.started = 1;
    /* Errors on the world communicator would abort inside MPI before we can name the call. */
    MPI_TRY(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_TRY(MPI_Comm_dup(MPI_COMM_WORLD, &g.comm));
    MPI_TRY(MPI_Comm_set_errhandler(g.comm, MPI_ERRORS_RETURN));
    MPI_TRY(MPI_Comm_rank(g.comm, &g.rank));
    MPI_TRY(MPI_Comm_size(g.comm, &g.size));
    if (g.size > 1) wx_log_set_rank(g.rank);
    if (!inited && provided < MPI_THREAD_FUNNELED)
        wx_log_warn("MPI provides thread level %d, below FUNNELED; only the main thread calls MPI",
                    provided);
    return WX_OK;
}

void wx_dist_finalize(void) {
    if (!g.started) return;
    if (g.comm != MPI_COMM_NULL) MPI_Comm_free(&g.comm);
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) MPI_Finalize();
    g.started = 0, g.rank = 0, g.size = 1;
}

_Noreturn void wx_dist_abort(int code) {
    fflush(stdout);
    fflush(stderr);
    if (g.started && g.size > 1) MPI_Abort(MPI_COMM_WORLD, code ? code : 1);
    exit(code);
}

wx_status wx_dist_agree(wx_status local) {
    g.agreed = g.remote = 0;
    if (!wx_dist_active()) {
        if (local != WX_OK) g.agreed = 1;
        return local;
    }
    int key = local != WX_OK ? g.rank : INT_MAX, first = INT_MAX;
    MPI_TRY(MPI_Allreduce(&key, &first, 1, MPI_INT, MPI_MIN, g.comm));
    if (first == INT_MAX) return WX_OK;
    int code = (int)local;
    MPI_TRY(MPI_Bcast(&code, 1, MPI_INT, first, g.comm));
    g.agreed = 1;
    if (first == g.rank) return local;
    g.remote = 1;
    return wx_error_set((wx_status)code, "rank %d failed (its message is printed by that rank)", first);
}

wx_status wx_dist_barrier(void) {
    if (!wx_dist_active()) return WX_OK;
    MPI_TRY(MPI_Barrier(g.comm));
    return WX_OK;
}

/* MPI counts are int: long buffers go in pieces of at most 2^30 elements. */
enum { MPI_CHUNK = 1 << 30 };

wx_status wx_dist_bcast(void *buf, size_t bytes, int root) {
    if (!wx_dist_active()) return WX_OK;
    for (size_t o = 0; o < bytes; o += MPI_CHUNK) {
        size_t k = bytes - o < MPI_CHUNK ? bytes - o : MPI_CHUNK;
        MPI_TRY(MPI_Bcast((char *)buf + o, (int)k, MPI_BYTE, root, g.comm));
    }
    return WX_OK;
}

wx_status wx_dist_allreduce_f32(float *buf, int64_t n, wx_dist_op op) {
    if (!wx_dist_active()) return WX_OK;
    for (int64_t o = 0; o < n; o += MPI_CHUNK) {
        int k = (int)(n - o < MPI_CHUNK ? n - o : MPI_CHUNK);
        MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, buf + o, k, MPI_FLOAT, MPI_SUM, g.comm));
    }
    if (op == WX_DIST_AVG) {
        float s = 1.0f / (float)g.size;
        for (int64_t i = 0; i < n; i++) buf[i] *= s;
    }
    return WX_OK;
}

wx_status wx_dist_allreduce_f64(double *buf, int64_t n, wx_dist_op op) {
    if (!wx_dist_active()) return WX_OK;
    for (int64_t o = 0; o < n; o += MPI_CHUNK) {
        int k = (int)(n - o < MPI_CHUNK ? n - o : MPI_CHUNK);
        MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, buf + o, k, MPI_DOUBLE, MPI_SUM, g.comm));
    }
    if (op == WX_DIST_AVG)
        for (int64_t i = 0; i < n; i++) buf[i] /= (double)g.size;
    return WX_OK;
}

wx_status wx_dist_allgather_u32(uint32_t v, uint32_t *out) {
    if (!wx_dist_active()) {
        out[0] = v;
        return WX_OK;
    }
    MPI_TRY(MPI_Allgather(&v, 1, MPI_UINT32_T, out, 1, MPI_UINT32_T, g.comm));
    return WX_OK;
}

/* Shard counts and displacements as MPI ints (ZeRO-1 buffers stay below 2^31 elements). */
static wx_status shard_layout(int64_t len, int **cnt, int **displ) {
    if (len >= INT_MAX)
        return wx_error_set(WX_ERR_RUN, "ZeRO-1: %lld parameters exceed the %d elements one MPI "
                            "call can shard", (long long)len, INT_MAX);
    int64_t *o = wx_malloc(sizeof(int64_t) * (size_t)g.size), *c = wx_malloc(sizeof(int64_t) * (size_t)g.size);
    wx_dist_split(len, g.size, o, c);
    *cnt = wx_malloc(sizeof(int) * (size_t)g.size);
    *displ = wx_malloc(sizeof(int) * (size_t)g.size);
    for (int r = 0; r < g.size; r++) (*cnt)[r] = (int)c[r], (*displ)[r] = (int)o[r];
    free(o);
    free(c);
    return WX_OK;
}

wx_status wx_dist_reduce_scatter_avg(float *grad, int64_t len) {
    if (!wx_dist_active()) return WX_OK;
    int *cnt, *displ;
    WX_TRY(shard_layout(len, &cnt, &displ));
    /* In place, the reduced shard lands at the start of the buffer: move it to its offset. */
    wx_status s = mpi_check(MPI_Reduce_scatter(MPI_IN_PLACE, grad, cnt, MPI_FLOAT, MPI_SUM, g.comm),
                            "MPI_Reduce_scatter");
    if (s == WX_OK) {
        float *dst = grad + displ[g.rank], sc = 1.0f / (float)g.size;
        memmove(dst, grad, sizeof(float) * (size_t)cnt[g.rank]);
        for (int i = 0; i < cnt[g.rank]; i++) dst[i] *= sc;
    }
    free(cnt);
    free(displ);
    return s;
}

wx_status wx_dist_allgather_shards(float *buf, int64_t len) {
    if (!wx_dist_active()) return WX_OK;
    int *cnt, *displ;
    WX_TRY(shard_layout(len, &cnt, &displ));
    wx_status s = mpi_check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, cnt, displ,
                                           MPI_FLOAT, g.comm), "MPI_Allgatherv");
    free(cnt);
    free(displ);
    return s;
}

wx_status wx_dist_gather_shards(const float *local, float *full, int64_t len, int root) {
    if (!wx_dist_active()) {
        memcpy(full, local, sizeof(float) * (size_t)len);
        return WX_OK;
    }
    int *cnt, *displ;
    WX_TRY(shard_layout(len, &cnt, &displ));
    wx_status s = mpi_check(MPI_Gatherv(local, cnt[g.rank], MPI_FLOAT, full, cnt, displ, MPI_FLOAT,
                                        root, g.comm), "MPI_Gatherv");
    free(cnt);
    free(displ);
    return s;
}

wx_status wx_dist_scatter_shards(const float *full, float *local, int64_t len, int root) {
    if (!wx_dist_active()) {
        memcpy(local, full, sizeof(float) * (size_t)len);
        return WX_OK;
    }
    int *cnt, *displ;
    WX_TRY(shard_layout(len, &cnt, &displ));
    wx_status s = mpi_check(MPI_Scatterv(full, cnt, displ, MPI_FLOAT, local, cnt[g.rank], MPI_FLOAT,
                                         root, g.comm), "MPI_Scatterv");
    free(cnt);
    free(displ);
    return s;
}

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

wx_status wx_grad_sync_create(float *grad, int64_t len, int64_t bucket_bytes, wx_grad_sync **out) {
    wx_grad_sync *s = wx_calloc(1, sizeof *s);
    int64_t per = bucket_bytes / (int64_t)sizeof(float);
    if (per < 1) per = 1;
    if (per > MPI_CHUNK) per = MPI_CHUNK;
    /* The bucket index is the message tag, and MPI guarantees tags up to 32767 only. */
    if ((len + per - 1) / per > 32767) per = (len + 32766) / 32767;
    s->grad = grad, s->len = len;
    s->nb = (int)((len + per - 1) / per);
    if (s->nb < 1) s->nb = 1;
    s->n = g.size, s->rank = g.rank;
    s->lo = wx_malloc(sizeof(int64_t) * (size_t)(s->nb + 1));
    /* Equal buckets rather than full ones plus a runt: the last message is not a tiny one. */
    for (int b = 0; b <= s->nb; b++) s->lo[b] = len * b / s->nb;
    s->req = wx_malloc(sizeof(MPI_Request) * (size_t)(2 * s->nb));
    for (int b = 0; b < 2 * s->nb; b++) s->req[b] = MPI_REQUEST_NULL;
    s->step = wx_malloc(sizeof(int) * (size_t)s->nb);
    s->tlo = wx_malloc(sizeof(int64_t) * (size_t)s->nb);
    int64_t t = 0;
    for (int b = 0; b < s->nb; b++) { /* room for the bucket's largest chunk */
        s->tlo[b] = t;
        t += (s->lo[b + 1] - s->lo[b] + s->n - 1) / s->n;
    }
    s->tmp = wx_malloc(sizeof(float) * (size_t)(t + 1));
    s->next = s->nb;
    s->comm = MPI_COMM_NULL;
    if (wx_dist_active()) {
        wx_status st = mpi_check(MPI_Comm_dup(g.comm, &s->comm), "MPI_Comm_dup");
        if (st == WX_OK) st = mpi_check(MPI_Comm_set_errhandler(s->comm, MPI_ERRORS_RETURN),
                                        "MPI_Comm_set_errhandler");
        if (st != WX_OK) {
            wx_grad_sync_destroy(s);
            return st;
        }
    }
    *out = s;
    return WX_OK;
}

void wx_grad_sync_destroy(wx_grad_sync *s) {
    if (!s) return;
    /* Only reached after finish, or on a failure path the CLI follows with MPI_Abort. */
    if (s->comm != MPI_COMM_NULL) MPI_Comm_free(&s->comm);
    free(s->lo);
    free(s->req);
    free(s->step);
    free(s->tlo);
    free(s->tmp);
    free(s);
}

int wx_grad_sync_buckets(const wx_grad_sync *s) { return s->nb; }
double wx_grad_sync_started_early(const wx_grad_sync *s) {
    return s->rounds ? (double)s->early / (double)s->rounds : 0;
}
double wx_grad_sync_seconds(const wx_grad_sync *s) { return s->seconds; }

wx_status wx_grad_sync_ready(wx_grad_sync *s, int64_t lo) {
    if (!wx_dist_active()) return WX_OK;
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
    if (!wx_dist_active() || s->next == s->nb) return WX_OK;
    double t0 = wx_time_now();
    wx_status st = ring_progress(s);
    s->seconds += wx_time_now() - t0;
    return st;
}

wx_status wx_grad_sync_finish(wx_grad_sync *s) {
    if (!wx_dist_active()) return WX_OK;
    s->early += s->nb - s->next, s->rounds++;
    WX_TRY(wx_grad_sync_ready(s, 0));
    double t0 = wx_time_now();
    /* In start order; each bucket's steps depend only on its own messages, and every rank walks
     * the buckets in the same order, so no rank waits for a step its neighbour has not posted. */
    wx_status st = ring_progress(s);
    for (int b = s->nb - 1; st == WX_OK && b >= 0; b--)
        while (st == WX_OK && s->step[b] < 2 * (s->n - 1)) {
            st = mpi_check(MPI_Waitall(2, s->req + 2 * b, MPI_STATUSES_IGNORE), "MPI_Waitall");
            if (st == WX_OK) st = ring_advance(s, b);
        }
    s->next = s->nb;
    s->seconds += wx_time_now() - t0;
    return st;
}

void wx_grad_sync_reset_clock(wx_grad_sync *s) { s->seconds = 0; }

#else /* without MPI: the size-1 case ------------------------------------------------------------ */

wx_status wx_dist_init(int *argc, char ***argv) { return WX_OK; }
void wx_dist_finalize(void) {}
_Noreturn void wx_dist_abort(int code) {
    fflush(stdout);
    fflush(stderr);
    exit(code);
}
wx_status wx_dist_agree(wx_status local) {
    g.remote = 0;
    g.agreed = local != WX_OK;
    return local;
}
wx_status wx_dist_barrier(void) { return WX_OK; }
wx_status wx_dist_bcast(void *buf, size_t bytes, int root) { return WX_OK; }
wx_status wx_dist_allreduce_f32(float *buf, int64_t n, wx_dist_op op) { return WX_OK; }
wx_status wx_dist_allreduce_f64(double *buf, int64_t n, wx_dist_op op) { return WX_OK; }
wx_status wx_dist_allgather_u32(uint32_t v, uint32_t *out) {
    out[0] = v;
    return WX_OK;
}
wx_status wx_dist_reduce_scatter_avg(float *grad, int64_t len) { return WX_OK; }
wx_status wx_dist_allgather_shards(float *buf, int64_t len) { return WX_OK; }
wx_status wx_dist_gather_shards(const float *local, float *full, int64_t len, int root) {
    memcpy(full, local, sizeof(float) * (size_t)len);
    return WX_OK;
}
wx_status wx_dist_scatter_shards(const float *full, float *local, int64_t len, int root) {
    memcpy(local, full, sizeof(float) * (size_t)len);
    return WX_OK;
}

struct wx_grad_sync {
    int64_t len;
};
wx_status wx_grad_sync_create(float *grad, int64_t len, int64_t bucket_bytes, wx_grad_sync **out) {
    *out = wx_calloc(1, sizeof **out);
    (*out)->len = len;
    return WX_OK;
}
void wx_grad_sync_destroy(wx_grad_sync *s) { free(s); }
int wx_grad_sync_buckets(const wx_grad_sync *s) { return 1; }
double wx_grad_sync_started_early(const wx_grad_sync *s) { return 0; }
wx_status wx_grad_sync_ready(wx_grad_sync *s, int64_t lo) { return WX_OK; }
wx_status wx_grad_sync_progress(wx_grad_sync *s) { return WX_OK; }
wx_status wx_grad_sync_finish(wx_grad_sync *s) { return WX_OK; }
double wx_grad_sync_seconds(const wx_grad_sync *s) { return 0; }
void wx_grad_sync_reset_clock(wx_grad_sync *s) {}

#endif
