/* wxcast dump: an archive written with the shard writer (3 channels, 2 shards, a NaN) is dumped
 * through the CLI and read back with the netCDF API: dimensions (time, latitude, longitude),
 * values equal to the archive records bit for bit, CF attributes (units, standard_name and
 * long_name from the catalogue, time in seconds since 1970, latitude north→south), --vars order
 * and subset, --start/--end subset; an unknown --vars name or an empty window exit 2 naming it and
 * leave no file. */
#include <math.h>
#include <netcdf.h>
#include <string.h>
#include <unistd.h>

#include "cli/wx_cli.h"
#include "core/wx_fs.h"
#include "io/archive.h"
#include "wx_test.h"

#define NT 7

static float value(int64_t t, int c, int p) {
    if (t == 2 && c == 1 && p == 3) return NAN;
    return (float)(c * 1000 + t * 10 + sin(p * 0.37) * 3.3);
}

static int make_archive(const char *dir, wx_archive_meta *m) {
    memset(m, 0, sizeof *m);
    m->nchan = 3;
    m->chan = wx_calloc(3, sizeof *m->chan);
    const char *names[] = {"z500", "t2m", "tp6"}, *params[] = {"z", "2t", "tp"};
    const char *units[] = {"m**2 s**-2", "K", "m"};
    for (int c = 0; c < 3; c++) {
        snprintf(m->chan[c].name, sizeof m->chan[c].name, "%s", names[c]);
        snprintf(m->chan[c].param, sizeof m->chan[c].param, "%s", params[c]);
        snprintf(m->chan[c].units, sizeof m->chan[c].units, "%s", units[c]);
        m->chan[c].kind = c ? WX_LEVEL_SINGLE : WX_LEVEL_PRESSURE;
        m->chan[c].level = c ? 0 : 500;
        /* tp with period 0, as archives from before 2026-12 stored an accumulation taken as the
         * sources had it: read back as a sum over the 6 h step (long_name, cell_methods below) */
        m->chan[c].accum_s = 0;
    }
    wx_grid_global(15.0, &m->grid); /* 13 x 24 */
    m->start = wx_time_make(2017, 1, 1, 0, 0, 0);
    m->step = 21600;
    m->count = NT;
    m->records_per_shard = 4;
    m->key = 3;
    int64_t P = wx_archive_points(m);
    float *rec = wx_malloc(sizeof(float) * 3 * (size_t)P);
    int ok = wx_mkdir_p(dir) == WX_OK;
    for (int s = 0; ok && s < 2; s++) {
        wx_shard_writer *w;
        ok = wx_shard_writer_open(dir, s, m, &w) == WX_OK;
        for (int64_t t = s * 4; ok && t < NT && t < s * 4 + 4; t++) {
            for (int c = 0; c < 3; c++)
                for (int64_t p = 0; p < P; p++) rec[c * P + p] = value(t, c, (int)p);
            ok = wx_shard_writer_put(w, rec) == WX_OK;
        }
        ok = ok && wx_shard_writer_commit(w) == WX_OK;
    }
    free(rec);
    return ok && wx_archive_write_manifest(dir, m) == WX_OK;
}

static int dump(const char *dir, const char *out, const char *a1, const char *a2, const char *a3,
                const char *a4) {
    char *argv[12] = {"wxcast", "-q", "dump", (char *)dir, "--output", (char *)out};
    int n = 6;
    const char *extra[] = {a1, a2, a3, a4};
    for (int k = 0; k < 4 && extra[k]; k++) argv[n++] = (char *)extra[k];
    return wx_cli_main(n, argv);
}

static int att_is(int nc, int var, const char *name, const char *want) {
    char buf[256] = "";
    size_t len = 0;
    if (nc_inq_attlen(nc, var, name, &len) || len >= sizeof buf || nc_get_att_text(nc, var, name, buf))
        return 0;
    buf[len] = 0;
    return !strcmp(buf, want);
}

