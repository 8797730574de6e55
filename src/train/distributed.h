/* Data parallelism over MPI (GUIDE §8): one process per device, every rank holding the whole
 * model, each computing the gradient of its share of the global batch. Without MPI (a build with
 * WX_MPI=OFF, or a process not started by mpirun/srun) this is the size-1 case: every call is a
 * no-op that succeeds, so the trainer has one code path.
 *
 * Errors: the communicator is a duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN, and every MPI
 * call is checked; a failing call is returned as WX_ERR_RUN naming the call. Such an error leaves
 * the other ranks waiting inside a collective, so the caller (the CLI) must end the job with
 * wx_dist_abort(). Errors that every rank learns through wx_dist_agree() end cleanly instead: all
 * ranks return, one of them prints the message (wx_dist_failure_is_remote() is 0 there only).
 *
 * MPI is initialised only when a launcher started the process (OMPI_COMM_WORLD_SIZE, PMIX_RANK,
 * PMI_RANK or PMI_SIZE in the environment) or WXCAST_MPI=1; WXCAST_MPI=0 forces one process. */
#ifndef WX_TRAIN_DISTRIBUTED_H
#define WX_TRAIN_DISTRIBUTED_H

#include <stddef.h>
#include <stdint.h>

#include "core/wx_error.h"

/* Gradient buckets of about this size are all-reduced as one message (PyTorch DDP's default). */
#define WX_DIST_BUCKET_BYTES_DEFAULT (25 * 1024 * 1024)

typedef enum { WX_DIST_SUM = 0, WX_DIST_AVG = 1 } wx_dist_op;

/* Initialises MPI (thread level FUNNELED: only the main thread calls MPI) when launched under
 * one, sets the log rank prefix when there is more than one rank. Safe to call once per process. */
wx_status wx_dist_init(int *argc, char ***argv);
/* Finalises MPI if wx_dist_init started it. */
void wx_dist_finalize(void);
/* Ends the whole job with `code` (MPI_Abort on every rank); a plain exit(code) with one rank. */
_Noreturn void wx_dist_abort(int code);

int wx_dist_rank(void);
int wx_dist_size(void);
/* This rank's index among the ranks on its node (from the launcher's environment: OpenMPI, Slurm,
 * MPICH, PMIx; the world rank when none is set): picks the GPU of a one-process-per-GPU job. */
int wx_dist_local_rank(void);
/* 1 when MPI is running with more than one rank. */
int wx_dist_active(void);

/* Collective status agreement: every rank passes its local status. Returns WX_OK when all are OK,
 * otherwise the status of the lowest failing rank on every rank. That rank keeps its own message;
 * the others get "rank R failed" and wx_dist_failure_is_remote() = 1. Either way
 * wx_dist_failure_is_agreed() = 1: every rank knows, so no abort is needed. */
wx_status wx_dist_agree(wx_status local);
int wx_dist_failure_is_remote(void);
int wx_dist_failure_is_agreed(void);

wx_status wx_dist_barrier(void);
/* buf (bytes) from `root` to every rank. */
wx_status wx_dist_bcast(void *buf, size_t bytes, int root);
/* In place over all ranks; AVG divides the sum by the rank count. */
wx_status wx_dist_allreduce_f32(float *buf, int64_t n, wx_dist_op op);
wx_status wx_dist_allreduce_f64(double *buf, int64_t n, wx_dist_op op);
/* Every rank contributes one u32; out (size) receives them in rank order. */
wx_status wx_dist_allgather_u32(uint32_t v, uint32_t *out);

/* Contiguous split of n elements over `size` ranks: [off[r], off[r] + cnt[r]) for rank r, the
 * first n % size ranks one element longer. off/cnt (size). Also the ZeRO-1 shard layout. */
void wx_dist_split(int64_t n, int size, int64_t *off, int64_t *cnt);

/* ---- bucketed gradient all-reduce -------------------------------------------------------------
 * The flat gradient buffer grad (len) is averaged over the ranks by wx_grad_sync_finish, so grad
 * is the mean gradient over the global batch on every rank, with the same bits everywhere and
 * run to run for a given rank count (each chunk is summed on one rank in a fixed order and copied
 * to the others; the 1/N is folded into the sum).
 *
 * Two methods (grad_sync.c says why):
 *  - node shared memory, when every rank runs on one node and the caller passes grad = NULL: the
 *    sync allocates the gradient itself, as this rank's segment of an MPI-3 shared window
 *    (wx_grad_sync_buffer; the caller moves its gradient there, e.g. wx_params_borrow_grad), and
 *    the finish reads the other ranks' gradients in place, no messages. Nothing starts early.
 *  - a ring of non-blocking point-to-point messages otherwise (or with WXCAST_ALLREDUCE=ring):
 *    grad is cut into contiguous buckets of about bucket_bytes. A backward produces gradients
 *    from the last layer to the first, i.e. from high offsets to low in the parameter layout, so
 *    wx_grad_sync_ready(s, lo) says "grad[lo, len) is final": every bucket lying wholly inside it
 *    starts at once (reduce-scatter then all-gather, overlapping the rest of the backward);
 *    wx_grad_sync_progress advances the buckets in flight between layers; finish starts what is
 *    left and completes all. Extra memory: (len / N) floats of receive space.
 * grad = NULL on one rank, or across nodes, gives a plain allocated buffer. */
