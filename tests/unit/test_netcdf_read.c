/* NetCDF reader against the netCDF-C API's own values: every point of eraint_uvz.nc (packed
 * shorts) equals raw*scale_factor+add_offset read independently with nc_get_var1_short, placed
 * by the file's own latitude/longitude values. Self-written files in the new and old CDS layouts,
 * packed/unpacked, latitude ascending/descending, −180..180 longitudes and an expver dimension
 * decode to the same field; time units/calendars give the right valid times. */
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <netcdf.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "era5_testdata.h"
#include "io/netcdf_open.h"
#include "io/wx_source.h"
#include "wx_test.h"

static void check_eraint(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/era5/eraint_uvz.nc", WX_DATA_DIR);
    wx_source *s;
    if (!WX_CHECK(wx_source_open(path, &s) == WX_OK, "open eraint: %s", wx_error_message())) return;
    WX_CHECK(wx_source_count(s) == 18, "3 vars x 2 months x 3 levels = %d", wx_source_count(s));
    int nc;
    nc_open(path, NC_NOWRITE, &nc);
    float lat[241], lon[480];
    int vlat, vlon, lev[3], vlev;
    nc_inq_varid(nc, "latitude", &vlat);
    nc_inq_varid(nc, "longitude", &vlon);
    nc_inq_varid(nc, "level", &vlev);
    nc_get_var_float(nc, vlat, lat);
    nc_get_var_float(nc, vlon, lon);
    nc_get_var_int(nc, vlev, lev);
    float *vals = wx_malloc(sizeof(float) * 241 * 480);
    long bad = 0, points = 0;
    for (int i = 0; i < wx_source_count(s); i++) {
        const wx_field_info *f = wx_source_info(s, i);
        WX_CHECK(!f->has_time, "month axis is not a time");
        WX_CHECK(f->kind == WX_LEVEL_PRESSURE && f->level == lev[f->nc_index[1]], "level");
        if (!WX_CHECK(wx_source_read(s, i, WX_MISSING_ERROR, vals) == WX_OK, "read %d: %s", i,
                      wx_error_message()))
            continue;
        int v;
        double sc, off;
        nc_inq_varid(nc, f->name, &v);
        nc_get_att_double(nc, v, "scale_factor", &sc);
        nc_get_att_double(nc, v, "add_offset", &off);
        for (int r = 0; r < 241; r += 7)
            for (int c = 0; c < 480; c += 5) {
                size_t idx[4] = {(size_t)f->nc_index[3], (size_t)f->nc_index[1], (size_t)r, (size_t)c};
                short raw;
                nc_get_var1_short(nc, v, idx, &raw);
                int j = (int)floor((f->grid.lat0 - lat[r]) / f->grid.dlat + 0.5);
                int k = (int)floor(fmod(lon[c] - f->grid.lon0 + 720, 360) / f->grid.dlon + 0.5);
                points++;
                if (vals[j * 480 + k] != (float)(raw * sc + off)) bad++;
            }
    }
    WX_CHECK(bad == 0 && points > 0, "eraint: %ld of %ld points differ from netCDF", bad, points);
    const wx_field_info *f = wx_source_info(s, 0);
    WX_CHECK(f->grid.nlat == 241 && f->grid.nlon == 480 && f->grid.lat0 == 90 &&
                 fabs(f->grid.dlat - 0.75) < 1e-9, "0.75 degree grid");
    nc_close(nc);
    free(vals);
    wx_source_close(s);
}

/* Superblocks as the HDF5 file-format specification lays them out (versions 0 and 1: sizes at
 * bytes 13/14, base / free-space / end-of-file addresses from byte 24 (v1: 28); versions 2 and 3:
 * sizes at 9/10, base / extension / end-of-file addresses from 12), here in files cut to 600
 * bytes: the recorded size is read and the opener reports the truncation with both sizes. The
 * version-2 case behind a 512-byte user block has its base address at 512. (Version 2 files as
 * netCDF-C writes them are cut in tests/cli/bad_input.sh.) */
