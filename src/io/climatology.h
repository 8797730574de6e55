/* Day-of-year × hour-of-day climatology stored beside a training archive (climatology.wxc, named
 * by the manifest's statistics.climatology; docs/archive-format.md gives every byte). It holds,
 * for each day of year 1..366 and each hour of day present in the statistics window, every
 * channel's field smoothed over a 61-day window (WeatherBench2 triangular weights, circular in day
 * of year); the ACC and climatology-skill code of eval reads it through this API. Version 2 adds,
 * for the precipitation channel (tp accumulated over 6 h or 24 h), WeatherBench2's SEEPS
 * climatology per day of year × hour: the dry fraction and the wet (light/heavy) threshold
 * (data_prep/climatology_seeps.c). Version-1 files still open; they have no SEEPS fields. The
 * computation lives in data_prep/climatology_build.c and climatology_seeps.c. */
#ifndef WX_CLIMATOLOGY_H
#define WX_CLIMATOLOGY_H

#include <stdint.h>

#include "core/wx_error.h"
#include "meteo/wx_time.h"

#define WX_CLIM_MAGIC "WXCLIM01"
#define WX_CLIM_VERSION 2
#define WX_CLIM_NDOY 366
#define WX_CLIM_HEADER_BYTES 128   /* version 2; the crc table follows it */
#define WX_CLIM_HEADER_BYTES_V1 96 /* version 1 */

/* WeatherBench2's SEEPS masks: points whose mean dry fraction p1 is outside (min, max) are not
 * scored (weatherbench2/metrics.py SpatialSEEPS min_p1, max_p1). */
#define WX_SEEPS_MIN_P1 0.1
#define WX_SEEPS_MAX_P1 0.85

/* Header fields (little-endian on disk). */
typedef struct {
    uint32_t version, nchan, nlat, nlon, ndoy, nhours, window;
    uint8_t hours[24];          /* hours of day stored, ascending; first nhours used */
    int64_t stats_start, stats_end; /* window of the records averaged (unix seconds) */
    uint64_t data_offset;       /* 4096-aligned start of the slabs */
    uint32_t header_crc;        /* crc32 of bytes 0..87 (version 2: then bytes 96..127), then the
                                   slab crc table */
    /* Version 2: SEEPS climatology of one channel (seeps_chan -1: none; always -1 in version 1). */
    int32_t seeps_chan;
    int64_t seeps_period_s;     /* accumulation period of that channel (21600 or 86400) */
    double seeps_dry;           /* dry threshold in the channel's units (0.1 mm for 6 h, 0.25 mm
                                   for 24 h: 1e-4 / 2.5e-4 for tp in m) */
    uint64_t seeps_offset;      /* 4096-aligned start of the SEEPS slabs */
} wx_clim_header;

/* Slab (doy, hour index) = [nchan, nlat, nlon] float32, at data_offset + (d*nhours + h) * slab.
 * SEEPS slab (doy, hour index) = [2, nlat, nlon] float32 (dry fraction, then wet threshold), at
 * seeps_offset + (d*nhours + h) * 2*nlat*nlon*4; their crcs follow the mean slabs' in the table. */
void wx_clim_header_pack(const wx_clim_header *h, unsigned char *b);   /* b: [128] */
void wx_clim_header_unpack(const unsigned char *b, wx_clim_header *h); /* b: [128] */
/* Bytes of the header of version h->version (96 or 128): where the crc table starts. */
int wx_clim_header_bytes(const wx_clim_header *h);
/* The checksum of packed header b (its version decides the bytes covered) and the slab crcs. */
uint32_t wx_clim_header_crc(const unsigned char *b, const uint32_t *slab_crcs, int nslabs);

/* The SEEPS dry threshold of an accumulation period in a channel's units: WeatherBench2's
 * 0.25 mm for 24 h (total_precipitation_24hr) and 0.1 mm for 6 h (total_precipitation_6hr),
 * in m for units "m", in mm for "mm", "kg m-2", "kg m**-2". Returns 0 (and *thr NaN) for any
 * other period or unit: WB2 defines no threshold for them. */
int wx_seeps_dry_threshold(int64_t period_s, const char *units, double *thr);

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
/* 1 when the file holds SEEPS fields (version 2 with a SEEPS channel). */
int wx_climatology_has_seeps(const wx_climatology *c);
/* The SEEPS fields of day of year doy at hour of day `hour` (crc32 checked): dry fraction (of the
 * values below the dry threshold) and wet threshold (the 2/3 weighted quantile of the others).
 * An error naming the file when it has none. dry, wet: [nlat, nlon] each */
wx_status wx_climatology_seeps_get(wx_climatology *c, int doy, int hour, float *dry, float *wet);
/* p1 of WeatherBench2's SEEPS: the dry fraction averaged over every stored day of year and hour,
 * per point over its finite values (NaN when none). p1: [nlat, nlon] */
wx_status wx_climatology_seeps_p1(wx_climatology *c, float *p1);

#endif
