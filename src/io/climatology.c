/* climatology.wxc: header packing and the reader (io/climatology.h). */
#include "io/climatology.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "io/archive.h"

struct wx_climatology {
    int fd;
    char path[4200];
    wx_clim_header h;
    uint32_t *crcs; /* [ndoy * nhours] (with SEEPS: then as many SEEPS slabs) */
    size_t slab_bytes;
};

void wx_clim_header_pack(const wx_clim_header *h, unsigned char *b) {
    memset(b, 0, WX_CLIM_HEADER_BYTES);
    memcpy(b, WX_CLIM_MAGIC, 8);
    const uint32_t u[7] = {h->version, h->nchan, h->nlat, h->nlon, h->ndoy, h->nhours, h->window};
    memcpy(b + 8, u, sizeof u); /* 8..35 */
    if (h->version >= 2) memcpy(b + 36, &h->seeps_chan, 4); /* version 1: reserved, 0 */
    memcpy(b + 40, h->hours, 24);
    memcpy(b + 64, &h->stats_start, 8);
    memcpy(b + 72, &h->stats_end, 8);
    memcpy(b + 80, &h->data_offset, 8);
    memcpy(b + 88, &h->header_crc, 4);
    if (h->version < 2) return;
    memcpy(b + 96, &h->seeps_period_s, 8);
    memcpy(b + 104, &h->seeps_dry, 8);
    memcpy(b + 112, &h->seeps_offset, 8);
}

void wx_clim_header_unpack(const unsigned char *b, wx_clim_header *h) {
    uint32_t u[7];
    memcpy(u, b + 8, sizeof u);
    h->version = u[0], h->nchan = u[1], h->nlat = u[2], h->nlon = u[3];
    h->ndoy = u[4], h->nhours = u[5], h->window = u[6];
    memcpy(h->hours, b + 40, 24);
    memcpy(&h->stats_start, b + 64, 8);
    memcpy(&h->stats_end, b + 72, 8);
    memcpy(&h->data_offset, b + 80, 8);
    memcpy(&h->header_crc, b + 88, 4);
    h->seeps_chan = -1, h->seeps_period_s = 0, h->seeps_dry = NAN, h->seeps_offset = 0;
    if (h->version < 2) return;
    memcpy(&h->seeps_chan, b + 36, 4);
    memcpy(&h->seeps_period_s, b + 96, 8);
    memcpy(&h->seeps_dry, b + 104, 8);
    memcpy(&h->seeps_offset, b + 112, 8);
}

int wx_clim_header_bytes(const wx_clim_header *h) {
    return h->version >= 2 ? WX_CLIM_HEADER_BYTES : WX_CLIM_HEADER_BYTES_V1;
}

uint32_t wx_clim_header_crc(const unsigned char *b, const uint32_t *slab_crcs, int nslabs) {
    uint32_t version;
    memcpy(&version, b + 8, 4);
    uLong c = crc32(crc32(0L, Z_NULL, 0), b, 88);
    if (version >= 2) c = crc32(c, b + 96, WX_CLIM_HEADER_BYTES - 96);
    return (uint32_t)crc32(c, (const Bytef *)slab_crcs, (uInt)(4 * (size_t)nslabs));
}

int wx_seeps_dry_threshold(int64_t period_s, const char *units, double *thr) {
    *thr = NAN;
    double mm = period_s == 86400 ? 0.25 : period_s == 21600 ? 0.1 : NAN;
    if (isnan(mm) || !units) return 0;
    if (!strcmp(units, "m")) *thr = mm / 1000.0;
    else if (!strcmp(units, "mm") || !strcmp(units, "kg m-2") || !strcmp(units, "kg m**-2")) *thr = mm;
    return !isnan(*thr);
}

void wx_climatology_close(wx_climatology *c) {
    if (!c) return;
    if (c->fd >= 0) close(c->fd);
    free(c->crcs);
    free(c);
}