static void check_hdf5_superblocks(const char *tmp) {
    static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    struct { int ver, at; unsigned long long base, eof; } cases[] = {
        {0, 0, 0, 5000}, {1, 0, 0, 7000}, {2, 0, 0, 9000}, {3, 512, 512, 4000}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        unsigned char b[600] = {0}, *sb = b + cases[k].at;
        memcpy(sb, sig, 8);
        sb[8] = (unsigned char)cases[k].ver;
        int base_at = cases[k].ver == 0 ? 24 : cases[k].ver == 1 ? 28 : 12;
        if (cases[k].ver <= 1) sb[13] = 8, sb[14] = 8;
        else sb[9] = 8, sb[10] = 8;
        for (int i = 0; i < 8; i++) {
            sb[base_at + i] = (unsigned char)(cases[k].base >> (8 * i));
            sb[base_at + 8 + i] = 0xff; /* free-space / extension address: undefined */
            sb[base_at + 16 + i] = (unsigned char)(cases[k].eof >> (8 * i));
        }
        char p[1200];
        snprintf(p, sizeof p, "%s/sb%zu.nc", tmp, k);
        FILE *f = fopen(p, "wb");
        fwrite(b, 1, sizeof b, f);
        fclose(f);
        unsigned long long want = cases[k].base + cases[k].eof;
        WX_CHECK(wx_hdf5_recorded_size(p) == want, "superblock v%d: recorded size %llu, expected %llu",
                 cases[k].ver, wx_hdf5_recorded_size(p), want);
        int nc, rc;
        char msg[200];
        snprintf(msg, sizeof msg, "truncated: 600 bytes, and its HDF5 superblock records %llu", want);
        WX_CHECK(wx_nc_open_read(p, &nc, &rc) == WX_ERR_RUN && nc == -1 &&
                     strstr(wx_error_message(), msg) && strstr(wx_error_message(), p),
                 "v%d cut short: %s", cases[k].ver, wx_error_message());
    }
    char p[1200];
    snprintf(p, sizeof p, "%s/plain.txt", tmp);
    FILE *f = fopen(p, "w");
    fputs("not a NetCDF file at all\n", f);
    fclose(f);
    int nc, rc;
    WX_CHECK(wx_hdf5_recorded_size(p) == 0 && wx_nc_open_read(p, &nc, &rc) == WX_ERR_RUN &&
                 rc == NC_ENOTNC && strstr(wx_error_message(), "not a NetCDF file"),
             "a text file: not NetCDF (%s)", wx_error_message());
}

/* A one-time 3x4 file (latitudes 90, 0, -90; longitudes 0..270) with variable `name` of `type` in
 * `units`, left in define mode for the caller's attributes; small_grid_coords writes the
 * coordinates. */
static void small_grid_file(const char *p, int mode, nc_type type, const char *name,
                            const char *units, int *nc, int *v) {
    int dt, dy, dx, vt, vy, vx;
    nc_create(p, mode, nc);
    nc_def_dim(*nc, "time", 1, &dt);
    nc_def_dim(*nc, "latitude", 3, &dy);
    nc_def_dim(*nc, "longitude", 4, &dx);
    nc_def_var(*nc, "time", NC_DOUBLE, 1, &dt, &vt);
    nc_put_att_text(*nc, vt, "units", 32, "hours since 2017-01-01 00:00:00");
    nc_def_var(*nc, "latitude", NC_DOUBLE, 1, &dy, &vy);
    nc_put_att_text(*nc, vy, "units", 13, "degrees_north");
    nc_def_var(*nc, "longitude", NC_DOUBLE, 1, &dx, &vx);
    nc_put_att_text(*nc, vx, "units", 12, "degrees_east");
    int dims[3] = {dt, dy, dx};
    nc_def_var(*nc, name, type, 3, dims, v);
    nc_put_att_text(*nc, *v, "units", strlen(units), units);
}

static void small_grid_coords(int nc) {
    double t0 = 0, la[3] = {90, 0, -90}, lo[4] = {0, 90, 180, 270};
    int id;
    nc_inq_varid(nc, "time", &id), nc_put_var_double(nc, id, &t0);
    nc_inq_varid(nc, "latitude", &id), nc_put_var_double(nc, id, la);
    nc_inq_varid(nc, "longitude", &id), nc_put_var_double(nc, id, lo);
}

