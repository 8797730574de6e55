#include "cli/wx_cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/wx_args.h"
#include "core/wx_error.h"
#include "core/wx_fs.h"
#include "io/wx_source.h"
#include "wx_build_config.h"

const wx_command wx_commands[] = {
    {"info", "version, build options, library versions and devices", wx_cmd_info},
    {"mesh", "GraphCast multi-mesh and grid<->mesh graph sizes for a mesh level and grid", wx_cmd_mesh},
    {"ingest", "build a training archive from GRIB/NetCDF files as a recipe describes", wx_cmd_ingest},
    {"synth", "run the synthetic reanalysis and write ERA5-convention GRIB2/NetCDF", wx_cmd_synth},
    {"inspect", "an archive's channels, grid, times, statistics and climatology; a GRIB/NetCDF file's variables; a checkpoint", wx_cmd_inspect},
    {"verify", "check every record, climatology slab and checksum of an archive and recompute its statistics", wx_cmd_verify},
    {"dump", "write an archive's fields (or a subset) as CF NetCDF", wx_cmd_dump},
    {"train", "train FourCastNet or GraphCast from a training config; checkpoints, resume, MPI", wx_cmd_train},
    {"forecast", "roll a trained model out from an archive record or analysis file; CF NetCDF, GRIB", wx_cmd_forecast},
    {"demo", "synthetic world -> archive -> FourCastNet and/or GraphCast -> 10-day forecasts scored vs baselines", wx_cmd_demo},
    {"export-weights", "checkpoint -> safetensors with the PyTorch (NVlabs) parameter names", wx_cmd_export_weights},
    {"import-weights", "FourCastNet safetensors (NVlabs names) or DeepMind GraphCast .npz -> checkpoint", wx_cmd_import_weights},
    {"export", "forecast file -> PNG maps per variable and lead, wind layers, static web viewer", wx_cmd_export},
    {"eval", "WeatherBench2 scores of forecast files vs an archive, baselines, CSV/JSON/plots", wx_cmd_eval},
    {"daily", "a day's forecast, ensemble, GRIB, maps and viewer from its analysis (--date, default today)", wx_cmd_daily},
    {NULL, NULL, NULL},
};

/* The process count an MPI launcher gave this process (1 when none): Open MPI's, or the PMI
 * variables srun and Hydra set per process (not SLURM_NTASKS, which a batch script's own shell
 * also has). */
static long launched_ranks(int *rank) {
    static const char *const size_vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
    static const char *const rank_vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK"};
    for (int i = 0; i < 2; i++) {
        const char *v = getenv(size_vars[i]), *r = getenv(rank_vars[i]);
        long n = v ? strtol(v, NULL, 10) : 0;
        if (n > 1) {
            *rank = r ? (int)strtol(r, NULL, 10) : 0;
            return n;
        }
    }
    *rank = 0;
    return 1;
}

static void usage(FILE *out) {
    fprintf(out, "usage: wxcast <command> [options]\n\ncommands:\n");
    for (const wx_command *c = wx_commands; c->name; c++) fprintf(out, "  %-10s %s\n", c->name, c->summary);
    fprintf(out, "\nglobal options (before the command): -q/--quiet, -v/--verbose, --version, -h/--help\n"
                 "  -q silences progress and information on stderr; a command's result line (what it\n"
                 "  wrote) stays on stdout, and errors always print.\n"
                 "'wxcast <command> --help' lists a command's options.\n");
}

int wx_cli_main(int argc, char **argv) {
    /* Global options come before the subcommand (wx_args also accepts them after it). */
    int first = 1;
    while (first < argc && argv[first][0] == '-') {
        const char *a = argv[first];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--version")) {
            printf("wxcast %s\n", WX_VERSION);
            return 0;
        }
        if (!wx_args_global(a)) {
            fprintf(stderr, "wxcast: error: unknown option '%s' (see 'wxcast --help')\n", a);
            return WX_ERR_USAGE;
        }
        first++;
    }
    if (first >= argc) {
        usage(stderr);
        return WX_ERR_USAGE;
    }
    const char *name = argv[first];
    if (!strcmp(name, "help")) {
        if (first + 1 >= argc) {
            usage(stdout);
            return 0;
        }
        /* "wxcast help info" = "wxcast info --help" */
        for (const wx_command *c = wx_commands; c->name; c++)
            if (!strcmp(c->name, argv[first + 1])) {
                char *hargv[] = {argv[first + 1], "--help", NULL};
                return c->run(2, hargv);
            }
        name = argv[first + 1];
    } else {
        for (const wx_command *c = wx_commands; c->name; c++)
            if (!strcmp(c->name, name)) {
                /* an interrupted run removes its temporaries; a failed one, the folders it made
                 * that are still empty (core/wx_fs.h) */
                int rank;
                long ranks = launched_ranks(&rank);
                if (ranks > 1 && c->run != wx_cmd_train && c->run != wx_cmd_info) {
                    /* each process would do all the work and write the same outputs (info only
                     * prints: each rank's devices are worth seeing under srun) */
                    if (rank == 0)
                        fprintf(stderr, "wxcast: error: %s: started as %ld MPI processes; only "
                                        "'wxcast train' runs data parallel: run %s without "
                                        "mpirun/srun\n", name, ranks, name);
                    return WX_ERR_USAGE;
                }
                wx_fs_cleanup_install();
                wx_source_quiet_libraries();
                int rc = c->run(argc - first, argv + first);
                /* a result lost on a full disk or closed pipe is a failure, not a silent exit 0 */
                if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout))) {
                    fprintf(stderr, "wxcast: error: %s: cannot write to standard output: %s\n", name,
                            strerror(errno));
                    rc = WX_ERR_RUN;
                }
                if (rc != 0) wx_fs_created_dirs_remove();
                return rc;
            }
    }
    fprintf(stderr, "wxcast: error: unknown command '%s' (see 'wxcast --help')\n", name);
    return WX_ERR_USAGE;
}
