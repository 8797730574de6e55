#include <math.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/wx_args.h"
#include "cli/inspect_source.h"
#include "cli/wx_cli.h"
#include "core/wx_json.h"
#include "io/archive.h"
#include "io/climatology.h"
#include "train/checkpoint.h"

/* The climatology of an archive in words: "climatology.wxc: 366 days x 4 hours (window 61 days),
 * statistics 2000-12-23T00:00 .. 2000-12-31T18:00, SEEPS for tp" or why there is none. */
static void describe_climatology(const char *dir, const wx_archive_meta *m, char *buf, size_t cap) {
    if (!m->has_stats || !m->climatology[0]) {
        snprintf(buf, cap, "none (%s)", m->has_stats ? "the recipe had `climatology: false`"
                                                     : "no `statistics` window in the recipe");
        return;
    }
    wx_climatology *c = NULL;
    if (wx_climatology_open(dir, &c) != WX_OK) {
        snprintf(buf, cap, "%s: unreadable (%s)", m->climatology, wx_error_message());
        return;
    }
    const wx_clim_header *h = wx_climatology_header(c);
    char a[32], b[32];
    wx_time_format(h->stats_start, a), wx_time_format(h->stats_end, b);
    int seeps = wx_climatology_has_seeps(c);
    snprintf(buf, cap, "%s: %u days x %u hours of day (window %u days) over %s .. %s; SEEPS %s%s",
             m->climatology, h->ndoy, h->nhours, h->window, a, b, seeps ? "thresholds for " : "none",
             seeps && h->seeps_chan >= 0 && h->seeps_chan < m->nchan ? m->chan[h->seeps_chan].name : "");
    wx_climatology_close(c);
}

/* A checkpoint: its training state, parameter count and the DATA and model sections (what
 * forecast and --resume read), so a user can tell checkpoints apart without a GRIB/NetCDF tool. */
static int inspect_checkpoint(const char *path) {
    wx_checkpoint ck;
    if (wx_checkpoint_read(path, &ck) != WX_OK) {
        fprintf(stderr, "wxcast: error: %s\n", wx_error_message());
        return WX_ERR_RUN;
    }
    long long n = 0;
    for (int i = 0; i < ck.ntensors; i++)
        if (ck.t[i].kind == WX_CKPT_PARAM) n += ck.t[i].size;
    printf("checkpoint %s (version %u, %.1f MB, checksum ok)\n", path, ck.version, ck.len / 1048576.0);
    if (ck.has_state) {
        printf("stage      %s: step %lld of %lld (epoch %lld)", ck.st.stage, (long long)ck.st.step,
               (long long)ck.st.total_steps, (long long)ck.st.epoch);
        if (ck.st.best_step >= 0)
            printf(", best validation loss %.6g at step %lld", ck.st.best_loss, (long long)ck.st.best_step);
        printf("\n");
    } else {
        printf("stage      none (weights only: import-weights)\n");
    }
    printf("parameters %lld (%d tensors with the optimizer state)\n", n, ck.ntensors);
    if (ck.nfields)
        printf("static     %d fields of %lldx%lld\n", ck.nfields, (long long)ck.field_h,
               (long long)ck.field_w);
    printf("--- model\n%s", ck.model_text ? ck.model_text : "");
    printf("--- data\n%s", ck.data_text ? ck.data_text : "");
    wx_checkpoint_free(&ck);
    return 0;
}

