/* wxcast: one binary, one small file per subcommand (src/cli/cmd_<name>.c). */
#include <stdlib.h>

#include "cli/wx_cli.h"

/* Every GEMM of wxcast runs single-threaded inside its own OpenMP team (ops/wx_gemm.h), so
 * OpenBLAS's pthread pool only costs: OpenBLAS starts it from its library constructor with one
 * worker per extra core, and each worker spins in sched_yield for ~0.1 s before it sleeps (perf
 * of `wxcast ingest`: 0.05-0.09 s of the run's ~0.45 CPU-s, taken from the decode threads). The
 * preinit array runs before any shared library's constructor, so the pool is never started,
 * unless the user chose a count. */
static void one_openblas_thread(int argc, char **argv, char **envp) {
    (void)argc, (void)argv, (void)envp;
    setenv("OPENBLAS_NUM_THREADS", "1", 0);
}
__attribute__((section(".preinit_array"), used)) static void (*const wx_preinit)(int, char **, char **) =
    one_openblas_thread;

int main(int argc, char **argv) { return wx_cli_main(argc, argv); }
