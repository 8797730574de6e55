/* GRIB reader: the file is mapped once; a scan finds the message boundaries from section 0 and
 * describes every message in parallel; decoding makes a handle over the mapped bytes (no copy,
 * no file position), so fields may be decoded from several threads at once. eccodes is built
 * with OpenMP locks (GRIB_OMP_THREADS) around its shared context, so one handle per call and
 * thread is safe. Making a handle parses every section's keys (about a quarter of a field's
 * decode time), so the scan's handles are kept for the first GRIB_KEEP_HANDLES messages and
 * each is handed, once, to the read of its field. */
#define _GNU_SOURCE /* memmem */
#include "io/grib_read.h"

#include <eccodes.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/wx_log.h"

static void eccodes_to_debug_log(const codes_context *c, int level, const char *mesg) {
    (void)c;
    wx_log_debug("eccodes %s: %s", level == CODES_LOG_ERROR || level == CODES_LOG_FATAL ? "error"
                 : level == CODES_LOG_WARNING ? "warning" : "info", mesg);
}

void wx_source_quiet_libraries(void) {
    codes_context_set_logging_proc(codes_context_get_default(), eccodes_to_debug_log);
}

typedef struct {
    const unsigned char *map; /* the whole file, read-only */
    size_t size;
    size_t *len;              /* [count] message lengths; the offsets are in the fields */
    codes_handle **kept;      /* [count] the scan's handles not yet taken by a read, or NULL */
    pthread_mutex_t lock;     /* guards kept: fields may be read from several threads */
} grib_impl;

/* ~0.27 MB each (eccodes 2.28, an ERA5 0.25-degree field): at most ~70 MB held after a scan;
 * messages past this are parsed again when read. */
enum { GRIB_KEEP_HANDLES = 256 };

/* Scan geometry of one regular_ll message: source latitudes per scan row, longitudes per scan
 * column, and how the value index maps to (row, column). */
typedef struct {
    long ni, nj, i_neg, j_pos, j_consec, alt_rows;
    double *lats, *lons; /* [nj], [ni] */
} grib_geom;

static long get_long_or(codes_handle *h, const char *key, long def) {
    long v;
    return codes_get_long(h, key, &v) == 0 ? v : def;
}

static wx_status need_long(codes_handle *h, const char *key, const char *where, long *v) {
    int e = codes_get_long(h, key, v);
    if (e) return wx_error_set(WX_ERR_RUN, "%s: key %s: %s", where, key, codes_get_error_message(e));
    return WX_OK;
}

static wx_status need_double(codes_handle *h, const char *key, const char *where, double *v) {
    int e = codes_get_double(h, key, v);
    if (e) return wx_error_set(WX_ERR_RUN, "%s: key %s: %s", where, key, codes_get_error_message(e));
    return WX_OK;
}

static void geom_free(grib_geom *g) {
    free(g->lats);
    free(g->lons);
    g->lats = g->lons = NULL;
}

