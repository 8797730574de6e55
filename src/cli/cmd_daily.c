/* wxcast daily: a day's forecast products from that day's analysis (--date, default today; src/infer/daily.h). */
#include <stdio.h>

#include "cli/cmd_forecast_ext.h"
#include "cli/wx_args.h"
#include "cli/wx_cli.h"
#include "infer/daily.h"

int wx_cmd_daily(int argc, char **argv) {
    static const wx_arg_option opts[] = {
        {"date", 1, "day to run (default: today, UTC)", "YYYY-MM-DD"},
        {"threads", 1, "compute threads, 0..1024 (default 0: the config's)", "N"},
        {"force", 0, "make the day's products again and replace its folder, built aside first (without "
                     "it a finished run of the same config is skipped, and a folder of another "
                     "config, a rewritten analysis or one made by hand is an error, exit 2)", NULL},
        WX_FORECAST_DEVICE_OPTIONS
        {NULL, 0, NULL, NULL},
    };
    static const wx_arg_spec spec = {
        "daily", "CONFIG.yaml [--date YYYY-MM-DD] [--force] [--threads N] [--device cpu|cuda] "
                 "[--precision fp32|bf16]",
        "Finds the day's analysis in the drop folder of the config, runs the deterministic forecast "
        "(and the ensemble when configured) and writes NetCDF, GRIB2, PNG maps and the web viewer "
        "into <output>/<YYYYMMDD>T<HH>/, built in a temporary folder and renamed when complete. A "
        "day finished with the same config (daily.json) is skipped. --device/--precision override the config's device/precision keys. "
        "Example config: configs/daily/example.yaml.",
        opts, 1, 1};
    wx_args a;
    int rc = wx_args_parse(&spec, argc, argv, &a);
    if (rc != WX_ARGS_CONTINUE) return rc;
    wx_daily_opts o = {0};
    o.config = a.positionals[0];
    o.date = wx_args_get(&a, "date");
    o.force = wx_args_flag(&a, "force");
    wx_status st = wx_args_threads(&a, &o.threads);
    if (st == WX_OK) st = wx_forecast_device_from_args(&a, &o.device, &o.precision);
    if (st != WX_OK) return wx_cli_error(st);
    st = wx_daily_run(&o);
    if (st != WX_OK) return wx_cli_error(st);
    if (o.skipped)
        printf("daily: %s already done, skipped\n", o.folder);
    else
        printf("daily: %s: forecast%s, %d maps (%.1f s)\n", o.folder, o.members ? " + ensemble" : "",
               o.npng, o.seconds);
    if (fflush(stdout) != 0) return wx_cli_error(wx_error_set(WX_ERR_RUN, "daily: cannot write output"));
    return 0;
}