static long long archive_bytes(const char *dir, const wx_archive_meta *m) {
    long long total = 0;
    char name[64], path[4096];
    struct stat sb;
    for (int s = 0; s < wx_archive_shard_count(m); s++) {
        wx_archive_shard_name(s, name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (stat(path, &sb) == 0) total += sb.st_size;
    }
    return total;
}

int wx_cmd_inspect(int argc, char **argv) {
    static const wx_arg_option opts[] = {{"json", 0, "print one JSON object", NULL},
                                         {NULL, 0, NULL, NULL}};
    static const wx_arg_spec spec = {"inspect", "[--json] ARCHIVE|FILE",
                                     "Prints an archive's channels, grid, time axis, shards, size, "
                                     "statistics and climatology; of a GRIB or NetCDF file, the "
                                     "variables the ingestion readers see (parameter, level, name "
                                     "in the file, valid times, accumulation, member, grid); of a "
                                     "checkpoint, its stage, step, parameters, model and data.",
                                     opts, 1, 1};
    wx_args a;
    int rc = wx_args_parse(&spec, argc, argv, &a);
    if (rc != WX_ARGS_CONTINUE) return rc;
    const char *dir = a.positionals[0];
    struct stat sb;
    if (stat(dir, &sb) != 0) { /* any of the three kinds it takes */
        fprintf(stderr, "wxcast: error: %s: %s (inspect takes an archive folder, a GRIB or NetCDF "
                        "file, or a checkpoint)\n", dir, strerror(errno));
        return WX_ERR_RUN;
    }
    if (S_ISREG(sb.st_mode)) {
        char magic[6] = "";
        FILE *f = fopen(dir, "rb");
        size_t got = f ? fread(magic, 1, sizeof magic, f) : 0;
        if (f) fclose(f);
        if (got == 6 && !memcmp(magic, "WXCKPT", 6)) {
            if (wx_args_flag(&a, "json")) {
                fprintf(stderr, "wxcast: error: inspect: --json is for archives and GRIB/NetCDF "
                                "files, not checkpoints\n");
                return WX_ERR_USAGE;
            }
            return inspect_checkpoint(dir);
        }
        return wx_inspect_source(dir, wx_args_flag(&a, "json"));
    }
    wx_archive_meta m;
    if (wx_archive_read_manifest(dir, &m) != WX_OK) {
        fprintf(stderr, "wxcast: error: %s\n", wx_error_message());
        return WX_ERR_RUN;
    }
    /* every shard's header, tables and size as every reader checks them (records are verify's) */
    wx_archive *ar = NULL;
    wx_archive_opts ao = {1, 1, 0};
    if (wx_archive_open(dir, &ao, &ar) != WX_OK) {
        wx_archive_meta_free(&m);
        fprintf(stderr, "wxcast: error: %s\n", wx_error_message());
        return WX_ERR_RUN;
    }
    wx_archive_close(ar);
    char t0[32], t1[32], step[32];
    wx_time_format(m.start, t0);
    wx_time_format(m.start + (m.count - 1) * m.step, t1);
    wx_time_format_duration(m.step, step);
    long long bytes = archive_bytes(dir, &m);
    if (wx_args_flag(&a, "json")) {
        wx_json j;
        wx_json_init(&j, stdout);
        wx_json_object_begin(&j);
        wx_json_kv_string(&j, "archive", dir);
        wx_json_key(&j, "channels");
        wx_json_array_begin(&j);
        for (int c = 0; c < m.nchan; c++) {
            wx_json_object_begin(&j);
            wx_json_kv_string(&j, "name", m.chan[c].name);
            wx_json_kv_string(&j, "param", m.chan[c].param);
            wx_json_kv_number(&j, "level", m.chan[c].level);
            wx_json_kv_string(&j, "units", m.chan[c].units);
            if (m.has_stats) {
                wx_json_kv_number(&j, "mean", m.mean[c]);
                wx_json_kv_number(&j, "std", m.std[c]);
                wx_json_kv_number(&j, "min", m.min[c]);
                wx_json_kv_number(&j, "max", m.max[c]);
                wx_json_kv_number(&j, "diff_std", m.diff_std[c]);
            }
            wx_json_object_end(&j);
        }
        wx_json_array_end(&j);
        wx_json_kv_int(&j, "nlat", m.grid.nlat);
        wx_json_kv_int(&j, "nlon", m.grid.nlon);
        wx_json_kv_number(&j, "lat0", m.grid.lat0);
        wx_json_kv_number(&j, "dlat", m.grid.dlat);
        wx_json_kv_number(&j, "lon0", m.grid.lon0);
        wx_json_kv_number(&j, "dlon", m.grid.dlon);
        wx_json_kv_string(&j, "start", t0);
        wx_json_kv_string(&j, "end", t1);
        wx_json_kv_int(&j, "step_s", m.step);
        wx_json_kv_int(&j, "times", m.count);
        wx_json_kv_int(&j, "shards", wx_archive_shard_count(&m));
        wx_json_kv_int(&j, "bytes", bytes);
        wx_json_kv_string(&j, "dtype", m.dtype == WX_DTYPE_F16 ? "float16" : "float32");
        char cl[600];
        describe_climatology(dir, &m, cl, sizeof cl);
        wx_json_kv_string(&j, "climatology", cl);
        wx_json_object_end(&j);
        printf("\n");
    } else {
        char g[256];
        wx_grid_describe(&m.grid, g, sizeof g);
        printf("archive   %s\ngrid      %s\ntimes     %lld: %s .. %s every %s\n", dir, g,
               (long long)m.count, t0, t1, step);
        printf("shards    %d (%lld records each), %.1f MB, %s\n", wx_archive_shard_count(&m),
               (long long)m.records_per_shard, bytes / 1048576.0,
               m.dtype == WX_DTYPE_F16 ? "float16" : "float32");
        char cl[600];
        describe_climatology(dir, &m, cl, sizeof cl);
        printf("climatology %s\n", cl);
        printf("channels  %d\n", m.nchan);
        for (int c = 0; c < m.nchan; c++) {
            printf("  %3d %-10s %-5s %6g %-12s", c, m.chan[c].name, m.chan[c].param, m.chan[c].level,
                   m.chan[c].units);
            if (m.has_stats) {
                printf(" mean %-12.6g std %-12.6g min %-12.6g max %-12.6g", m.mean[c], m.std[c],
                       m.min[c], m.max[c]);
                /* no pair of records diff_step apart (a one-record archive): no difference std */
                if (isfinite(m.diff_std[c])) printf(" dstd %.6g", m.diff_std[c]);
                else printf(" dstd -");
            }
            printf("\n");
        }
    }
    wx_archive_meta_free(&m);
    return 0;
}
