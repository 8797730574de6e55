/* wxcast forecast: one forecast of any trained model (FourCastNet, GraphCast) from an archive state
 * or analysis files (src/infer/forecast.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_forecast_ext.h"
#include "cli/wx_args.h"
#include "cli/wx_cli.h"
#include "core/wx_fs.h"
#include "core/wx_log.h"
#include "infer/forecast.h"

int wx_cmd_forecast(int argc, char **argv) {
    static const wx_arg_option opts[] = {
        {"model", 1, "checkpoint written by `wxcast train` (required)", "CKPT"},
        {"init", 1, "archive, or GRIB/NetCDF analysis files (comma-separated: e.g. CDS single-level "
                    "and pressure-level files) holding the initial state (required)",
         "ARCHIVE|FILE[,FILE...]"},
        {"time", 1, "initial time (required with an archive; a file: default its earliest time)",
         "ISO"},
        {"steps", 1, "model steps to roll out (required unless --lead; 40 = 10 days of 6 h)", "N"},
        {"output", 1, "NetCDF file to write (required unless --grib)", "FILE.nc"},
        {"threads", 1, "compute threads, 0..1024 (default 0: all cores)", "N"},
        {"precip", 1, "precipitation model (wxcast train --stage precip): adds tp at leads >= 1",
         "CKPT"},
        {"init-prev", 1, "GraphCast: file with the state at --time - 6h (default: from --init)", "FILE"},
        WX_FORECAST_EXT_OPTIONS
        WX_FORECAST_DEVICE_OPTIONS
        {NULL, 0, NULL, NULL},
    };
    static const wx_arg_spec spec = {
        "forecast", "--model CKPT --init ARCHIVE|FILE [--time ISO] (--steps N | --lead D) --output FILE.nc",
        "Rolls the model out autoregressively from the initial state (an archive record or an\n"
        "analysis file) and writes CF-1.8 "
        "NetCDF:\ndimensions (time, latitude, longitude) with time the valid time, latitude north "
        "to south,\nlongitude from 0 east; one variable per channel; lead 0 (the initial state) "
        "first; the scalar\nforecast_reference_time and forecast_period(time) in hours. Memory "
        "does not grow with --steps.\nAny checkpoint of `wxcast train`: FourCastNet starts from the state at --time; "
        "GraphCast from\nthe states at --time - 6h and --time (a file holds both, or --init-prev "
        "names the earlier;\nwithout --time the file's first two times).\n--device cuda rolls out on GPU 0: the states stay in GPU memory, each lead's output is\ncopied back.",
        opts, 0, 0};
    wx_args a;
    int rc = wx_args_parse(&spec, argc, argv, &a);
    if (rc != WX_ARGS_CONTINUE) return rc;
    static const char *const req[] = {"model", "init", "time", "steps", "output"};
    wx_forecast_ext x;
    const char *device = NULL, *precision = NULL;
    wx_status xs = wx_forecast_ext_from_args(&a, &x);
    if (xs == WX_OK) xs = wx_forecast_device_from_args(&a, &device, &precision);
    if (xs == WX_OK && precision && !strcmp(precision, "bf16") && !(device && !strcmp(device, "cuda")))
        xs = wx_error_set(WX_ERR_USAGE, "--precision bf16 needs --device cuda");
    if (xs != WX_OK) return wx_cli_error(WX_ERR_USAGE);
    x.init_prev = wx_args_get(&a, "init-prev");
    for (int i = 0; i < 5; i++) /* --time: archives only; --lead for --steps; --grib for --output */
        if (!wx_args_get(&a, req[i]) && !(i == 2 && !wx_forecast_init_is_archive(wx_args_get(&a, "init"))) &&
            !(i == 3 && x.lead_s > 0) && !(i == 4 && x.grib_dir)) {
            wx_error_set(WX_ERR_USAGE, "forecast: --%s is required%s (see 'wxcast forecast --help')",
                         req[i], i == 3 ? " (or --lead DURATION)" : i == 4 ? " (or --grib DIR)" : "");
            return wx_cli_error(WX_ERR_USAGE);
        }
    wx_forecast_opts o = {0};
    o.model = wx_args_get(&a, "model");
    o.precip = wx_args_get(&a, "precip");
    o.init = wx_args_get(&a, "init");
    o.output = wx_args_get(&a, "output");
    o.progress = 1;
    o.device = device;
    o.bf16 = precision && !strcmp(precision, "bf16");
    wx_status st = o.output ? wx_output_path_check(o.output, "--output") : WX_OK;
    if (st == WX_OK && o.output) { /* an input named as the output would be overwritten */
        const char *ins[] = {o.model, o.precip, x.init_prev};
        for (int i = 0; i < 3 && st == WX_OK; i++) st = wx_output_not_input(o.output, ins[i], "--output");
        char *list = wx_strdup(o.init ? o.init : "");
        for (char *save = NULL, *t = strtok_r(list, ",", &save); t && st == WX_OK; t = strtok_r(NULL, ",", &save))
            st = wx_output_not_input(o.output, t, "--output");
        free(list);
    }
    if (st == WX_OK && x.grib_dir) st = wx_output_dir_check(x.grib_dir, "--grib");
    if (st == WX_OK && x.grib_dir && o.output && !strcmp(x.grib_dir, o.output))
        st = wx_error_set(WX_ERR_USAGE, "--grib %s names the --output file: give the GRIB2 files a "
                          "folder of their own", x.grib_dir);
    if (st == WX_OK) st = wx_args_int(&a, "steps", 0, &o.steps);
    if (st == WX_OK) st = wx_args_threads(&a, &o.threads);
    if (st == WX_OK && o.steps < 0) st = wx_error_set(WX_ERR_USAGE, "forecast: --steps must be >= 0");
    if (st == WX_OK && x.has_time) st = wx_time_parse(wx_args_get(&a, "time"), "--time", &o.time);
    if (st != WX_OK) return wx_cli_error(st == WX_ERR_RUN ? WX_ERR_USAGE : st);
    st = wx_forecast_run_ext(&o, &x);
    if (st != WX_OK) return wx_cli_error(st);
    char members[32] = "";
    if (x.members > 1) snprintf(members, sizeof members, " x %d members", x.members);
    if (o.output)
        printf("%s: %d variables x %lld times (lead 0..%lldh)%s, %.1f s\n", o.output, o.nvars,
               (long long)(o.steps + 1), (long long)(o.steps * o.step_s / 3600), members, o.seconds);
    if (x.grib_dir) /* a folder, not a file: say what is in it */
        printf("%s: GRIB2 (surface and pressure-level files), %d variables x %lld times (lead "
               "0..%lldh)%s\n", x.grib_dir, o.nvars, (long long)(o.steps + 1),
               (long long)(o.steps * o.step_s / 3600), members);
    if (x.mean_path[0]) /* an ensemble's summaries are files of their own: say where */
        printf("%s: ensemble mean\n%s: ensemble spread (standard deviation)\n", x.mean_path, x.spread_path);
    if (fflush(stdout) != 0)
        return wx_cli_error(wx_error_set(WX_ERR_RUN, "forecast: cannot write output"));
    return 0;
}