/* NetCDF-3 bytes with `_Unsigned = "true"` (the NUG convention for unsigned packed data, honoured
 * by xarray): a raw byte of -56 is 200, so t = 200 * 0.5 + 200 = 300 K; a raw -1 (255) is the fill.
 * Read as signed, the upper half of the range would come out 128 K too low. */
static void check_unsigned_bytes(const char *tmp) {
    char p[1200];
    snprintf(p, sizeof p, "%s/unsigned.nc", tmp);
    int nc, v;
    small_grid_file(p, NC_CLOBBER, NC_BYTE, "t2m", "K", &nc, &v);
    double sc = 0.5, off = 200;
    signed char fill = -1;
    nc_put_att_double(nc, v, "scale_factor", NC_DOUBLE, 1, &sc);
    nc_put_att_double(nc, v, "add_offset", NC_DOUBLE, 1, &off);
    nc_put_att_schar(nc, v, "_FillValue", NC_BYTE, 1, &fill);
    nc_put_att_text(nc, v, "_Unsigned", 4, "true");
    nc_enddef(nc);
    signed char raw[12] = {0, 10, 100, 127, -128, -100, -56, -2, 1, 2, 3, 4};
    small_grid_coords(nc);
    nc_put_var_schar(nc, v, raw);
    nc_close(nc);
    wx_source *s;
    float got[12];
    if (!WX_CHECK(wx_source_open(p, &s) == WX_OK, "open unsigned: %s", wx_error_message())) return;
    if (WX_CHECK(wx_source_read(s, 0, WX_MISSING_ERROR, got) == WX_OK, "read unsigned: %s",
                 wx_error_message())) {
        int bad = 0;
        for (int k = 0; k < 12; k++) bad += got[k] != (float)(((unsigned char)raw[k]) * 0.5 + 200);
        WX_CHECK(bad == 0, "_Unsigned bytes: %d of 12 differ (raw -56 read as %g, want 300)", bad,
                 got[6]);
    }
    wx_source_close(s);
}

/* A CDS expver dimension of n string values ("0005" first when n = 2; n = 10 past the 8 the
 * reader sorts): msl = 100000 + the experiment's number at every point. ERA5 final (0001) is
 * taken whatever the order; 10 experiments overran an 8-entry buffer (ASan: stack overflow). */
static void check_expver(const char *tmp, int n, double want) {
    char p[1200];
    snprintf(p, sizeof p, "%s/expver%d.nc", tmp, n);
    int nc, dt, de, dy, dx, vt, ve, vy, vx, vm;
    nc_create(p, NC_NETCDF4 | NC_CLOBBER, &nc);
    nc_def_dim(nc, "time", 1, &dt);
    nc_def_dim(nc, "expver", (size_t)n, &de);
    nc_def_dim(nc, "latitude", 3, &dy);
    nc_def_dim(nc, "longitude", 4, &dx);
    nc_def_var(nc, "time", NC_DOUBLE, 1, &dt, &vt);
    nc_put_att_text(nc, vt, "units", 32, "hours since 2017-01-01 00:00:00");
    nc_def_var(nc, "expver", NC_STRING, 1, &de, &ve);
    nc_def_var(nc, "latitude", NC_DOUBLE, 1, &dy, &vy);
    nc_put_att_text(nc, vy, "units", 13, "degrees_north");
    nc_def_var(nc, "longitude", NC_DOUBLE, 1, &dx, &vx);
    nc_put_att_text(nc, vx, "units", 12, "degrees_east");
    int dims[4] = {dt, de, dy, dx};
    nc_def_var(nc, "msl", NC_FLOAT, 4, dims, &vm);
    nc_put_att_text(nc, vm, "units", 2, "Pa");
    nc_enddef(nc);
    small_grid_coords(nc);
    char names[10][8];
    const char *ptr[10];
    float vals[10 * 12];
    for (int k = 0; k < n; k++) { /* numbers n, n-1, ..., 1: ERA5 final last in the file */
        snprintf(names[k], sizeof names[k], "%04d", n == 2 ? (k ? 1 : 5) : n - k);
        ptr[k] = names[k];
        for (int q = 0; q < 12; q++) vals[k * 12 + q] = (float)(100000 + atoi(names[k]));
    }
    nc_put_var_string(nc, ve, ptr);
    nc_put_var_float(nc, vm, vals);
    nc_close(nc);
    wx_source *s;
    float got[12];
    if (!WX_CHECK(wx_source_open(p, &s) == WX_OK, "open expver%d: %s", n, wx_error_message())) return;
    WX_CHECK(wx_source_read(s, 0, WX_MISSING_ERROR, got) == WX_OK && got[0] == (float)want &&
                 got[11] == (float)want,
             "expver x%d: msl %g, want %g (%s)", n, got[0], want, wx_error_message());
    wx_source_close(s);
}

