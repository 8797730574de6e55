/* GRIB2 output (eccodes): the one GRIB writer of wxcast, for reanalysis-like files (synth) and
 * forecast products alike.
 *
 * Each message is made from eccodes' "GRIB2" sample (centre ecmf, so tp is paramId 228 as in
 * ERA5), on a regular lat-lon grid scanned north→south (jScansPositively=0), with paramId,
 * typeOfLevel/level, dataDate/dataTime (the reference time), step (instantaneous fields) or
 * PDT 4.8 startStep/endStep (accumulations, stepType=accum), optional ensemble member (PDT 4.1 /
 * 4.11), and simple or CCSDS packing (bitsPerValue 16 by default) with a bitmap where values
 * are NaN.
 * The file is written to a temporary in the same folder and renamed on commit. */
#ifndef WX_GRIB_WRITE_H
#define WX_GRIB_WRITE_H

#include <stdint.h>

#include "core/wx_error.h"
#include "core/wx_fs.h"
#include "meteo/wx_catalogue.h"
#include "meteo/wx_grid.h"
#include "meteo/wx_time.h"

typedef struct {
    const wx_catalogue_entry *var; /* parameter (paramId) and its level kind */
    long level;                    /* hPa for pressure-level variables; ignored otherwise */
    wx_time ref_time;              /* dataDate/dataTime: analysis or forecast start */
    int64_t step_start;            /* seconds after ref_time: accumulation start (accum only) */
    int64_t step_end;              /* seconds after ref_time: the valid time */
    int member;                    /* ensemble perturbationNumber, or −1 for none; 0 is the
                                      unperturbed control (dataType cf), 1.. perturbed (pf) */
    int members;                   /* numberOfForecastsInEnsemble (member ≥ 0 only) */
} wx_grib_field;

enum { WX_GRIB_SIMPLE = 0, WX_GRIB_CCSDS = 1 };

typedef struct {
    wx_atomic_file file;
    char *path;
    int bits_per_value; /* default 16 */
    int64_t messages;
    /* Set after open (defaults 0): */
    int packing;        /* WX_GRIB_SIMPLE (grid_simple) or WX_GRIB_CCSDS (grid_ccsds, libaec) */
    int forecast;       /* 1: typeOfProcessedData 1 (forecast) at step 0 too, so that every
                           message of a product has one dataType (cfgrib indexes by it) */
    /* Kept between messages (a 0.25° field is 8 MB of doubles: a fresh buffer per message cost
     * as much in page faults as the packing), freed on close/abort: */
    void *sample;       /* codes_handle of the GRIB2 sample, cloned for each message */
    double *vals;
    size_t vals_cap;
} wx_grib_writer;

wx_status wx_grib_writer_open(wx_grib_writer *w, const char *path);
/* Appends one message. values: [grid.nlat, grid.nlon] row 0 northernmost; NaN = missing. */
wx_status wx_grib_writer_add(wx_grib_writer *w, const wx_grib_field *f, const wx_grid *grid,
                             const float *values);
/* Commits (fsync + rename); on failure the temporary is removed. Releases the writer. */
wx_status wx_grib_writer_close(wx_grib_writer *w);
/* Discards the temporary. Safe on a zeroed writer. */
void wx_grib_writer_abort(wx_grib_writer *w);

/* eccodes typeOfLevel for a catalogue entry: isobaricInhPa, heightAboveGround, meanSea,
 * entireAtmosphere (column integrals) or surface. */
const char *wx_grib_type_of_level(const wx_catalogue_entry *e);

#endif