static wx_status check_header(wx_climatology *c, const unsigned char *b, const wx_archive_meta *m) {
    wx_clim_header *h = &c->h;
    if (memcmp(b, WX_CLIM_MAGIC, 8))
        return wx_error_set(WX_ERR_RUN, "%s: not a wxcast climatology (bad magic)", c->path);
    wx_clim_header_unpack(b, h);
    if ((h->version != 1 && h->version != WX_CLIM_VERSION) || h->ndoy != WX_CLIM_NDOY ||
        h->nhours < 1 || h->nhours > 24)
        return wx_error_set(WX_ERR_RUN, "%s: version %u, %u days, %u hours: expected version 1 or "
                            "%d, 366 days, 1..24 hours", c->path, h->version, h->ndoy, h->nhours,
                            WX_CLIM_VERSION);
    if ((int)h->nchan != m->nchan || (int)h->nlat != m->grid.nlat || (int)h->nlon != m->grid.nlon)
        return wx_error_set(WX_ERR_RUN, "%s: %u channels on %ux%u, but the manifest has %d on %dx%d",
                            c->path, h->nchan, h->nlat, h->nlon, m->nchan, m->grid.nlat,
                            m->grid.nlon);
    if (h->seeps_chan < -1 || h->seeps_chan >= (int32_t)h->nchan)
        return wx_error_set(WX_ERR_RUN, "%s: SEEPS channel %d: expected -1 or 0..%u", c->path,
                            h->seeps_chan, h->nchan - 1);
    int ns = (int)(h->ndoy * h->nhours) * (h->seeps_chan >= 0 ? 2 : 1);
    c->crcs = wx_calloc((size_t)ns, 4);
    if (pread(c->fd, c->crcs, 4 * (size_t)ns, wx_clim_header_bytes(h)) != (ssize_t)(4 * (size_t)ns))
        return wx_error_set(WX_ERR_RUN, "%s: crc table truncated", c->path);
    if (wx_clim_header_crc(b, c->crcs, ns) != h->header_crc)
        return wx_error_set(WX_ERR_RUN, "%s: header checksum mismatch (header or table damaged)",
                            c->path);
    c->slab_bytes = (size_t)h->nchan * h->nlat * h->nlon * 4;
    return WX_OK;
}

wx_status wx_climatology_open(const char *dir, wx_climatology **out) {
    *out = NULL;
    wx_archive_meta m;
    WX_TRY(wx_archive_read_manifest(dir, &m));
    if (!m.has_stats || !m.climatology[0]) {
        int stats = m.has_stats;
        wx_archive_meta_free(&m);
        return wx_error_set(WX_ERR_RUN, "%s: the archive has no climatology (ingest it with %s to "
                            "compute one)", dir, stats ? "`climatology: true` (its recipe turned "
                            "it off)" : "a `statistics` window");
    }
    wx_climatology *c = wx_calloc(1, sizeof *c);
    snprintf(c->path, sizeof c->path, "%s/%s", dir, m.climatology);
    c->fd = open(c->path, O_RDONLY);
    wx_status st = WX_OK;
    unsigned char b[WX_CLIM_HEADER_BYTES];
    if (c->fd < 0)
        st = wx_error_set(WX_ERR_RUN, "%s: cannot open: %s", c->path, strerror(errno));
    else if (pread(c->fd, b, sizeof b, 0) != (ssize_t)sizeof b)
        st = wx_error_set(WX_ERR_RUN, "%s: header truncated", c->path);
    else
        st = check_header(c, b, &m);
    /* another archive's climatology of the same shape passes every check above */
    if (st == WX_OK && m.clim_crc && c->h.header_crc != m.clim_crc)
        st = wx_error_set(WX_ERR_RUN, "%s: not the climatology ingest wrote for this archive "
                          "(header checksum %08x, manifest.json records %08x): copied from another "
                          "archive? rerun `wxcast ingest`", c->path, c->h.header_crc, m.clim_crc);
    wx_archive_meta_free(&m);
    if (st != WX_OK) {
        wx_climatology_close(c);
        return st;
    }
    *out = c;
    return WX_OK;
}

const wx_clim_header *wx_climatology_header(const wx_climatology *c) { return &c->h; }

/* Slab index of (doy, hour), or an error naming the stored hours. */
static wx_status slab_of(wx_climatology *c, int doy, int hour, size_t *slab) {
    const wx_clim_header *h = &c->h;
    int hi = -1;
    char list[128] = "";
    for (uint32_t k = 0; k < h->nhours; k++) {
        if (h->hours[k] == hour) hi = (int)k;
        size_t n = strlen(list);
        snprintf(list + n, sizeof list - n, "%s%u", k ? "," : "", h->hours[k]);
    }
    if (doy < 1 || doy > WX_CLIM_NDOY)
        return wx_error_set(WX_ERR_RUN, "%s: day of year %d outside 1..366", c->path, doy);
    if (hi < 0)
        return wx_error_set(WX_ERR_RUN, "%s: hour %d is not stored (hours: %s)", c->path, hour, list);
    *slab = (size_t)(doy - 1) * h->nhours + (size_t)hi;
    return WX_OK;
}

