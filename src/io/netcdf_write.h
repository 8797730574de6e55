/* CF-1.8 NetCDF output (netCDF-C, netCDF-4 format) in the current CDS layout: the one NetCDF
 * writer of wxcast, for reanalysis-like files (synth) and forecast products alike.
 *
 * Dimensions valid_time (unlimited; int64 "seconds since 1970-01-01", standard_name time),
 * optional pressure_level (hPa, positive down), latitude (degrees_north, north→south as the grid
 * gives it) and longitude (degrees_east). Variables are float32 (valid_time[, pressure_level],
 * latitude, longitude) with units, standard_name (when CF has one) and long_name, chunked per
 * field and deflated. An optional scalar forecast_reference_time plus a forecast_period per
 * valid time (hours) serve forecast products; they are then CF auxiliary coordinates, named in
 * every variable's `coordinates` attribute (CF ch. 5, Example 5.14). The file is written under a temporary name in the
 * same folder, fsynced and renamed on close. */
#ifndef WX_NETCDF_WRITE_H
#define WX_NETCDF_WRITE_H

#include "core/wx_error.h"
#include "meteo/wx_grid.h"
#include "meteo/wx_time.h"

typedef struct {
    const char *name;          /* CDS NetCDF name: "t2m" */
    const char *units;         /* UDUNITS: "K", "m2 s-2" */
    const char *standard_name; /* "" or NULL: none */
    const char *long_name;
    int has_level;             /* 1: (valid_time, pressure_level, lat, lon); k >= 2: on the
                                  extension's extra_axes[k-2] instead (wx_nc_writer_open_ext) */
} wx_nc_var;

/* A further vertical axis, for parameters on another set of levels than the first one (z at
 * 50..1000 hPa, r at 500 and 850): each axis is a dimension and coordinate of its own, so no
 * variable carries levels it does not have (CDO reads several z-axes). */
typedef struct {
    int nlevels;
    const double *levels; /* (nlevels) hPa */
} wx_nc_level_axis;

typedef struct {
    wx_grid grid;
    int nlevels;            /* 0: no pressure_level dimension */
    const double *levels;   /* (nlevels) hPa */
    int nvars;
    const wx_nc_var *vars;  /* (nvars) */
    int has_ref_time;       /* 1: forecast_reference_time scalar and forecast_period(valid_time) */
    wx_time ref_time;
    const char *title;      /* global attributes (NULL: omitted) */
    const char *source;
    int deflate;            /* 0..9; 0 = no compression */
} wx_nc_layout;

/* Optional parts of a layout (forecast products). */
typedef struct {
    const char *level_name; /* NULL: "pressure_level"; extra axes are <level_name>_2, _3, ... */
    int nextra_axes;
    const wx_nc_level_axis *extra_axes; /* (nextra_axes) */
    int members;            /* > 0: a leading dimension and coordinate "realization" (0..members-1,
                               standard_name realization); variables are then (time, realization,
                               latitude, longitude; CDO wants time first) and may not have a level (CDO: <= 4 dims) */
} wx_nc_layout_ext;

typedef struct {
    int ncid;
    char *path, *tmp;
    int reg;        /* 1 + the temporary's slot in core/wx_fs.h's SIGINT/SIGTERM clean-up; 0: none */
    int nvars, nlevels;
    int *varids;
    int *ndims;     /* per variable */
    int members;
    int time_var, period_var;
    int64_t ntimes;
    wx_time ref_time;
    int has_ref_time;
    wx_grid grid;
} wx_nc_writer;

wx_status wx_nc_writer_open(wx_nc_writer *w, const char *path, const wx_nc_layout *layout);
/* As wx_nc_writer_open with another name than "valid_time" for the time dimension and its
 * coordinate ("time": the classic CF layout of `wxcast dump`). */
wx_status wx_nc_writer_open_time(wx_nc_writer *w, const char *path, const wx_nc_layout *layout,
                                 const char *time_name);
/* As wx_nc_writer_open_time with the optional parts (ext may be NULL). */
wx_status wx_nc_writer_open_ext(wx_nc_writer *w, const char *path, const wx_nc_layout *layout,
                                const char *time_name, const wx_nc_layout_ext *ext);
/* Adds a text attribute to variable `var` (CF cell_methods, comment), or with var = -1 a global
 * attribute, after open, before any field is written. */
wx_status wx_nc_writer_var_text(wx_nc_writer *w, int var, const char *name, const char *text);
/* Writes one field of variable `var` at time index t (0, 1, ... in order; a new index appends
 * valid_time = valid). values: [nlat, nlon] in grid order; NaN becomes the _FillValue. */
wx_status wx_nc_writer_put(wx_nc_writer *w, int64_t t, wx_time valid, int var, int level_index,
                           const float *values);
/* As wx_nc_writer_put for ensemble member `member` (0..members-1) of a layout with members > 0;
 * level_index indexes the variable's own level axis. */
wx_status wx_nc_writer_put_member(wx_nc_writer *w, int64_t t, wx_time valid, int var,
                                  int level_index, int member, const float *values);
/* nc_close, fsync, rename. On failure the temporary is removed. Releases the writer. */
wx_status wx_nc_writer_close(wx_nc_writer *w);
void wx_nc_writer_abort(wx_nc_writer *w);

/* 1 after a NetCDF file failed to close: the process must then end with _exit, not exit (HDF5's
 * exit handler crashes on that file; see netcdf_write.c). */
int wx_nc_writer_exit_unclean(void);

#endif