typedef struct wx_grad_sync wx_grad_sync;

wx_status wx_grad_sync_create(float *grad, int64_t len, int64_t bucket_bytes, wx_grad_sync **out);
void wx_grad_sync_destroy(wx_grad_sync *s);
/* The gradient buffer the sync reduces: grad as given, or the one it allocated for grad = NULL
 * (valid until destroy). */
float *wx_grad_sync_buffer(wx_grad_sync *s);
/* WX_GRAD_SYNC_SHM, WX_GRAD_SYNC_RING or WX_GRAD_SYNC_NONE (one rank), for the log. */
#define WX_GRAD_SYNC_SHM "node shared memory"
#define WX_GRAD_SYNC_RING "a ring of MPI messages"
#define WX_GRAD_SYNC_NONE "none (one rank)"
const char *wx_grad_sync_method(const wx_grad_sync *s);
/* Message buckets (1 for shared memory). */
int wx_grad_sync_buckets(const wx_grad_sync *s);
/* Buckets per finish that had already been started by wx_grad_sync_ready (i.e. overlapped the
 * backward), averaged over the finishes so far; 0 for shared memory. */
double wx_grad_sync_started_early(const wx_grad_sync *s);
/* Marks grad[lo, len) final: starts the all-reduce of every bucket inside it not yet started
 * (ring; a no-op for shared memory). */
wx_status wx_grad_sync_ready(wx_grad_sync *s, int64_t lo);
/* Advances the buckets in flight as far as the arrived messages allow (MPI_Testall, additions,
 * next ring step); cheap when nothing has arrived, call between layers. */
wx_status wx_grad_sync_progress(wx_grad_sync *s);
/* Completes the all-reduce (collective: every rank calls it once per step): grad is the mean. */
wx_status wx_grad_sync_finish(wx_grad_sync *s);
/* ZeRO-1 through the sync (instead of finish): reduce_scatter leaves in grad[off, off + cnt) the
 * mean of this rank's shard (wx_dist_split's layout); allgather, once each rank has updated its
 * shard of data (len), copies every shard to every rank. Over the shared segments when the sync
 * has them (the spent gradient shard carries the update), else wx_dist_reduce_scatter_avg and
 * wx_dist_allgather_shards. */
wx_status wx_grad_sync_reduce_scatter(wx_grad_sync *s);
wx_status wx_grad_sync_allgather(wx_grad_sync *s, float *data);
/* Σ g² in double of what the last reduction produced, when it computed it on the way (node shared
 * memory: each rank sums its own chunk): after finish, of the whole mean gradient (the ranks'
 * parts added in rank order, the same bits on every rank); after reduce_scatter, of this rank's
 * shard. Returns 1 and sets *sumsq, or 0 when the caller must compute it. */
int wx_grad_sync_sumsq(const wx_grad_sync *s, double *sumsq);
/* Seconds spent inside the all-reduce (start, progress, wait) since the last reset. */
double wx_grad_sync_seconds(const wx_grad_sync *s);
void wx_grad_sync_reset_clock(wx_grad_sync *s);

/* ---- ZeRO-1: optimizer state sharded over ranks -----------------------------------------------
 * Rank r owns elements [off[r], off[r] + cnt[r]) of the flat parameter buffer (wx_dist_split):
 * reduce_scatter leaves the mean gradient of its shard in grad[off, off + cnt); each rank updates
 * its shard with AdamW (m and v exist only for the shard); allgather copies every rank's updated
 * shard into everyone's params. */
wx_status wx_dist_reduce_scatter_avg(float *grad, int64_t len);
wx_status wx_dist_allgather_shards(float *buf, int64_t len);
/* Collects every rank's shard of a sharded buffer (local: this rank's cnt elements) into full
 * (len) on `root` (full unused elsewhere). */
wx_status wx_dist_gather_shards(const float *local, float *full, int64_t len, int root);
/* The reverse: root's full (len) → each rank's shard in local. */
wx_status wx_dist_scatter_shards(const float *full, float *local, int64_t len, int root);

#endif
