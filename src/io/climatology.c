/* climatology.wxc: header packing and the reader (io/climatology.h). */
#include "io/climatology.h"

#include <errno.h>
#include <fcntl.h>
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
    uint32_t *crcs; /* [ndoy * nhours] */
    size_t slab_bytes;
};

void wx_clim_header_pack(const wx_clim_header *h, unsigned char *b) {
    memset(b, 0, WX_CLIM_HEADER_BYTES);
    memcpy(b, WX_CLIM_MAGIC, 8);
    const uint32_t u[7] = {h->version, h->nchan, h->nlat, h->nlon, h->ndoy, h->nhours, h->window};
    memcpy(b + 8, u, sizeof u); /* 8..35; 36..39 reserved */
    memcpy(b + 40, h->hours, 24);
    memcpy(b + 64, &h->stats_start, 8);
    memcpy(b + 72, &h->stats_end, 8);
    memcpy(b + 80, &h->data_offset, 8);
    memcpy(b + 88, &h->header_crc, 4);
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
}

uint32_t wx_clim_header_crc(const unsigned char *b, const uint32_t *slab_crcs, int nslabs) {
    uLong c = crc32(crc32(0L, Z_NULL, 0), b, 88);
    return (uint32_t)crc32(c, (const Bytef *)slab_crcs, (uInt)(4 * (size_t)nslabs));
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
    if (h->version != WX_CLIM_VERSION || h->ndoy != WX_CLIM_NDOY || h->nhours < 1 || h->nhours > 24)
        return wx_error_set(WX_ERR_RUN, "%s: version %u, %u days, %u hours: expected version %d, "
                            "366 days, 1..24 hours", c->path, h->version, h->ndoy, h->nhours,
                            WX_CLIM_VERSION);
    if ((int)h->nchan != m->nchan || (int)h->nlat != m->grid.nlat || (int)h->nlon != m->grid.nlon)
        return wx_error_set(WX_ERR_RUN, "%s: %u channels on %ux%u, but the manifest has %d on %dx%d",
                            c->path, h->nchan, h->nlat, h->nlon, m->nchan, m->grid.nlat,
                            m->grid.nlon);
    int ns = (int)(h->ndoy * h->nhours);
    c->crcs = wx_calloc((size_t)ns, 4);
    if (pread(c->fd, c->crcs, 4 * (size_t)ns, WX_CLIM_HEADER_BYTES) != (ssize_t)(4 * (size_t)ns))
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
        wx_archive_meta_free(&m);
        return wx_error_set(WX_ERR_RUN, "%s: the archive has no climatology (ingest it with a "
                            "`statistics` window to compute one)", dir);
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
    wx_archive_meta_free(&m);
    if (st != WX_OK) {
        wx_climatology_close(c);
        return st;
    }
    *out = c;
    return WX_OK;
}

const wx_clim_header *wx_climatology_header(const wx_climatology *c) { return &c->h; }

wx_status wx_climatology_get(wx_climatology *c, int doy, int hour, float *out) {
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
    size_t slab = (size_t)(doy - 1) * h->nhours + (size_t)hi, got = 0;
    off_t off = (off_t)(h->data_offset + slab * c->slab_bytes);
    unsigned char *p = (unsigned char *)out;
    while (got < c->slab_bytes) {
        ssize_t k = pread(c->fd, p + got, c->slab_bytes - got, off + (off_t)got);
        if (k <= 0)
            return wx_error_set(WX_ERR_RUN, "%s: day %d hour %d: read failed (%s)", c->path, doy,
                                hour, k == 0 ? "file truncated" : strerror(errno));
        got += (size_t)k;
    }
    if ((uint32_t)crc32(crc32(0L, Z_NULL, 0), p, (uInt)c->slab_bytes) != c->crcs[slab])
        return wx_error_set(WX_ERR_RUN, "%s: day %d hour %d: crc32 mismatch, the data is damaged",
                            c->path, doy, hour);
    return WX_OK;
}

wx_status wx_climatology_get_time(wx_climatology *c, wx_time t, float *out) {
    return wx_climatology_get(c, wx_time_day_of_year(t), wx_time_hour_of_day(t), out);
}
