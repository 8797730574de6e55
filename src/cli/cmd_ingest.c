#include <stdio.h>

#include "cli/wx_args.h"
#include "cli/wx_cli.h"
#include "ingest.h"

int wx_cmd_ingest(int argc, char **argv) {
    static const wx_arg_option opts[] = {
        {"output", 1, "archive folder (overrides the recipe's output)", "DIR"},
        {"overwrite", 0, "replace a finished archive of another recipe or other sources in the "
                         "output folder (without it that is an error, exit 2)", NULL},
        {NULL, 0, NULL, NULL},
    };
    static const wx_arg_spec spec = {
        "ingest", "[options] RECIPE.yaml",
        "Builds a training archive from GRIB/NetCDF files as the recipe describes "
        "(configs/recipes/example.yaml documents every key). Rerunning an interrupted ingest "
        "resumes it: finished shards are kept. A finished archive of another recipe in the output "
        "folder is kept unless --overwrite.",
        opts, 1, 1};
    wx_args a;
    int rc = wx_args_parse(&spec, argc, argv, &a);
    if (rc != WX_ARGS_CONTINUE) return rc;
    wx_ingest_opts o = {0};
    o.output = wx_args_get(&a, "output");
    o.overwrite = wx_args_flag(&a, "overwrite");
    wx_status st = wx_ingest_run(a.positionals[0], &o);
    if (st != WX_OK) {
        fprintf(stderr, "wxcast: error: %s\n", wx_error_message());
        return st;
    }
    printf("%s: %lld records (%lld decoded, %d shards kept from an earlier run)\n", o.archive_dir,
           (long long)o.records_total, (long long)o.records_written, o.shards_skipped);
    return 0;
}