/* A NetCDF-4 variable with Fletcher32 checksums and one damaged byte, read on a thread other
 * than the one that opened it (as ingest's decode threads do): one error naming the field and
 * the damage, and none of HDF5's error stack on stderr (HDF5 keeps its printing switch per
 * thread; netCDF-C turns it off only on the thread that initialised it). */
typedef struct {
    wx_source *s;
    float *vals;
    wx_status st;
    char msg[1024];
} read_job;

static void *read_on_thread(void *arg) {
    read_job *j = arg;
    j->st = wx_source_read(j->s, 0, WX_MISSING_ERROR, j->vals);
    snprintf(j->msg, sizeof j->msg, "%s", j->st == WX_OK ? "" : wx_error_message());
    return NULL;
}

static void check_fletcher32_damage(const char *tmp) {
    char p[1200], errp[1200];
    snprintf(p, sizeof p, "%s/f32.nc", tmp);
    snprintf(errp, sizeof errp, "%s/f32.err", tmp);
    int nc, v;
    small_grid_file(p, NC_CLOBBER | NC_NETCDF4, NC_FLOAT, "t2m", "K", &nc, &v);
    nc_def_var_fletcher32(nc, v, NC_FLETCHER32);
    float vals[12];
    for (int k = 0; k < 12; k++) vals[k] = 271.828125f; /* a byte pattern to find in the file */
    nc_enddef(nc);
    small_grid_coords(nc);
    nc_put_var_float(nc, v, vals);
    nc_close(nc);
    FILE *f = fopen(p, "r+b");
    long at = -1;
    unsigned char buf[1 << 16];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    for (size_t k = 0; k + 8 <= n && at < 0; k++)
        if (!memcmp(buf + k, &vals[0], 4) && !memcmp(buf + k + 4, &vals[1], 4)) at = (long)k + 5;
    if (!WX_CHECK(f && at > 0, "the data chunk found in %s", p)) {
        if (f) fclose(f);
        return;
    }
    buf[at] ^= 0x40;
    fseek(f, at, SEEK_SET);
    fwrite(buf + at, 1, 1, f);
    fclose(f);
    wx_source *s;
    if (!WX_CHECK(wx_source_open(p, &s) == WX_OK, "open f32: %s", wx_error_message())) return;
    read_job j = {s, vals, WX_OK, ""};
    fflush(stderr);
    int saved = dup(2), fd = open(errp, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    dup2(fd, 2);
    pthread_t th;
    pthread_create(&th, NULL, read_on_thread, &j);
    pthread_join(th, NULL);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fd);
    struct stat sb;
    long long printed = stat(errp, &sb) == 0 ? (long long)sb.st_size : -1;
    WX_CHECK(j.st == WX_ERR_RUN && strstr(j.msg, "field 1 (t2m") && strstr(j.msg, "Fletcher32"),
             "damaged chunk: %s", j.msg);
    WX_CHECK(printed == 0, "nothing printed by HDF5 (%lld bytes on stderr)", printed);
    wx_source_close(s);
}

/* Units spelled as other tools write them (wgrib2/NCL "kg/m^2", "meters/second", "m2/s2"): the
 * same as the catalogue's for an input (no refusal), tp in kg/m^2 converted to m. */
