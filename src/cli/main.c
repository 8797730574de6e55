/* wxcast: one binary, one small file per subcommand (src/cli/cmd_<name>.c). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli/wx_cli.h"
#include "io/netcdf_write.h"
#include "ops/wx_gemm.h"

int main(int argc, char **argv) {
    /* OpenBLAS's pthread pool only costs here (ops/wx_gemm.h): its idle worker spun in
     * sched_yield beside our threads for ~0.1 s after start-up (strace of `wxcast ingest`:
     * ~2800 calls, 0.05-0.09 of its ~0.45 CPU-s). It cannot be kept from starting (OpenBLAS's
     * constructor runs before main), so it is stopped, unless the user chose a count. */
    if (!getenv("OPENBLAS_NUM_THREADS") && !getenv("GOTO_NUM_THREADS")) wx_blas_one_thread(1);
    int rc = wx_cli_main(argc, argv);
    if (wx_nc_writer_exit_unclean()) { /* HDF5's exit handler would crash (io/netcdf_write.h) */
        fflush(NULL);
        _exit(rc);
    }
    return rc;
}