static wx_status geom_read(codes_handle *h, const char *where, grib_geom *g) {
    memset(g, 0, sizeof *g);
    char gt[64] = "";
    size_t len = sizeof gt;
    int e = codes_get_string(h, "gridType", gt, &len);
    if (e) return wx_error_set(WX_ERR_RUN, "%s: no gridType: %s", where, codes_get_error_message(e));
    if (strcmp(gt, "regular_ll"))
        return wx_error_set(WX_ERR_RUN, "%s: gridType is %s, not a regular lat/lon grid (regular_ll); "
                            "wxcast reads only regular lat/lon grids: regrid first, e.g. "
                            "`cdo remapbil,r360x181 -setgridtype,regular IN.grib OUT.grib` for 1 degree (the "
                            "setgridtype makes a reduced Gaussian grid one cdo can interpolate)", where, gt);
    double la1, la2, lo1, lo2;
    WX_TRY(need_long(h, "Ni", where, &g->ni));
    WX_TRY(need_long(h, "Nj", where, &g->nj));
    WX_TRY(need_double(h, "latitudeOfFirstGridPointInDegrees", where, &la1));
    WX_TRY(need_double(h, "latitudeOfLastGridPointInDegrees", where, &la2));
    WX_TRY(need_double(h, "longitudeOfFirstGridPointInDegrees", where, &lo1));
    WX_TRY(need_double(h, "longitudeOfLastGridPointInDegrees", where, &lo2));
    g->i_neg = get_long_or(h, "iScansNegatively", 0);
    g->j_pos = get_long_or(h, "jScansPositively", 0);
    g->j_consec = get_long_or(h, "jPointsAreConsecutive", 0);
    g->alt_rows = get_long_or(h, "alternativeRowScanning", 0);
    if (g->ni < 1 || g->nj < 1 || g->ni > 1000000 || g->nj > 1000000)
        return wx_error_set(WX_ERR_RUN, "%s: grid size %ldx%ld is not usable", where, g->ni, g->nj);
    /* Spacing from the corner points (the increments may be absent or rounded). */
    double dj = g->nj > 1 ? fabs(la2 - la1) / (double)(g->nj - 1) : 1.0;
    double span = g->i_neg ? lo1 - lo2 : lo2 - lo1;
    if (span < 0) span += 360;
    double di = g->ni > 1 ? span / (double)(g->ni - 1) : 1.0;
    g->lats = wx_malloc(sizeof(double) * (size_t)g->nj);
    g->lons = wx_malloc(sizeof(double) * (size_t)g->ni);
    for (long r = 0; r < g->nj; r++) g->lats[r] = la1 + (la2 >= la1 ? 1 : -1) * (double)r * dj;
    for (long c = 0; c < g->ni; c++) g->lons[c] = lo1 + (g->i_neg ? -1 : 1) * (double)c * di;
    return WX_OK;
}

static wx_status time_of(codes_handle *h, const char *where, wx_field_info *f) {
    long vd, vt;
    WX_TRY(need_long(h, "validityDate", where, &vd));
    WX_TRY(need_long(h, "validityTime", where, &vt));
    WX_TRY(wx_time_from_grib(vd, vt, &f->valid));
    /* eccodes derives validityDate by date arithmetic that rolls an impossible reference date
     * over (dataDate 20010230 became 2001-03-02): the reference date itself must exist */
    long dd = get_long_or(h, "dataDate", 0), dt = get_long_or(h, "dataTime", 0);
    if (wx_time_from_grib(dd, dt, &f->ref) != WX_OK)
        return wx_error_wrap(WX_ERR_RUN, "%s: dataDate/dataTime: ", where);
    f->has_ref = 1;
    f->has_time = 1;
    char st[32] = "";
    size_t len = sizeof st;
    if (codes_get_string(h, "stepType", st, &len) == 0 && !strcmp(st, "accum")) {
        long s0 = get_long_or(h, "startStep", 0), s1 = get_long_or(h, "endStep", 0);
        long unit = get_long_or(h, "stepUnits", 1);
        int64_t mul = unit == 0 ? 60 : unit == 1 ? 3600 : unit == 2 ? 86400 : unit == 13 || unit == 254 ? 1
                    : unit == 10 ? 3 * 3600 : unit == 11 ? 6 * 3600 : unit == 12 ? 12 * 3600 : 0;
        if (!mul) return wx_error_set(WX_ERR_RUN, "%s: accumulation step unit %ld not supported",
                                      where, unit);
        f->accum_s = (s1 - s0) * mul;
    }
    return WX_OK;
}

