#include <stdio.h>

#include "cli/wx_cli.h"
#include "wx_build_config.h"

int wx_cmd_info(int argc, char **argv) {
    printf("wxcast %s (MPI %d, CUDA %d)\n", WX_VERSION, WX_HAVE_MPI, WX_HAVE_CUDA);
    return 0;
}