static void check_unit_spellings(const char *tmp) {
    static const struct { const char *var, *units; double scale; } cases[] = {
        {"u10", "meters/second", 1}, {"v10", "metres per second", 1}, {"tcwv", "kg/m^2", 1},
        {"tcwv", "kg/m2", 1}, {"tp", "kg/m^2", 1e-3}, {"z", "m2/s2", 1}, {"q", "kg/kg", 1}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char p[1200];
        snprintf(p, sizeof p, "%s/units%zu.nc", tmp, k);
        int nc, v;
        small_grid_file(p, NC_CLOBBER, NC_FLOAT, cases[k].var, cases[k].units, &nc, &v);
        if (!strcmp(cases[k].var, "z") || !strcmp(cases[k].var, "q")) { /* on 500 hPa */
            int dl, vl;
            nc_def_dim(nc, "level", 1, &dl);
            nc_def_var(nc, "level", NC_DOUBLE, 1, &dl, &vl);
            nc_put_att_text(nc, vl, "units", 3, "hPa");
        }
        nc_enddef(nc);
        small_grid_coords(nc);
        float raw[12], got[12];
        for (int i = 0; i < 12; i++) raw[i] = 2.0f + i;
        nc_put_var_float(nc, v, raw);
        nc_close(nc);
        wx_source *s;
        if (!WX_CHECK(wx_source_open(p, &s) == WX_OK, "open %s: %s", p, wx_error_message())) continue;
        wx_source_check_inputs(s);
        wx_status st = wx_source_read(s, 0, WX_MISSING_ERROR, got);
        WX_CHECK(st == WX_OK && fabs(got[5] - raw[5] * cases[k].scale) < 1e-6 * raw[5],
                 "%s in '%s': read as %g (want %g): %s", cases[k].var, cases[k].units, got[5],
                 raw[5] * cases[k].scale, st == WX_OK ? "" : wx_error_message());
        wx_source_close(s);
    }
}

