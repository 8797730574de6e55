#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/wx_args.h"
#include "cli/wx_cli.h"
#include "core/wx_fs.h"
#include "io/archive_dump.h"

static wx_status parse_time(const wx_args *a, const char *name, int *has, wx_time *t) {
    const char *v = wx_args_get(a, name);
    *has = v != NULL;
    if (!v) return WX_OK;
    char what[32];
    snprintf(what, sizeof what, "--%s", name);
    if (wx_time_parse(v, what, t) != WX_OK) return wx_error_wrap(WX_ERR_USAGE, "%s", "");
    return WX_OK;
}

int wx_cmd_dump(int argc, char **argv) {
    static const wx_arg_option opts[] = {
        {"output", 1, "NetCDF file to write (required)", "FILE.nc"},
        {"vars", 1, "channels to write, comma-separated, in this order (default: all)", "a,b"},
        {"start", 1, "first valid time (default: the archive's first)", "ISO"},
        {"end", 1, "last valid time, inclusive (default: the archive's last)", "ISO"},
        {"deflate", 1, "compression level 0-9 (default 0)", "N"},
        {"as-forecast", 0, "write the fields as a forecast from the first time written "
                           "(forecast_reference_time): a perfect forecast, to check `wxcast eval`",
         NULL},
        {NULL, 0, NULL, NULL},
    };
    static const wx_arg_spec spec = {
        "dump", "ARCHIVE --output FILE.nc [--vars a,b] [--start ISO --end ISO]",
        "Writes the archive's fields in physical units as CF-1.8 NetCDF: dimensions (time, "
        "latitude, longitude), one variable per channel named as in the recipe. The file is "
        "written atomically.",
        opts, 1, 1};
    wx_args a;
    int rc = wx_args_parse(&spec, argc, argv, &a);
    if (rc != WX_ARGS_CONTINUE) return rc;
    const char *out = wx_args_get(&a, "output");
    if (!out) {
        wx_error_set(WX_ERR_USAGE, "dump: --output FILE.nc is required");
        return wx_cli_error(WX_ERR_USAGE);
    }
    wx_status cs = wx_output_path_check(out, "--output");
    if (cs != WX_OK) return wx_cli_error(cs);
    wx_dump_opts o = {0};
    o.vars = wx_args_get(&a, "vars");
    int64_t deflate;
    wx_status st = wx_args_int(&a, "deflate", 0, &deflate);
    if (st == WX_OK && (deflate < 0 || deflate > 9))
        st = wx_error_set(WX_ERR_USAGE, "--deflate %lld: expected 0..9", (long long)deflate);
    o.deflate = (int)deflate;
    o.as_forecast = wx_args_flag(&a, "as-forecast");
    if (st == WX_OK) st = parse_time(&a, "start", &o.has_start, &o.start);
    if (st == WX_OK) st = parse_time(&a, "end", &o.has_end, &o.end);
    if (st == WX_OK) st = wx_archive_dump(a.positionals[0], out, &o);
    if (st != WX_OK) return wx_cli_error(st);
    printf("%s: %d variables x %lld times\n", out, o.vars_written, (long long)o.times_written);
    return 0;
}