static wx_status describe_message(codes_handle *h, const char *where, wx_field_info *f) {
    size_t len = sizeof f->name;
    int e = codes_get_string(h, "shortName", f->name, &len);
    if (e) return wx_error_set(WX_ERR_RUN, "%s: no shortName: %s", where, codes_get_error_message(e));
    char tol[64] = "";
    len = sizeof tol;
    codes_get_string(h, "typeOfLevel", tol, &len);
    long level = get_long_or(h, "level", 0);
    if (!strcmp(tol, "isobaricInhPa") || !strcmp(tol, "isobaricInPa")) {
        f->kind = WX_LEVEL_PRESSURE;
        f->level = !strcmp(tol, "isobaricInPa") ? level / 100.0 : (double)level;
        f->entry = wx_catalogue_find_kind(f->name, WX_LEVEL_PRESSURE);
        if (!f->entry) f->entry = wx_catalogue_find_converted(f->name, WX_LEVEL_PRESSURE, &f->scale);
    } else {
        f->kind = WX_LEVEL_SINGLE;
        f->entry = wx_catalogue_find_kind(f->name, WX_LEVEL_SINGLE);
        if (!f->entry) f->entry = wx_catalogue_find_kind(f->name, WX_LEVEL_STATIC);
        if (f->entry) f->kind = f->entry->level_kind;
    }
    snprintf(f->param, sizeof f->param, "%.63s", f->entry ? f->entry->short_name : f->name);
    f->member = codes_is_defined(h, "number") ? (int)get_long_or(h, "number", 0) : -1;
    WX_TRY(time_of(h, where, f));
    grib_geom g;
    wx_status st = geom_read(h, where, &g);
    if (st == WX_OK) {
        int *rm = wx_malloc(sizeof(int) * (size_t)g.nj), *cm = wx_malloc(sizeof(int) * (size_t)g.ni);
        st = wx_source_grid_from_axes(g.lats, (int)g.nj, g.lons, (int)g.ni, where, &f->grid, rm, cm);
        free(rm);
        free(cm);
    }
    geom_free(&g);
    return st;
}

static uint64_t be(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int k = 0; k < n; k++) v = v << 8 | p[k];
    return v;
}

/* Length of the message at p (at most `left` bytes available) from section 0, checked against
 * the "7777" end marker; 0 when it is damaged or cut. GRIB1 messages over 8 MB flag their length
 * (ECMWF convention) and are measured by eccodes itself. */
static size_t message_length(const unsigned char *p, size_t left) {
    if (left < 16) return 0;
    uint64_t len = p[7] == 2 ? be(p + 8, 8) : p[7] == 1 ? be(p + 4, 3) : 0;
    if (p[7] == 1 && (len & 0x800000)) {
        codes_handle *h = codes_handle_new_from_message(NULL, p, left);
        long tl = 0;
        len = h && codes_get_long(h, "totalLength", &tl) == 0 && tl > 0 ? (uint64_t)tl : 0;
        if (h) codes_handle_delete(h);
    }
    if (len < 16 || len > left || memcmp(p + len - 4, "7777", 4)) return 0;
    return (size_t)len;
}

/* The scan's descriptions: message i described (and its handle kept for the read) by whichever
 * thread takes it; `next` hands out messages in chunks of 4. */
typedef struct {
    wx_source *s;
    grib_impl *im;
    wx_status *sts;
    char **errs;
    pthread_mutex_t mu;
    int next;
} scan_job;

static void describe_one(scan_job *j, int i) {
    wx_source *s = j->s;
    grib_impl *im = j->im;
    wx_field_info *f = &s->fields[i];
    char where[600];
    snprintf(where, sizeof where, "%s: message %lld", s->path, (long long)f->msg);
    codes_handle *h = codes_handle_new_from_message(NULL, im->map + f->offset, im->len[i]);
    if (!h)
        j->sts[i] = wx_error_set(WX_ERR_RUN, "%s (at or after byte %lld) is damaged or truncated "
                                 "(eccodes: %s); the file is not usable, download it again", where,
                                 (long long)f->offset, codes_get_error_message(GRIB_INVALID_MESSAGE));
    else {
        j->sts[i] = describe_message(h, where, f);
        if (j->sts[i] == WX_OK && i < GRIB_KEEP_HANDLES) im->kept[i] = h;
        else codes_handle_delete(h);
    }
    if (j->sts[i] != WX_OK) j->errs[i] = wx_strdup(wx_error_message());
}