/* `bytes` at `off` into out, crc32 checked against crc. what: "" or "SEEPS " for messages. */
static wx_status read_checked(wx_climatology *c, off_t off, size_t bytes, uint32_t crc, void *out,
                              const char *what, int doy, int hour) {
    unsigned char *p = out;
    size_t got = 0;
    while (got < bytes) {
        ssize_t k = pread(c->fd, p + got, bytes - got, off + (off_t)got);
        if (k <= 0)
            return wx_error_set(WX_ERR_RUN, "%s: %sday %d hour %d: read failed (%s)", c->path, what,
                                doy, hour, k == 0 ? "file truncated" : strerror(errno));
        got += (size_t)k;
    }
    if ((uint32_t)crc32(crc32(0L, Z_NULL, 0), p, (uInt)bytes) != crc)
        return wx_error_set(WX_ERR_RUN, "%s: %sday %d hour %d: crc32 mismatch, the data is damaged",
                            c->path, what, doy, hour);
    return WX_OK;
}

wx_status wx_climatology_get(wx_climatology *c, int doy, int hour, float *out) {
    size_t slab;
    WX_TRY(slab_of(c, doy, hour, &slab));
    return read_checked(c, (off_t)(c->h.data_offset + slab * c->slab_bytes), c->slab_bytes,
                        c->crcs[slab], out, "", doy, hour);
}

wx_status wx_climatology_get_time(wx_climatology *c, wx_time t, float *out) {
    return wx_climatology_get(c, wx_time_day_of_year(t), wx_time_hour_of_day(t), out);
}

int wx_climatology_has_seeps(const wx_climatology *c) { return c->h.seeps_chan >= 0; }

wx_status wx_climatology_seeps_get(wx_climatology *c, int doy, int hour, float *dry, float *wet) {
    const wx_clim_header *h = &c->h;
    if (h->seeps_chan < 0)
        return wx_error_set(WX_ERR_RUN, "%s: no SEEPS fields (version %u%s)", c->path, h->version,
                            h->version < 2 ? ": rebuild the climatology with this wxcast" :
                            ": the archive has no tp accumulated over 6 h or 24 h");
    size_t slab, P = (size_t)h->nlat * h->nlon, nslab = (size_t)h->ndoy * h->nhours;
    WX_TRY(slab_of(c, doy, hour, &slab));
    /* dry and wet are two arrays; the slab is one contiguous [2, P] with one crc */
    float *buf = wx_malloc(sizeof(float) * 2 * P);
    wx_status st = read_checked(c, (off_t)(h->seeps_offset + slab * 8 * P), 8 * P,
                                c->crcs[nslab + slab], buf, "SEEPS ", doy, hour);
    if (st == WX_OK) memcpy(dry, buf, 4 * P), memcpy(wet, buf + P, 4 * P);
    free(buf);
    return st;
}

wx_status wx_climatology_seeps_p1(wx_climatology *c, float *p1) {
    const wx_clim_header *h = &c->h;
    size_t P = (size_t)h->nlat * h->nlon;
    double *sum = wx_calloc(P, sizeof(double));
    int64_t *n = wx_calloc(P, sizeof(int64_t));
    float *dry = wx_malloc(sizeof(float) * P), *wet = wx_malloc(sizeof(float) * P);
    wx_status st = WX_OK;
    for (int d = 1; d <= WX_CLIM_NDOY && st == WX_OK; d++)
        for (uint32_t k = 0; k < h->nhours && st == WX_OK; k++) {
            if ((st = wx_climatology_seeps_get(c, d, h->hours[k], dry, wet))) break;
            for (size_t p = 0; p < P; p++)
                if (isfinite(dry[p])) sum[p] += dry[p], n[p]++;
        }
    for (size_t p = 0; st == WX_OK && p < P; p++) p1[p] = n[p] ? (float)(sum[p] / (double)n[p]) : NAN;
    free(sum), free(n), free(dry), free(wet);
    return st;
}
