/* Inside the data-parallel layer only (distributed.c, grad_sync.c): the job's communicator and
 * the MPI error check, so the gradient all-reduce can live in its own file. Not for callers
 * outside src/train/: they use distributed.h, which works with and without MPI. */
#ifndef WX_TRAIN_DISTRIBUTED_MPI_H
#define WX_TRAIN_DISTRIBUTED_MPI_H

#include "core/wx_error.h"
#include "wx_build_config.h"

#if WX_HAVE_MPI
#include <mpi.h>

/* MPI counts are int: long buffers go in pieces of at most 2^30 elements. */
enum { WX_MPI_CHUNK = 1 << 30 };

/* The duplicate of MPI_COMM_WORLD (errors returned, not fatal) every collective here uses. */
MPI_Comm wx_dist_comm(void);
/* WX_OK for MPI_SUCCESS; otherwise WX_ERR_RUN naming the rank, `call` and MPI's message. */
wx_status wx_dist_mpi_check(int rc, const char *call);
#endif

#endif
