/* One source file (GRIB1/GRIB2 or NetCDF) seen as a list of 2-D fields in one common description:
 * parameter, level, valid time, member, grid and float32 values stored north→south with
 * longitudes ascending from the grid's lon0 (0 for global grids, whatever the source order).
 * Opening scans the metadata only; values are decoded per field on request. */
#ifndef WX_SOURCE_H
#define WX_SOURCE_H

#include <stdint.h>

#include "core/wx_error.h"
#include "meteo/wx_catalogue.h"
#include "meteo/wx_grid.h"
#include "meteo/wx_time.h"

typedef enum { WX_MISSING_ERROR = 0, WX_MISSING_NAN = 1 } wx_missing_policy;
typedef enum { WX_FORMAT_GRIB = 1, WX_FORMAT_NETCDF = 2 } wx_source_format;

typedef struct {
    char param[64];      /* catalogue shortName when known ("2t"), else the source's own name */
    char name[64];       /* the source's own name (eccodes shortName / NetCDF variable) */
    const wx_catalogue_entry *entry; /* NULL when the catalogue does not know it */
    double scale;        /* 0: values as stored; else the read multiplies them by it, a field the
                            catalogue converts to `entry` (gh in gpm read as z: 9.80665) */
    double add;          /* then adds this (NetCDF t2m in degC read as K: 273.15); 0 mostly */
    wx_level_kind kind;
    double level;        /* hPa for pressure levels, 0 otherwise */
    int has_time;        /* 0: the source gives no valid time (static, or an unknown axis) */
    wx_time valid;       /* validity time */
    int64_t accum_s;     /* accumulation period ending at `valid` in seconds, 0 = instantaneous */
    int member;          /* ensemble member ("number"), -1 when the source has none */
    int has_init;        /* NetCDF with a lead-time axis (WeatherBench2's prediction_timedelta,
                            cfgrib's step): `init` is the time axis' value, valid = init + lead */
    wx_time init;
    int has_ref;         /* GRIB: `ref` is the message's reference time (dataDate/dataTime); not
                            a lead axis (has_init stays 0: a +6 h message starts forecasts too) */
    wx_time ref;
    int varies;          /* NetCDF: a field the catalogue calls static (z) that changes in time:
                            never to be taken as the constant of a static channel */
    wx_grid grid;        /* the stored (normalised) grid */
    int64_t msg;         /* GRIB: 1-based message number; NetCDF: 1-based field number */
    /* Format-private location of the field. */
    int64_t offset;      /* GRIB: byte offset of the message */
    char other_axis[32]; /* NetCDF: a dimension that is not time/level/member/expver ("month"), or "" */
    int nc_var;          /* NetCDF: variable id */
    int64_t nc_index[5]; /* NetCDF: index along time, level, member, unknown axis, lead (-1 absent) */
} wx_field_info;

typedef struct wx_source wx_source;

/* Opens `path`, recognising GRIB or NetCDF by content, and lists its fields. Grids that are not
 * regular lat/lon, damaged messages and unusable coordinates are errors naming file, message or
 * variable. */
wx_status wx_source_open(const char *path, wx_source **out);
void wx_source_close(wx_source *s);

const char *wx_source_path(const wx_source *s);
wx_source_format wx_source_format_of(const wx_source *s);
int wx_source_count(const wx_source *s);
const wx_field_info *wx_source_info(const wx_source *s, int i);

/* eccodes prints its own "ECCODES ERROR : ..." lines on stderr before wxcast's one error line
 * says what failed; this sends them to the debug log (-v shows them). Called once at start-up. */
void wx_source_quiet_libraries(void);

/* Marks `s` as data to archive or to start a model from (ingest, forecast --init): NetCDF
 * variables whose units cannot be converted to the catalogue's, and temperatures or surface
 * pressures outside what the atmosphere has (Kelvin labelled degC), are then refused when read.
 * Other readers (eval and export of forecasts, which may be a broken model's) get a warning for
 * such units and the values as stored. */
void wx_source_check_inputs(wx_source *s);

/* Decodes field i into values (stored grid order). Missing points (GRIB bitmap, NetCDF
 * _FillValue/missing_value) are an error naming file, message, variable, time and count under
 * WX_MISSING_ERROR, NaN under WX_MISSING_NAN. Safe to call from several threads at once
 * (GRIB fields decode concurrently; NetCDF reads are serialised inside).
 * values: [grid.nlat * grid.nlon] */
wx_status wx_source_read(wx_source *s, int i, wx_missing_policy policy, float *values);

/* "file.grib: message 3 (t 850 hPa 2017-01-01T00:00 member 2)" for messages. buf >= 512. */
void wx_field_describe(const wx_source *s, const wx_field_info *f, char *buf, int len);

/* Shared by the readers: builds the stored grid from a source axis description and the index
 * maps from source row/column to stored row/column.
 * lats: [nlat] source latitudes in source order; lons: [nlon] likewise (degrees, any range).
 * row_map: [nlat], col_map: [nlon] */
wx_status wx_source_grid_from_axes(const double *lats, int nlat, const double *lons, int nlon,
                                   const char *where, wx_grid *grid, int *row_map, int *col_map);

#endif
