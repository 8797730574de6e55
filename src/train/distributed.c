#include "train/distributed.h"
#include "train/distributed_mpi.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wx_log.h"
#include "core/wx_timer.h"
#include "train/watchdog.h"
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
wx_status wx_dist_mpi_check(int rc, const char *call) {
    if (rc == MPI_SUCCESS) return WX_OK;
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "code %d", rc);
    return wx_error_set(WX_ERR_RUN, "rank %d: %s failed: %s", g.rank, call, msg);
}
#define mpi_check wx_dist_mpi_check
#define MPI_TRY(call) WX_TRY(mpi_check((call), #call))

MPI_Comm wx_dist_comm(void) { return g.comm; }

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
    WX_WATCHDOG_SCOPE("the ranks' status agreement");
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
    WX_WATCHDOG_SCOPE("a barrier");
    MPI_TRY(MPI_Barrier(g.comm));
    return WX_OK;
}

wx_status wx_dist_bcast(void *buf, size_t bytes, int root) {
    if (!wx_dist_active()) return WX_OK;
    WX_WATCHDOG_SCOPE("a broadcast");
    for (size_t o = 0; o < bytes; o += WX_MPI_CHUNK) {
        size_t k = bytes - o < WX_MPI_CHUNK ? bytes - o : WX_MPI_CHUNK;
        MPI_TRY(MPI_Bcast((char *)buf + o, (int)k, MPI_BYTE, root, g.comm));
    }
    return WX_OK;
}

wx_status wx_dist_allreduce_f32(float *buf, int64_t n, wx_dist_op op) {
    if (!wx_dist_active()) return WX_OK;
    WX_WATCHDOG_SCOPE("an all-reduce");
    for (int64_t o = 0; o < n; o += WX_MPI_CHUNK) {
        int k = (int)(n - o < WX_MPI_CHUNK ? n - o : WX_MPI_CHUNK);
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
    WX_WATCHDOG_SCOPE("an all-reduce");
    for (int64_t o = 0; o < n; o += WX_MPI_CHUNK) {
        int k = (int)(n - o < WX_MPI_CHUNK ? n - o : WX_MPI_CHUNK);
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
    WX_WATCHDOG_SCOPE("an all-gather");
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
    WX_WATCHDOG_SCOPE("the gradient reduce-scatter");
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
    WX_WATCHDOG_SCOPE("the parameter all-gather");
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
    WX_WATCHDOG_SCOPE("a gather");
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
    WX_WATCHDOG_SCOPE("a scatter");
    int *cnt, *displ;
    WX_TRY(shard_layout(len, &cnt, &displ));
    wx_status s = mpi_check(MPI_Scatterv(full, cnt, displ, MPI_FLOAT, local, cnt[g.rank], MPI_FLOAT,
                                         root, g.comm), "MPI_Scatterv");
    free(cnt);
    free(displ);
    return s;
}

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

#endif
