#include <stdio.h>

#include "cli/wx_args.h"
#include "cli/wx_cli.h"
#include "synth/synth_run.h"

int wx_cmd_synth(int argc, char **argv) {
    static const wx_arg_option opts[] = {
        {"output", 1, "output folder (overrides the config's output)", "DIR"},
        {"print-config", 0, "print the effective config with defaults and stop", NULL},
        {NULL, 0, NULL, NULL},
    };
    static const wx_arg_spec spec = {
        "synth", "[options] CONFIG.yaml",
        "Runs the synthetic reanalysis (a forced shallow-water world) and writes monthly GRIB2 "
        "and/or CF NetCDF files in the ERA5 conventions (configs/synth/*.yaml; docs/synth.md).",
        opts, 1, 1};
    wx_args a;
    int rc = wx_args_parse(&spec, argc, argv, &a);
    if (rc != WX_ARGS_CONTINUE) return rc;
    wx_synth_opts o = {0};
    o.output = wx_args_get(&a, "output");
    o.print_config = wx_args_get(&a, "print-config") != NULL;
    wx_status st = wx_synth_run(a.positionals[0], &o);
    if (st != WX_OK) {
        fprintf(stderr, "wxcast: error: %s\n", wx_error_message());
        return st;
    }
    if (o.twin_log[0])
        printf("%s: twin z500 differences over %d days (no output files)\n", o.twin_log,
               o.twin_days);
    else if (!o.print_config)
        printf("%s: %lld output times in %d files\n", o.output_dir, (long long)o.times_written,
               o.files_written);
    return 0;
}