static void *scan_worker(void *arg) {
    scan_job *j = arg;
    for (;;) {
        pthread_mutex_lock(&j->mu);
        int i0 = j->next;
        j->next += 4;
        pthread_mutex_unlock(&j->mu);
        for (int i = i0; i < i0 + 4 && i < j->s->count; i++) describe_one(j, i);
        if (i0 + 4 >= j->s->count) return NULL;
    }
}

/* Messages 1.. on omp_get_max_threads() plain threads, this one included. Not an OpenMP team:
 * its idle workers spin after the region (~10 ms of CPU here), on the cores the ingest's first
 * batch is decoded on. A thread that cannot start leaves its messages to the others. */
static void scan_parallel(scan_job *j) {
    int nt = omp_get_max_threads();
    if (nt > j->s->count - 1) nt = j->s->count - 1;
    pthread_t *tid = wx_calloc((size_t)(nt > 1 ? nt : 1), sizeof *tid);
    int started = 0;
    for (int k = 1; k < nt; k++)
        if (pthread_create(&tid[started], NULL, scan_worker, j) == 0) started++;
    if (j->s->count > 1) scan_worker(j);
    for (int k = 0; k < started; k++) pthread_join(tid[k], NULL);
    free(tid);
    pthread_mutex_destroy(&j->mu);
}

wx_status wx_grib_scan(wx_source *s) {
    grib_impl *im = wx_calloc(1, sizeof *im);
    WX_ASSERT(pthread_mutex_init(&im->lock, NULL) == 0);
    s->impl = im;
    int fd = open(s->path, O_RDONLY);
    if (fd < 0) return wx_error_set(WX_ERR_RUN, "%s: cannot open: %s", s->path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb)) {
        close(fd);
        return wx_error_set(WX_ERR_RUN, "%s: cannot stat: %s", s->path, strerror(errno));
    }
    im->size = (size_t)sb.st_size;
    void *map = im->size ? mmap(NULL, im->size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    int map_err = errno;
    close(fd);
    if (map == MAP_FAILED)
        return im->size ? wx_error_set(WX_ERR_RUN, "%s: cannot map: %s", s->path, strerror(map_err))
                        : wx_error_set(WX_ERR_RUN, "%s: no GRIB messages found", s->path);
    im->map = map;
    madvise(map, im->size, MADV_SEQUENTIAL);
    /* Boundaries: bytes between messages are skipped as eccodes does (it looks for "GRIB"). */
    size_t cap = 0;
    for (size_t pos = 0; pos + 4 <= im->size;) {
        const unsigned char *p = memmem(im->map + pos, im->size - pos, "GRIB", 4);
        if (!p) break;
        size_t at = (size_t)(p - im->map), len = message_length(p, im->size - at);
        if (!len)
            return wx_error_set(WX_ERR_RUN, "%s: message %d (at or after byte %zu) is damaged or "
                                "truncated (eccodes: Wrong message length); the file is not usable, "
                                "download it again", s->path, s->count + 1, at);
        wx_field_info *f = wx_source_add(s);
        f->msg = s->count;
        f->offset = (int64_t)at;
        if (s->count > (int)cap) {
            cap = cap ? 2 * cap : 64;
            size_t *n = realloc(im->len, sizeof *n * cap);
            WX_ASSERT(n != NULL);
            im->len = n;
        }
        im->len[s->count - 1] = len;
        pos = at + len;
    }
    if (s->count == 0) return wx_error_set(WX_ERR_RUN, "%s: no GRIB messages found", s->path);
    /* Descriptions in parallel; the first failing message (in file order) is reported.
     * Message 0 goes first on this thread alone: eccodes initialises its definitions and caches
     * lazily on first use, and that first use must not race (LeakSanitizer caught allocations
     * lost to it when several threads made their first handle together). */
    im->kept = wx_calloc((size_t)s->count, sizeof *im->kept);
    scan_job j = {s, im, wx_calloc((size_t)s->count, sizeof(wx_status)),
                  wx_calloc((size_t)s->count, sizeof(char *)), PTHREAD_MUTEX_INITIALIZER, 1};
    describe_one(&j, 0);
    scan_parallel(&j);
    wx_status *sts = j.sts;
    char **errs = j.errs;
    wx_status st = WX_OK;
    for (int i = 0; i < s->count && st == WX_OK; i++)
        if (sts[i] != WX_OK) st = wx_error_set(sts[i], "%s", errs[i]);
    for (int i = 0; i < s->count; i++) free(errs[i]);
    free(errs);
    free(sts);
    return st;
}