int main(void) {
    check_eraint();
    char tmp[] = "/tmp/wx_nc_read_XXXXXX";
    WX_CHECK(mkdtemp(tmp) != NULL, "mkdtemp");
    check_hdf5_superblocks(tmp);
    check_expver(tmp, 2, 100001);  /* 0005 stored first: ERA5 final's 0001 taken */
    check_expver(tmp, 10, 100010); /* past 8: the file's order, its first (0010) */
    { /* CDO's NetCDF of a 32-row GRIB grid: rows at 90 - j*5.806452 (micro-degrees), the last at
       * -90.000012: the poles, spacing 180/31 (was refused as "outside [-90, 90]") */
        double lats[32], lons[4] = {0, 90, 180, 270};
        int rm[32], cm[4];
        for (int j = 0; j < 32; j++) lats[j] = 90 - j * 5.806452;
        wx_grid g;
        WX_CHECK(wx_source_grid_from_axes(lats, 32, lons, 4, "cdo", &g, rm, cm) == WX_OK &&
                     g.lat0 == 90 && g.dlat == 180.0 / 31 && wx_grid_lat(&g, 31) == -90 && rm[31] == 31,
                 "a pole row 1.2e-5 past -90 is the pole: %s", wx_error_message());
        /* a regional grid across the dateline in -180..180 is regular: it only wraps */
        double dl[21], la3[3] = {10, 5, 0};
        int cm21[21], rm3[3];
        for (int i = 0; i < 21; i++) dl[i] = remainder(150.0 + 3 * i, 360.0);
        WX_CHECK(wx_source_grid_from_axes(la3, 3, dl, 21, "dateline", &g, rm3, cm21) == WX_OK &&
                     g.lon0 == 150 && g.dlon == 3 && g.nlon == 21 && cm21[11] == 11 && dl[11] == -177,
                 "150..180, -177..-150: lon0 %g dlon %g, column of -177 %d (%s)", g.lon0, g.dlon,
                 cm21[11], wx_error_message());
        /* a cyclic column (0..360 inclusive): the message says so */
        double cyc[5] = {0, 90, 180, 270, 360};
        int cm5[5];
        WX_CHECK(wx_source_grid_from_axes(la3, 3, cyc, 5, "cyclic", &g, rm3, cm5) == WX_ERR_RUN &&
                     strstr(wx_error_message(), "longitude 360 repeats the first column's"),
                 "cyclic column: %s", wx_error_message());
        /* a NaN latitude passed the spacing checks and crashed the reader (row index from NaN) */
        double lan[3] = {10, NAN, 0}, la_out[3] = {95, 90, 85};
        WX_CHECK(wx_source_grid_from_axes(lan, 3, cyc, 4, "nan", &g, rm3, cm5) == WX_ERR_RUN &&
                     strstr(wx_error_message(), "nan: latitude 1 of the coordinates is nan"),
                 "NaN latitude: %s", wx_error_message());
        WX_CHECK(wx_source_grid_from_axes(la_out, 3, cyc, 4, "north", &g, rm3, cm5) == WX_ERR_RUN &&
                     strstr(wx_error_message(), "latitude 0 of the coordinates is 95: expected -90..90"),
                 "latitude 95: %s", wx_error_message());
    }
    td_nc_opts layouts[] = {{1, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {1, 0, 1, 0, 0}, {1, 0, 0, 1, 0},
                            {0, 0, 1, 0, 1}, {1, 1, 0, 0, 0}, {0, 1, 1, 1, 1}};
    double levels[2] = {500, 850};
    int nl = 37, nn = 72, nt = 3;
    size_t n = (size_t)nl * nn;
    float *ref = wx_malloc(sizeof(float) * n * 6), *got = wx_malloc(sizeof(float) * n * 6);
    float *pref = wx_malloc(sizeof(float) * n * 6);
    for (size_t k = 0; k < sizeof layouts / sizeof layouts[0]; k++) {
        char p[1200];
        snprintf(p, sizeof p, "%s/l%zu.nc", tmp, k);
        WX_CHECK(td_nc_write(p, "t", levels, 2, nt, 5.0, &layouts[k], NULL) == 0, "write %zu", k);
        wx_source *s;
        if (!WX_CHECK(wx_source_open(p, &s) == WX_OK, "open %zu: %s", k, wx_error_message()))
            continue;
        WX_CHECK(wx_source_count(s) == 6, "layout %zu: 6 fields, got %d", k, wx_source_count(s));
        float *dst = layouts[k].packed ? (k == 5 ? pref : got) : (k == 0 ? ref : got);
        for (int i = 0; i < wx_source_count(s) && i < 6; i++) {
            const wx_field_info *f = wx_source_info(s, i);
            int t = i / 2;
            WX_CHECK(f->has_time && f->valid == 1483228800 + t * 21600, "layout %zu field %d time", k, i);
            WX_CHECK(f->level == levels[i % 2] && !strcmp(f->param, "t"), "layout %zu level", k);
            WX_CHECK(f->grid.lat0 == 90 && f->grid.lon0 == 0 && f->grid.nlat == nl, "grid %zu", k);
            WX_CHECK(wx_source_read(s, i, WX_MISSING_ERROR, dst + i * n) == WX_OK, "read %zu/%d: %s",
                     k, i, wx_error_message());
        }
        wx_source_close(s);
        if (k == 0) {
            double want = td_value(80, 15, 2, 850);
            WX_CHECK(fabs(ref[5 * n + 2 * nn + 3] - want) < 1e-4, "value vs formula");
        } else if (k != 5) {
            float *cmp = layouts[k].packed ? pref : ref;
            WX_CHECK(!memcmp(cmp, got, sizeof(float) * n * 6), "layout %zu identical to %s", k,
                     layouts[k].packed ? "packed reference" : "layout 0");
        } else {
            double md = 0;
            for (size_t q = 0; q < n * 6; q++) md = fmax(md, fabs(pref[q] - ref[q]));
            WX_CHECK(md <= 0.0011, "packed within half a step (0.001) of unpacked: %g", md);
        }
    }
    /* Geopotential height gh (gpm) on pressure levels, as ECMWF open data: read as z x 9.80665. */
    char gp[1200];
    snprintf(gp, sizeof gp, "%s/gh.nc", tmp);
    WX_CHECK(td_nc_write(gp, "gh", levels, 2, nt, 5.0, &layouts[0], NULL) == 0, "write gh");
    wx_source *gs;
    if (WX_CHECK(wx_source_open(gp, &gs) == WX_OK, "open gh: %s", wx_error_message())) {
        const wx_field_info *f = wx_source_info(gs, 1);
        WX_CHECK(f && !strcmp(f->param, "z") && f->kind == WX_LEVEL_PRESSURE && f->level == 850,
                 "gh 850 hPa described as z 850 hPa (param %s)", f ? f->param : "?");
        double md = 0;
        if (WX_CHECK(wx_source_read(gs, 1, WX_MISSING_ERROR, got) == WX_OK, "read gh: %s",
                     wx_error_message()))
            for (size_t q = 0; q < n; q++) md = fmax(md, fabs(got[q] - 9.80665 * ref[n + q]) /
                                                             (9.80665 * fabs(ref[n + q]) + 1e-30));
        WX_CHECK(md < 1e-6, "gh read as 9.80665 x the stored values (max relative error %.2g)", md);
        wx_source_close(gs);
    }
    /* Names with digits outside wxcast's own files keep their meaning: ERA5's u100 (the wind at
     * 100 m, no level axis) is not u at 100 hPa; the same file marked as wxcast's reads so. */
    snprintf(gp, sizeof gp, "%s/u100.nc", tmp);
    WX_CHECK(td_nc_write(gp, "u100", NULL, 0, 1, 5.0, &layouts[0], NULL) == 0, "write u100");
    for (int own = 0; own < 2; own++) {
        if (own) {
            int nc;
            nc_open(gp, NC_WRITE, &nc);
            nc_redef(nc);
            nc_put_att_text(nc, NC_GLOBAL, "institution", 6, "wxcast");
            nc_close(nc);
        }
        if (!WX_CHECK(wx_source_open(gp, &gs) == WX_OK, "open u100: %s", wx_error_message())) continue;
        const wx_field_info *f = wx_source_info(gs, 0);
        if (own)
            WX_CHECK(f && !strcmp(f->param, "u") && f->kind == WX_LEVEL_PRESSURE && f->level == 100,
                     "a wxcast file's u100 is u at 100 hPa (param %s)", f ? f->param : "?");
        else
            WX_CHECK(f && !strcmp(f->param, "u100") && f->kind != WX_LEVEL_PRESSURE,
                     "another file's u100 stays its own single-level field (param %s, kind %d)",
                     f ? f->param : "?", f ? (int)f->kind : -1);
        wx_source_close(gs);
    }
    /* Missing values in a NetCDF field: error with the count; and an unsupported calendar. */
    char p[1200];
    snprintf(p, sizeof p, "%s/miss.nc", tmp);
    td_nc_opts mo = {1, 0, 0, 1, 0};
    td_nc_write(p, "t", levels, 2, nt, 5.0, &mo, NULL);
    int nc, v;
    nc_open(p, NC_WRITE, &nc);
    nc_inq_varid(nc, "t", &v);
    size_t idx[5] = {0, 0, 0, 3, 4}; /* time 0 lives in expver 0; blank it there */
    float nanv = NAN;
    nc_put_var1_float(nc, v, idx, &nanv);
    nc_close(nc);
    wx_source *s;
    if (WX_CHECK(wx_source_open(p, &s) == WX_OK, "open miss")) {
        WX_CHECK(wx_source_read(s, 0, WX_MISSING_ERROR, got) == WX_ERR_RUN &&
                     strstr(wx_error_message(), "1 of 2664") && strstr(wx_error_message(), "'t'") == NULL,
                 "missing error: %s", wx_error_message());
        WX_CHECK(strstr(wx_error_message(), "field 1 (t 500 hPa 2017-01-01T00:00)") != NULL,
                 "names field: %s", wx_error_message());
        /* the same reader serves forecast --init: the hint says where `missing: nan` goes */
        WX_CHECK(strstr(wx_error_message(), "an ingest recipe keeps them as NaN with `missing: nan`"),
                 "hint names the ingest recipe: %s", wx_error_message());
        wx_source_close(s);
    }
    check_unsigned_bytes(tmp);
    check_fletcher32_damage(tmp);
    check_unit_spellings(tmp);
    free(ref);
    free(got);
    free(pref);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    WX_CHECK(system(cmd) == 0, "cleanup");
    return wx_test_summary();
}
