#include <stdio.h>
#include <string.h>

#include "cli/wx_args.h"
#include "cli/wx_cli.h"
#include "core/wx_fs.h"
#include "infer/export.h"
#include "io/png_map.h"
#include "meteo/wx_time.h"

int wx_cmd_export(int argc, char **argv) {
    static const wx_arg_option opts[] = {
        {"output", 1, "folder for the maps, wind layers, manifest and index.html", "DIR"},
        {"vars", 1, "variables to export (default: all; u/v pairs as wind speed)", "2t,msl,z500,..."},
        {"leads", 1, "leads in hours: 0,24,48 or 0-120 or 0-240/24 (default: all)", "HOURS"},
        {"time", 1, "initial time to draw, for a file of forecasts from several (WeatherBench2's "
                    "layout; required there)", "ISO"},
        {"kelvin", 0, "temperatures in K (default: °C)", NULL},
        {"width", 1, "map width in pixels (default: twice the grid's columns, 720..1440)", "PIXELS"},
        {"no-wind", 0, "do not write wind-particle layers for u/v pairs", NULL},
        {"no-coast", 0, "no coastlines (e.g. for a synthetic world)", NULL},
        {"wind-columns", 1, "thin wind layers to at most this many columns (default 360)", "N"},
        {"threads", 1, "rendering threads, 0..1024 (default 0: OpenMP's)", "N"},
        {NULL, 0, NULL, NULL},
    };
    static const wx_arg_spec spec = {
        "export", "FORECAST --output DIR [options]",
        "Writes one equirectangular PNG per variable and lead (fixed, documented colour scales; "
        "coastlines; colour bar; title with valid time and lead), wind-particle layers in "
        "grib2json layout from u/v pairs, manifest.json/manifest.js, and a static web viewer "
        "(index.html: variable picker, time slider, wind particles) that works opened from the "
        "file system. Every file is written atomically; reruns give identical files. See "
        "docs/products.md.",
        opts, 1, 1};
    wx_args a;
    int rc = wx_args_parse(&spec, argc, argv, &a);
    if (rc != WX_ARGS_CONTINUE) return rc;
    wx_export_opts o;
    wx_export_opts_default(&o);
    o.forecast = a.positionals[0];
    o.output = wx_args_get(&a, "output");
    o.vars = wx_args_get(&a, "vars");
    o.leads = wx_args_get(&a, "leads");
    o.celsius = !wx_args_flag(&a, "kelvin");
    o.wind = !wx_args_flag(&a, "no-wind");
    o.coast = !wx_args_flag(&a, "no-coast");
    if (!o.output)
        return wx_cli_error(wx_error_set(WX_ERR_USAGE, "export: --output DIR is required "
                                                       "(see 'wxcast export --help')"));
    int64_t width, cols;
    wx_status st = wx_output_dir_check(o.output, "--output");
    if (st == WX_OK) st = wx_args_int(&a, "width", 0, &width);
    if (st == WX_OK) st = wx_args_int(&a, "wind-columns", 360, &cols);
    if (st == WX_OK) st = wx_args_threads(&a, &o.threads);
    if (st == WX_OK && wx_args_get(&a, "time")) {
        o.has_time = 1;
        st = wx_time_parse(wx_args_get(&a, "time"), "--time", &o.time);
    }
    /* checked here, before the int conversion: 4294967416 would wrap to 120 */
    if (st == WX_OK && (width < 0 || width > WX_MAP_WIDTH_MAX + 1))
        st = wx_error_set(WX_ERR_USAGE, "--width %s: expected %d..%d pixels (or 0: from the grid)",
                          wx_args_get(&a, "width"), WX_MAP_WIDTH_MIN, WX_MAP_WIDTH_MAX);
    if (st == WX_OK && o.vars && !strpbrk(o.vars, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"))
        st = wx_error_set(WX_ERR_USAGE, "--vars '%s': names no variable (leave it out for all)", o.vars);
    if (st == WX_OK && (cols < 2 || cols > 1000000))
        st = wx_error_set(WX_ERR_USAGE, "--wind-columns %s: expected 2..1000000",
                          wx_args_get(&a, "wind-columns"));
    if (st != WX_OK) return wx_cli_error(st);
    o.width = (int)width, o.wind_max_nlon = (int)cols;
    wx_export_result r;
    st = wx_export_run(&o, &r);
    if (st != WX_OK) return wx_cli_error(st);
    printf("export: %d variables x %d leads: %d maps, %d wind layers -> %s/index.html\n", r.nvars,
           r.nleads, r.npng, r.nwind_files, o.output);
    return 0;
}
