/* wxcast: one binary, one small file per subcommand (src/cli/cmd_<name>.c). */
#include <stdlib.h>

#include "cli/wx_cli.h"
#include "ops/wx_gemm.h"

int main(int argc, char **argv) {
    /* OpenBLAS's pthread pool only costs here (ops/wx_gemm.h): its idle worker spun in
     * sched_yield beside our threads for ~0.1 s after start-up (strace of `wxcast ingest`:
     * ~2800 calls, 0.05-0.09 of its ~0.45 CPU-s). It cannot be kept from starting (OpenBLAS's
     * constructor runs before main), so it is stopped, unless the user chose a count. */
    if (!getenv("OPENBLAS_NUM_THREADS") && !getenv("GOTO_NUM_THREADS")) wx_blas_one_thread(1);
    return wx_cli_main(argc, argv);
}