/* eccodes decodes to double only (2.28): one buffer per thread, kept and grown, so that every
 * field does not map and fault in fresh pages. Held through a pthread key whose destructor frees
 * it when the thread exits (ingest's decode threads come and go per batch). */
typedef struct {
    double *buf;
    size_t cap;
} decode_buf;

static pthread_key_t decode_key;
static pthread_once_t decode_key_once = PTHREAD_ONCE_INIT;

static void decode_buf_free(void *p) {
    decode_buf *d = p;
    free(d->buf);
    free(d);
}

static void decode_key_make(void) { WX_ASSERT(pthread_key_create(&decode_key, decode_buf_free) == 0); }

static double *decode_buffer(size_t n) {
    pthread_once(&decode_key_once, decode_key_make);
    decode_buf *d = pthread_getspecific(decode_key);
    if (!d) {
        d = wx_calloc(1, sizeof *d);
        WX_ASSERT(pthread_setspecific(decode_key, d) == 0);
    }
    if (n > d->cap) {
        /* 2 MB-aligned with a huge-page hint: ingest's decode threads come and go per batch, and
         * a new thread's 8 MB buffer (ERA5 0.25 degree) then costs 4 page faults, not 2000. */
        size_t huge = (size_t)2 << 20, len = (sizeof(double) * n + huge - 1) / huge * huge;
        free(d->buf);
        d->buf = NULL;
        WX_ASSERT(posix_memalign((void **)&d->buf, huge, len) == 0);
#ifdef MADV_HUGEPAGE
        madvise(d->buf, len, MADV_HUGEPAGE); /* a hint: 4 KB pages work too */
#endif
        d->cap = len / sizeof(double);
    }
    return d->buf;
}

/* Same rounding as the scalar cast (cvtpd2ps and cvtsd2ss both round by MXCSR); spelled as 4-wide
 * vector conversions because -O2's very-cheap vectoriser leaves the plain loop scalar (unknown
 * trip count, possible aliasing). */
static void f64_to_f32(float *restrict dst, const double *restrict src, size_t n) {
    typedef double v4d __attribute__((vector_size(32)));
    typedef float v4f __attribute__((vector_size(16)));
    size_t k = 0;
    for (; k + 4 <= n; k += 4) {
        v4d a;
        memcpy(&a, src + k, sizeof a);
        v4f b = __builtin_convertvector(a, v4f);
        memcpy(dst + k, &b, sizeof b);
    }
    for (; k < n; k++) dst[k] = (float)src[k];
}

/* The scan's handle for message i, taken once; NULL when it was not kept or already taken. */
static codes_handle *take_handle(grib_impl *im, int i) {
    if (!im->kept) return NULL;
    WX_ASSERT(pthread_mutex_lock(&im->lock) == 0);
    codes_handle *h = im->kept[i];
    im->kept[i] = NULL;
    WX_ASSERT(pthread_mutex_unlock(&im->lock) == 0);
    return h;
}

