/* Day-of-year × hour-of-day climatology stored beside a training archive (climatology.wxc, named
 * by the manifest's statistics.climatology; docs/archive-format.md gives every byte). It holds,
 * for each day of year 1..366 and each hour of day present in the statistics window, every
 * channel's field smoothed over a 61-day window (WeatherBench2 triangular weights, circular in day
 * of year); the ACC and climatology-skill code of eval reads it through this API. The computation
 * lives in data_prep/climatology_build.c. */
#ifndef WX_CLIMATOLOGY_H
#define WX_CLIMATOLOGY_H

#include <stdint.h>

#include "core/wx_error.h"
#include "meteo/wx_time.h"

#define WX_CLIM_MAGIC "WXCLIM01"
#define WX_CLIM_VERSION 1
#define WX_CLIM_NDOY 366
#define WX_CLIM_HEADER_BYTES 96

/* Header fields (little-endian on disk). */
typedef struct {
    uint32_t version, nchan, nlat, nlon, ndoy, nhours, window;
    uint8_t hours[24];          /* hours of day stored, ascending; first nhours used */
    int64_t stats_start, stats_end; /* window of the records averaged (unix seconds) */
    uint64_t data_offset;       /* 4096-aligned start of the slabs */
    uint32_t header_crc;        /* crc32 of bytes 0..87, then the slab crc table */
} wx_clim_header;

/* Slab (doy, hour index) = [nchan, nlat, nlon] float32, at data_offset + (d*nhours + h) * slab. */
void wx_clim_header_pack(const wx_clim_header *h, unsigned char *b);   /* b: [96] */
void wx_clim_header_unpack(const unsigned char *b, wx_clim_header *h);
uint32_t wx_clim_header_crc(const unsigned char *b, const uint32_t *slab_crcs, int nslabs);

typedef struct wx_climatology wx_climatology;

/* Opens the climatology of an archive: reads manifest.json, opens the file it names, checks the
 * header checksum and that channels and grid match the manifest. An archive without one is an
 * error that says so (ingest it with a `statistics` window). */
wx_status wx_climatology_open(const char *archive_dir, wx_climatology **out);
void wx_climatology_close(wx_climatology *c);
const wx_clim_header *wx_climatology_header(const wx_climatology *c);
/* Field of day-of-year doy (1..366) at hour of day `hour` (one of the stored hours), every
 * channel, crc32 checked. Points with no record within the window are NaN.
 * out: [nchan, nlat, nlon] */
wx_status wx_climatology_get(wx_climatology *c, int doy, int hour, float *out);
/* As wx_climatology_get for the day of year and hour of day of t (UTC). out: [nchan, nlat, nlon] */
wx_status wx_climatology_get_time(wx_climatology *c, wx_time t, float *out);

#endif
