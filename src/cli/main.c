/* wxcast: one binary, one small file per subcommand (src/cli/cmd_<name>.c). */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <cblas.h>
#include <dlfcn.h>
#include <stdlib.h>

#include "cli/wx_cli.h"

/* Every GEMM of wxcast runs single-threaded inside its own OpenMP team (ops/wx_gemm.h), so
 * OpenBLAS's pthread pool only costs: OpenBLAS starts it from its library constructor, one worker
 * per extra core, and each worker spins in sched_yield for ~0.1 s before it sleeps (strace of
 * `wxcast ingest`: ~2800 sched_yield calls; 0.05-0.09 of its ~0.45 CPU-s, taken from the decode
 * threads). The pool cannot be kept from starting (the constructor runs before main and reads
 * the environment libc had at start), so it is stopped here, through the call OpenBLAS itself
 * makes before fork and at exit (looked up, not linked: it is not part of the API). Only for
 * the pthread build: in OpenBLAS's OpenMP build the count is libgomp's (setting it would make the
 * whole process single-threaded) and there is no pool of its own. A count the user chose
 * (OPENBLAS_NUM_THREADS, GOTO_NUM_THREADS) is kept here; training and rollout set 1 whatever it
 * is, as no GEMM of theirs uses OpenBLAS's threads. */
static void openblas_pool_off(void) {
    if (openblas_get_parallel() != 1) return; /* 0 sequential, 1 pthreads, 2 OpenMP */
    if (getenv("OPENBLAS_NUM_THREADS") || getenv("GOTO_NUM_THREADS")) return;
    /* First the count (openblas_set_num_threads starts the pool again when it is down), then
     * the stop; later calls leave a count of 1 alone (wx_blas_serial_begin, the trainer). */
    openblas_set_num_threads(1);
    int (*shutdown)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "blas_thread_shutdown_");
    if (shutdown) shutdown();
}

int main(int argc, char **argv) {
    openblas_pool_off();
    return wx_cli_main(argc, argv);
}