wx_status wx_grib_read(wx_source *s, int i, wx_missing_policy policy, float *values) {
    grib_impl *im = s->impl;
    const wx_field_info *f = &s->fields[i];
    char where[600];
    wx_field_describe(s, f, where, sizeof where);
    codes_handle *h = take_handle(im, i);
    if (!h) h = codes_handle_new_from_message(NULL, im->map + f->offset, im->len[i]);
    if (!h)
        return wx_error_set(WX_ERR_RUN, "%s: cannot be read again (eccodes: %s); was the file "
                            "changed during ingest?", where, codes_get_error_message(GRIB_INVALID_MESSAGE));
    grib_geom g;
    wx_status st = geom_read(h, where, &g);
    double *buf = NULL;
    int *rm = NULL, *cm = NULL;
    if (st == WX_OK) {
        size_t n = 0;
        int e = codes_get_size(h, "values", &n);
        if (e || n != (size_t)(g.ni * g.nj)) {
            st = wx_error_set(WX_ERR_RUN, "%s: %zu values for a %ldx%ld grid", where, n, g.ni, g.nj);
        } else {
            buf = decode_buffer(n);
            e = codes_get_double_array(h, "values", buf, &n);
            if (e) st = wx_error_set(WX_ERR_RUN, "%s: decoding failed (eccodes: %s)", where,
                                     codes_get_error_message(e));
        }
    }
    if (st == WX_OK) {
        rm = wx_malloc(sizeof(int) * (size_t)g.nj);
        cm = wx_malloc(sizeof(int) * (size_t)g.ni);
        wx_grid grid;
        st = wx_source_grid_from_axes(g.lats, (int)g.nj, g.lons, (int)g.ni, where, &grid, rm, cm);
    }
    if (st == WX_OK) {
        long bitmap = get_long_or(h, "bitmapPresent", 0);
        double miss = 9999;
        codes_get_double(h, "missingValue", &miss);
        long nmiss = 0;
        size_t n = (size_t)(g.ni * g.nj);
        /* Row-major scans (the ERA5 case) go row by row without a division per point, and a row
         * whose columns stay in place converts contiguously (the whole field in one run when the
         * rows stay in place too); missing points are then marked while the row is in cache. */
        int rows = !g.j_consec && !g.alt_rows, same_cols = 1, same_rows = 1;
        for (long c = 0; rows && c < g.ni; c++) same_cols &= cm[c] == c;
        for (long r = 0; rows && r < g.nj; r++) same_rows &= rm[r] == r;
        int whole = rows && same_cols && same_rows && !bitmap;
        if (whole) f64_to_f32(values, buf, n);
        for (long r = 0; rows && !whole && r < g.nj; r++) {
            const double *src = buf + (size_t)r * (size_t)g.ni;
            float *dst = values + (size_t)rm[r] * (size_t)g.ni;
            if (same_cols) {
                f64_to_f32(dst, src, (size_t)g.ni);
                for (long c = 0; bitmap && c < g.ni; c++)
                    if (src[c] == miss) dst[c] = NAN, nmiss++;
            } else
                for (long c = 0; c < g.ni; c++) {
                    int m = bitmap && src[c] == miss;
                    nmiss += m;
                    dst[cm[c]] = m ? NAN : (float)src[c];
                }
        }
        for (size_t k = 0; !rows && k < n; k++) {
            long r, c;
            if (g.j_consec) r = (long)(k % (size_t)g.nj), c = (long)(k / (size_t)g.nj);
            else r = (long)(k / (size_t)g.ni), c = (long)(k % (size_t)g.ni);
            if (g.alt_rows && (g.j_consec ? (c & 1) : (r & 1))) {
                if (g.j_consec) r = g.nj - 1 - r;
                else c = g.ni - 1 - c;
            }
            float v = (float)buf[k];
            if (bitmap && buf[k] == miss) {
                nmiss++;
                v = NAN;
            }
            values[(size_t)rm[r] * (size_t)g.ni + (size_t)cm[c]] = v;
        }
        if (nmiss && policy == WX_MISSING_ERROR)
            st = wx_error_set(WX_ERR_RUN, "%s: %ld of %zu values are missing (GRIB bitmap; an "
                              "ingest recipe keeps them as NaN with `missing: nan`)", where, nmiss, n);
    }
    free(rm);
    free(cm);
    geom_free(&g);
    codes_handle_delete(h);
    return st;
}

void wx_grib_close(wx_source *s) {
    grib_impl *im = s->impl;
    if (!im) return;
    for (int i = 0; im->kept && i < s->count; i++)
        if (im->kept[i]) codes_handle_delete(im->kept[i]);
    free(im->kept);
    pthread_mutex_destroy(&im->lock);
    if (im->map) munmap((void *)im->map, im->size);
    free(im->len);
    free(im);
    s->impl = NULL;
}
