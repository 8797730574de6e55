/* The ERA5 variable catalogue: one entry per (parameter, level type) the readers and writers know.
 *
 * Facts come from eccodes' own definitions (checked with grib_set -s shortName=... on the GRIB2
 * sample, then grib_get -p paramId,discipline,parameterCategory,parameterNumber,
 * typeOfFirstFixedSurface) and from the CDS NetCDF names. Lookup accepts any of the names a user
 * may write: the eccodes shortName ("2t"), the NetCDF name ("t2m"), the long ERA5/WeatherBench
 * name ("2m_temperature") and a few aliases, case-insensitively. */
#ifndef WX_CATALOGUE_H
#define WX_CATALOGUE_H

#include <stddef.h>

typedef enum {
    WX_LEVEL_PRESSURE = 0, /* isobaric levels, level in hPa */
    WX_LEVEL_SINGLE = 1,   /* one field per time at a fixed surface (2 m, 10 m, msl, surface...) */
    WX_LEVEL_STATIC = 2,   /* time-invariant surface field (land-sea mask, orography) */
} wx_level_kind;

typedef struct {
    const char *short_name;    /* eccodes shortName: "2t" */
    const char *nc_name;       /* CDS NetCDF variable name: "t2m" */
    const char *aliases;       /* comma-separated further names: "2m_temperature,2T" */
    const char *units;         /* eccodes units: "K", "m**2 s**-2" */
    const char *cf_units;      /* UDUNITS form for NetCDF output: "K", "m2 s-2" */
    int param_id;              /* ECMWF paramId */
    wx_level_kind level_kind;
    const char *standard_name; /* CF standard_name ("" when CF has none) */
    const char *long_name;     /* eccodes name */
    int discipline, category, number; /* GRIB2 discipline / parameterCategory / parameterNumber */
    int first_surface;         /* GRIB2 typeOfFirstFixedSurface: 100 isobaric, 103 height, 101 msl, 1 surface */
    int surface_level;         /* level of a single-level field: 2 (m), 10 (m), 0 */
    int accumulated;           /* 1: accumulated over a period (typeOfStatisticalProcessing 1) */
    int nonnegative;           /* 1: physically >= 0 (precipitation, humidity): forecasts clamp it */
} wx_catalogue_entry;

/* Number of entries and the entry at index i (0 <= i < count). */
int wx_catalogue_count(void);
const wx_catalogue_entry *wx_catalogue_at(int i);

/* Finds an entry by any of its names; NULL when unknown. A name shared by several level types
 * ("z": geopotential on pressure levels and at the surface) returns the pressure-level one. */
const wx_catalogue_entry *wx_catalogue_find(const char *name);
/* As wx_catalogue_find, restricted to one level kind; NULL when none matches. */
const wx_catalogue_entry *wx_catalogue_find_kind(const char *name, wx_level_kind kind);
/* Finds by ECMWF paramId and level kind (-1 = any); NULL when unknown. */
const wx_catalogue_entry *wx_catalogue_find_param_id(int param_id, int kind);
/* A parameter the catalogue reads as another one after a unit conversion: geopotential height
 * `gh` (paramId 156, gpm; what ECMWF open data gives on pressure levels) is the channel `z`
 * (geopotential, m2 s-2) times standard gravity 9.80665. Returns the entry of the channel the
 * field stands for and sets *scale (value_as_entry = scale × value_as_stored); NULL when `name`
 * (a shortName or paramId in decimal) at that level kind is not such a parameter. */
const wx_catalogue_entry *wx_catalogue_find_converted(const char *name, wx_level_kind kind,
                                                      double *scale);
/* A model-channel name of a pressure-level parameter with its level ("z500", "t850": what wxcast's
 * channels, dumps and forecasts are called): the parameter's entry and *level in hPa; NULL when
 * `name` is not such a name. */
const wx_catalogue_entry *wx_catalogue_split_level(const char *name, double *level);
/* WeatherBench2 / DeepMind names of accumulations carry their period: "total_precipitation_6hr"
 * is total_precipitation summed over 6 h. Copies `name` without such a "_<N>hr" suffix into base
 * (cap bytes) and returns the period in seconds (N·3600), or copies it whole and returns 0. */
long wx_catalogue_strip_period(const char *name, char *base, size_t cap);
/* 1 when `name` is one of the entry's names (case-insensitive). */
int wx_catalogue_matches(const wx_catalogue_entry *e, const char *name);

const char *wx_level_kind_name(wx_level_kind k); /* "pressure", "single", "static" */

#endif