/* Checks the file holds channels chans[0..n) at archive times t0..t0+nt-1. */
static void check_file(const char *path, const wx_archive_meta *m, const int *chans, int n, int t0,
                       int nt) {
    int nc, dim, var, nvars;
    if (!WX_CHECK(nc_open(path, NC_NOWRITE, &nc) == NC_NOERR, "open %s", path)) return;
    size_t len;
    char dname[NC_MAX_NAME + 1];
    WX_CHECK(nc_inq_dimid(nc, "time", &dim) == NC_NOERR && nc_inq_dimlen(nc, dim, &len) == NC_NOERR &&
                 len == (size_t)nt, "time dimension of %d", nt);
    nc_inq_nvars(nc, &nvars);
    WX_CHECK(nvars == 3 + n, "%d variables besides the coordinates (got %d)", n, nvars - 3);
    long long tv[NT];
    nc_inq_varid(nc, "time", &var);
    WX_CHECK(nc_get_var_longlong(nc, var, tv) == NC_NOERR, "read time");
    for (int i = 0; i < nt; i++)
        WX_CHECK(tv[i] == m->start + (t0 + i) * m->step, "time %d = %lld", i, tv[i]);
    WX_CHECK(att_is(nc, var, "units", "seconds since 1970-01-01") && att_is(nc, var, "standard_name", "time"),
             "time units");
    double lat[13], lon[24];
    nc_inq_varid(nc, "latitude", &var);
    WX_CHECK(nc_get_var_double(nc, var, lat) == NC_NOERR && lat[0] == 90 && lat[12] == -90 &&
                 att_is(nc, var, "units", "degrees_north"), "latitude 90 .. -90, degrees_north");
    nc_inq_varid(nc, "longitude", &var);
    WX_CHECK(nc_get_var_double(nc, var, lon) == NC_NOERR && lon[0] == 0 && lon[23] == 345 &&
                 att_is(nc, var, "units", "degrees_east"), "longitude 0 .. 345, degrees_east");
    WX_CHECK(att_is(nc, NC_GLOBAL, "Conventions", "CF-1.8"), "Conventions CF-1.8");
    int64_t P = wx_archive_points(m);
    float *f = wx_malloc(sizeof(float) * (size_t)(NT * P));
    /* CF attributes as the catalogue gives them (eccodes names, UDUNITS units). */
    const char *units[] = {"m2 s-2", "K", "m"}, *sn[] = {"geopotential", "air_temperature", "lwe_thickness_of_precipitation_amount"};
    const char *ln[] = {"Geopotential at 500 hPa", "2 metre temperature",
                        "Total precipitation, accumulated over the 6h ending at time"};
    for (int k = 0; k < n; k++) {
        int c = chans[k], dims[3];
        if (!WX_CHECK(nc_inq_varid(nc, m->chan[c].name, &var) == NC_NOERR, "variable %s", m->chan[c].name))
            continue;
        WX_CHECK(var == 3 + k, "%s is variable %d (--vars order)", m->chan[c].name, 3 + k);
        int nd;
        nc_inq_varndims(nc, var, &nd);
        nc_inq_vardimid(nc, var, dims);
        nc_inq_dimname(nc, dims[1], dname);
        WX_CHECK(nd == 3 && dims[0] == dim && !strcmp(dname, "latitude"), "%s(time, latitude, longitude)",
                 m->chan[c].name);
        size_t sl;
        int has_sn = nc_inq_attlen(nc, var, "standard_name", &sl) == NC_NOERR;
        WX_CHECK(att_is(nc, var, "units", units[c]) &&
                     (sn[c][0] ? att_is(nc, var, "standard_name", sn[c]) : !has_sn) &&
                     att_is(nc, var, "long_name", ln[c]), "%s attributes", m->chan[c].name);
        int has_cm = nc_inq_attlen(nc, var, "cell_methods", &sl) == NC_NOERR;
        WX_CHECK(c == 2 ? att_is(nc, var, "cell_methods", "time: sum") : !has_cm,
                 "%s: cell_methods 'time: sum' on the accumulation only", m->chan[c].name);
        WX_CHECK(nc_get_var_float(nc, var, f) == NC_NOERR, "read %s", m->chan[c].name);
        long bad = 0;
        for (int i = 0; i < nt; i++)
            for (int64_t p = 0; p < P; p++) {
                float want = value(t0 + i, c, (int)p), got = f[i * P + p];
                bad += isnan(want) ? !isnan(got) : memcmp(&want, &got, 4) != 0;
            }
        WX_CHECK(bad == 0, "%s: %ld values differ from the archive", m->chan[c].name, bad);
    }
    free(f);
    nc_close(nc);
}

int main(void) {
    char tmp[] = "/tmp/wx_dump_XXXXXX";
    WX_CHECK(mkdtemp(tmp) != NULL, "mkdtemp");
    char dir[1024], out[1100];
    snprintf(dir, sizeof dir, "%s/a", tmp);
    wx_archive_meta m;
    if (!WX_CHECK(make_archive(dir, &m), "archive: %s", wx_error_message())) return wx_test_summary();
    snprintf(out, sizeof out, "%s/all.nc", tmp);
    WX_CHECK(dump(dir, out, NULL, NULL, NULL, NULL) == 0, "dump all: %s", wx_error_message());
    int all[3] = {0, 1, 2};
    check_file(out, &m, all, 3, 0, NT);
    snprintf(out, sizeof out, "%s/sub.nc", tmp);
    WX_CHECK(dump(dir, out, "--vars", "tp6,z500", "--start", "2017-01-01T06") == 0, "dump vars+start");
    int two[2] = {2, 0};
    check_file(out, &m, two, 2, 1, NT - 1);
    snprintf(out, sizeof out, "%s/win.nc", tmp);
    char *argv[] = {"wxcast", "-q", "dump", dir, "--output", out, "--vars", "t2m", "--start",
                    "2017-01-01T05:00", "--end", "2017-01-01T18:00"};
    WX_CHECK(wx_cli_main(12, argv) == 0, "dump window");
    int one[1] = {1};
    check_file(out, &m, one, 1, 1, 3); /* 06, 12, 18 UTC: records 1..3, across the shard boundary */
    snprintf(out, sizeof out, "%s/bad.nc", tmp);
    WX_CHECK(dump(dir, out, "--vars", "t2m,msl", NULL, NULL) == 2 && strstr(wx_error_message(), "'msl'") &&
                 strstr(wx_error_message(), "z500, t2m, tp6"), "unknown --vars: %s", wx_error_message());
    WX_CHECK(access(out, F_OK) != 0, "no file after a usage error");
    WX_CHECK(dump(dir, out, "--start", "2017-02-01", NULL, NULL) == 2 &&
                 strstr(wx_error_message(), "no record"), "empty window: %s", wx_error_message());
    WX_CHECK(dump(dir, out, "--start", "2017-13-01", NULL, NULL) == 2, "bad ISO time is a usage error");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "ls -A %s | grep -c tmp > /dev/null", tmp);
    WX_CHECK(system(cmd) != 0, "no temporary left behind");
    wx_archive_meta_free(&m);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    WX_CHECK(system(cmd) == 0, "cleanup");
    return wx_test_summary();
}
