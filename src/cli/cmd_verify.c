#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "cli/wx_args.h"
#include "cli/wx_cli.h"
#include "io/archive.h"
#include "io/climatology.h"
#include "ingest.h"

/* Every slab of the archive's climatology.wxc (its crc32s) and the file's size. *slabs: slabs
 * checked; *path: "" when the archive has no climatology. */
static wx_status verify_climatology(const char *dir, char *path, size_t cap, int64_t *slabs) {
    *slabs = 0;
    path[0] = 0;
    wx_archive_meta m;
    WX_TRY(wx_archive_read_manifest(dir, &m));
    if (m.has_stats && m.climatology[0]) snprintf(path, cap, "%s/%s", dir, m.climatology);
    wx_archive_meta_free(&m);
    if (!path[0]) return WX_OK;
    wx_climatology *c;
    WX_TRY(wx_climatology_open(dir, &c));
    const wx_clim_header *h = wx_climatology_header(c);
    size_t plane = (size_t)h->nlat * h->nlon;
    uint64_t nslab = (uint64_t)h->ndoy * h->nhours;
    int seeps = wx_climatology_has_seeps(c);
    /* the slabs end the file: mean slabs, then (version 2) the SEEPS slabs */
    uint64_t end = seeps ? h->seeps_offset + nslab * 2 * plane * 4 : h->data_offset + nslab * h->nchan * plane * 4;
    struct stat sb;
    wx_status st = WX_OK;
    if (stat(path, &sb) != 0 || (uint64_t)sb.st_size != end)
        st = wx_error_set(WX_ERR_RUN, "%s: %lld bytes, expected %llu (366 days x %u hours of %u "
                          "channels%s): truncated or appended to", path, (long long)sb.st_size,
                          (unsigned long long)end, h->nhours, h->nchan, seeps ? " and SEEPS fields" : "");
    float *f = wx_malloc(sizeof(float) * plane * (h->nchan > 2 ? h->nchan : 2));
    float *g = wx_malloc(sizeof(float) * plane);
    for (uint32_t d = 1; st == WX_OK && d <= h->ndoy; d++)
        for (uint32_t k = 0; st == WX_OK && k < h->nhours; k++) {
            st = wx_climatology_get(c, (int)d, h->hours[k], f);
            if (st == WX_OK && seeps) st = wx_climatology_seeps_get(c, (int)d, h->hours[k], f, g);
            if (st == WX_OK) *slabs += 1 + seeps;
        }
    free(f);
    free(g);
    wx_climatology_close(c);
    return st;
}

static void stats_record(void *ctx, int64_t index, const float *rec) {
    wx_stats_check_record(ctx, index, rec);
}

int wx_cmd_verify(int argc, char **argv) {
    static const wx_arg_option opts[] = {{NULL, 0, NULL, NULL}};
    static const wx_arg_spec spec = {"verify", "ARCHIVE",
                                     "Reads every record and every climatology slab and checks every "
                                     "checksum and the\nfiles' sizes, and recomputes the manifest's "
                                     "statistics from the records; exit 1\nat the first damaged "
                                     "record or slab or a statistic that differs, which the message names.",
                                     opts, 1, 1};
    wx_args a;
    int rc = wx_args_parse(&spec, argc, argv, &a);
    if (rc != WX_ARGS_CONTINUE) return rc;
    int64_t n = 0, slabs = 0;
    wx_archive_meta m;
    wx_status st = wx_archive_read_manifest(a.positionals[0], &m);
    if (st != WX_OK) return wx_cli_error(st);
    wx_stats_check *sc = wx_stats_check_begin(&m);
    int m_stats = sc != NULL;
    st = wx_archive_verify_each(a.positionals[0], &n, stats_record, sc);
    if (st != WX_OK) {
        wx_stats_check_free(sc);
        wx_archive_meta_free(&m);
        fprintf(stderr, "wxcast: error: %s (after %lld good records)\n", wx_error_message(),
                (long long)n);
        return WX_ERR_RUN;
    }
    st = wx_stats_check_finish(sc, a.positionals[0]);
    wx_archive_meta_free(&m);
    if (st != WX_OK) {
        fprintf(stderr, "wxcast: error: %s (the %lld records are good)\n", wx_error_message(), (long long)n);
        return WX_ERR_RUN;
    }
    char clim[4096];
    st = verify_climatology(a.positionals[0], clim, sizeof clim, &slabs);
    if (st != WX_OK) {
        fprintf(stderr, "wxcast: error: %s (the %lld records are good)\n", wx_error_message(), (long long)n);
        return WX_ERR_RUN;
    }
    printf("OK: %s: %lld records", a.positionals[0], (long long)n);
    if (clim[0]) printf(" and %lld climatology slabs", (long long)slabs);
    printf(", all checksums match%s\n", m_stats ? "; statistics recomputed, equal" : "");
    return 0;
}
