#include "io/netcdf_read.h"
#include "io/netcdf_open.h"
#include "core/wx_log.h"

#include <ctype.h>
#include <math.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* AX_OTHER last: it sizes the per-axis arrays */
enum { AX_NONE, AX_LAT, AX_LON, AX_TIME, AX_LEVEL, AX_MEMBER, AX_EXPVER, AX_LEAD, AX_OTHER };

/* Seconds in one unit of a lead-time coordinate ("hours", as xarray encodes timedelta64), 0 when
 * `units` is not a plain duration unit. */
static double duration_unit_s(const char *units) {
    static const struct { const char *name; double s; } u[] = {
        {"days", 86400}, {"day", 86400}, {"hours", 3600}, {"hour", 3600}, {"h", 3600},
        {"minutes", 60}, {"minute", 60}, {"seconds", 1}, {"second", 1}, {"s", 1},
        {"milliseconds", 1e-3}, {"microseconds", 1e-6}, {"nanoseconds", 1e-9}};
    for (size_t k = 0; k < sizeof u / sizeof *u; k++)
        if (!strcmp(units, u[k].name)) return u[k].s;
    return 0;
}

typedef struct {
    int varid, ndims;
    char name[NC_MAX_NAME + 1];
    int axis[NC_MAX_VAR_DIMS]; /* AX_* of each dimension */
    size_t len[NC_MAX_VAR_DIMS];
    int nlat, nlon;
    int *row_map, *col_map;
    double scale, offset, fill, miss;
    int has_fill, has_miss;
    char bad_units[256]; /* units the catalogue parameter cannot be converted from */
    int warned_units;    /* the warning about them, once (sources not wx_source_check_inputs) */
    int spread; /* a standard deviation (ensemble spread): a temperature's units, not its range */
    double unsigned_wrap; /* 2^bits for a signed integer type marked `_Unsigned = "true"`, else 0 */
    int exp_order[8];     /* expver indices, ERA5 final (0001) before ERA5T (0005); -1 ends
                             (exp_order[0] = -1: the file's order) */
    int exp_sorted;       /* exp_order is by experiment number */
    int warned_expver;    /* the warning about a point held by two experiments, once */
} nc_var;

/* The order to merge an expver dimension in: by the experiment's number (0001 ERA5 before 0005
 * ERA5T, whatever the file's order), read as numbers, strings or char rows (xarray's NETCDF3
 * strings); the file's order (order[0] = -1) when the values cannot be read or there are more
 * than 8 experiments. Returns 1 when sorted by number. */
static int expver_order(int ncid, int dimid, size_t n, int *order) {
    order[0] = -1;
    int cv, nd = 0;
    char name[NC_MAX_NAME + 1];
    nc_type t;
    if (n < 1 || n > 8 || nc_inq_dimname(ncid, dimid, name) || nc_inq_varid(ncid, name, &cv) ||
        nc_inq_vartype(ncid, cv, &t) || nc_inq_varndims(ncid, cv, &nd))
        return 0;
    double num[8];
    int ok = 0;
    if (t == NC_STRING && nd == 1) {
        char *str[8] = {0};
        if (nc_get_var_string(ncid, cv, str) == NC_NOERR) {
            for (size_t k = 0; k < n; k++) num[k] = str[k] ? atof(str[k]) : (double)k;
            nc_free_string(n, str);
            ok = 1;
        }
    } else if (t == NC_CHAR && nd == 2) { /* (expver, string4) */
        int dims[2];
        size_t w = 0;
        nc_inq_vardimid(ncid, cv, dims);
        if (!nc_inq_dimlen(ncid, dims[1], &w) && w > 0 && w < 64) {
            char *rows = wx_calloc(n * w + 1, 1);
            if (nc_get_var_text(ncid, cv, rows) == NC_NOERR) {
                for (size_t k = 0; k < n; k++) {
                    char one[65] = "";
                    memcpy(one, rows + k * w, w);
                    num[k] = atof(one);
                }
                ok = 1;
            }
            free(rows);
        }
    } else if (t != NC_CHAR && nd == 1) {
        ok = nc_get_var_double(ncid, cv, num) == NC_NOERR;
    }
    if (!ok) return 0;
    for (size_t k = 0; k < n; k++) order[k] = (int)k;
    if (n < 8) order[n] = -1;
    for (size_t a = 1; a < n; a++) /* insertion sort of at most 8 */
        for (size_t b = a; b > 0 && num[order[b]] < num[order[b - 1]]; b--) {
            int tmp = order[b];
            order[b] = order[b - 1], order[b - 1] = tmp;
        }
    return 1;
}

typedef struct {
    int ncid;
    int nvars;
    nc_var *vars;
    int wxcast_file; /* global attribute institution = "wxcast": names like z500 carry the level */
    int warned_levels; /* the warning about a level axis without units, once per file */
    char empty[NC_MAX_NAME + 1]; /* a grid variable with a zero-length time axis (no fields) */
} nc_impl;

static void get_text_att(int ncid, int varid, const char *att, char *buf, size_t cap) {
    buf[0] = 0;
    size_t len;
    nc_type t;
    if (nc_inq_att(ncid, varid, att, &t, &len) || t != NC_CHAR || len + 1 > cap) return;
    if (nc_get_att_text(ncid, varid, att, buf)) buf[0] = 0;
    else buf[len] = 0;
}

static int get_double_att(int ncid, int varid, const char *att, double *v) {
    size_t len;
    nc_type t;
    if (nc_inq_att(ncid, varid, att, &t, &len) || len < 1 || t == NC_CHAR || t == NC_STRING) return 0;
    double tmp[8];
    if (len > 8 || nc_get_att_double(ncid, varid, att, tmp)) return 0;
    *v = tmp[0];
    return 1;
}

static int in_list(const char *s, const char *const *list) {
    for (; *list; list++)
        if (!strcasecmp(s, *list)) return 1;
    return 0;
}

/* Classifies a dimension by its coordinate variable's CF attributes, not by its name (except the
 * non-CF "number" and "expver" dimensions of CDS files). */
static int classify_dim(int ncid, int dimid) {
    static const char *const lat_u[] = {"degrees_north", "degree_north", "degree_N", "degrees_N",
                                        "degreeN", "degreesN", NULL};
    static const char *const lon_u[] = {"degrees_east", "degree_east", "degree_E", "degrees_E",
                                        "degreeE", "degreesE", NULL};
    static const char *const p_u[] = {"hPa", "Pa", "kPa", "millibar", "millibars", "mbar", "mb", NULL};
    char name[NC_MAX_NAME + 1];
    if (nc_inq_dimname(ncid, dimid, name)) return AX_OTHER;
    if (!strcmp(name, "expver")) return AX_EXPVER;
    int varid;
    if (nc_inq_varid(ncid, name, &varid)) return !strcmp(name, "number") ? AX_MEMBER : AX_OTHER;
    char units[256], sn[256], axis[16];
    get_text_att(ncid, varid, "units", units, sizeof units);
    get_text_att(ncid, varid, "standard_name", sn, sizeof sn);
    get_text_att(ncid, varid, "axis", axis, sizeof axis);
    if (in_list(units, lat_u) || !strcmp(sn, "latitude") || !strcmp(axis, "Y")) return AX_LAT;
    if (in_list(units, lon_u) || !strcmp(sn, "longitude") || !strcmp(axis, "X")) return AX_LON;
    if (!strcmp(sn, "time") || !strcmp(axis, "T") || strstr(units, " since ")) return AX_TIME;
    if (!strcmp(sn, "air_pressure") || in_list(units, p_u)) return AX_LEVEL;
    if (!strcmp(name, "number") || !strcmp(sn, "realization")) return AX_MEMBER;
    /* A lead time after the time axis' initial time: WeatherBench2's forecasts (time = initial
     * time), cfgrib's GRIB forecasts (step); the fields' valid times are time + lead. */
    static const char *const lead_n[] = {"prediction_timedelta", "lead_time", "step", NULL};
    if (in_list(name, lead_n) && duration_unit_s(units) > 0) return AX_LEAD;
    /* No CF identification (xarray files written from bare numpy coordinates, as DeepMind's
     * GraphCast datasets are): the conventional names. A "time" in "hours" (no "since") holds
     * offsets that a `datetime` coordinate dates (see dated_times). */
    static const char *const lat_n[] = {"lat", "latitude", NULL}, *const lon_n[] = {"lon",
        "longitude", NULL}, *const lev_n[] = {"level", "pressure_level", "plev", NULL};
    if (!units[0] && in_list(name, lat_n)) return AX_LAT;
    if (!units[0] && in_list(name, lon_n)) return AX_LON;
    if (!units[0] && in_list(name, lev_n)) return AX_LEVEL;
    if (!strcmp(name, "time") && !strstr(units, " since ")) return AX_TIME;
    return AX_OTHER;
}

static wx_status read_coord(int ncid, int dimid, size_t n, const char *path, double **out) {
    char name[NC_MAX_NAME + 1];
    int varid;
    nc_inq_dimname(ncid, dimid, name);
    double *v = wx_malloc(sizeof(double) * (n ? n : 1));
    if (nc_inq_varid(ncid, name, &varid) || nc_get_var_double(ncid, varid, v)) {
        free(v);
        return wx_error_set(WX_ERR_RUN, "%s: coordinate variable '%s' cannot be read", path, name);
    }
    double sc = 1, off = 0;
    get_double_att(ncid, varid, "scale_factor", &sc);
    get_double_att(ncid, varid, "add_offset", &off);
    for (size_t i = 0; i < n; i++) v[i] = v[i] * sc + off;
    *out = v;
    return WX_OK;
}

/* Valid times of a variable whose time axis holds offsets (xarray's encoding of timedelta64:
 * units "hours", no "since"), as in DeepMind's GraphCast datasets: dated by a coordinate named in
 * the variable's `coordinates` attribute or called `datetime`, on (time) or (batch, time) with CF
 * units "<unit> since <date>". Fills tv[t * nb + b] (nb: length of the variable's other axis,
 * 1 when none; a datetime without it gives every b the same dates). */
static wx_status dated_times(int ncid, int varid, const int *dims, int tpos, int opos,
                             size_t nt, size_t nb, const char *where, const char *tunits,
                             wx_time_cf *cf, double *tv) {
    char cand[NC_MAX_NAME * 4 + 16];
    get_text_att(ncid, varid, "coordinates", cand, sizeof cand - 10);
    strcat(cand, " datetime");
    for (char *save = NULL, *tok = strtok_r(cand, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        int dv, nd, dd[NC_MAX_VAR_DIMS];
        char units[256], cal[64];
        if (nc_inq_varid(ncid, tok, &dv) || nc_inq_varndims(ncid, dv, &nd) || nd < 1 || nd > 2)
            continue;
        nc_inq_vardimid(ncid, dv, dd);
        get_text_att(ncid, dv, "units", units, sizeof units);
        get_text_att(ncid, dv, "calendar", cal, sizeof cal);
        int tfirst = dd[0] == dims[tpos];
        size_t blen = 0; /* a (batch, time) datetime of one element dates a (time, ...) variable */
        if (nd == 2) nc_inq_dimlen(ncid, tfirst ? dd[1] : dd[0], &blen);
        int ob = nd == 2 && opos >= 0 && (tfirst ? dd[1] : dd[0]) == dims[opos];
        if (!strstr(units, " since ") || (nd == 1 && !tfirst) ||
            (nd == 2 && (!(tfirst || dd[1] == dims[tpos]) || !(ob || blen == 1))))
            continue;
        WX_TRY(wx_time_cf_parse(units, cal, where, cf));
        double *raw = wx_malloc(sizeof(double) * nt * nb);
        if (nc_get_var_double(ncid, dv, raw)) {
            free(raw);
            return wx_error_set(WX_ERR_RUN, "%s: coordinate '%s' cannot be read", where, tok);
        }
        for (size_t t = 0; t < nt; t++)
            for (size_t b = 0; b < nb; b++)
                tv[t * nb + b] = nd == 1 || !ob ? raw[t] : tfirst ? raw[t * nb + b] : raw[b * nt + t];
        free(raw);
        return WX_OK;
    }
    return wx_error_set(WX_ERR_RUN, "%s: its time axis holds offsets (units '%s') and no "
                        "coordinate dates them (expected `datetime` on (time) or (batch, time) "
                        "with units '<unit> since <date>', as in DeepMind's GraphCast datasets)",
                        where, tunits);
}

/* Scalar coordinates: 0-d variables named in a variable's `coordinates` attribute, as xarray
 * writes what `ds.sel(level=500)`, `ds.sel(number=3)` or `ds.isel(time=0)` selected. */
typedef enum { SC_LEVEL, SC_MEMBER, SC_VALID_TIME, SC_INIT_TIME, SC_LEAD } scalar_kind;

static int scalar_is(int ncid, int cv, const char *name, scalar_kind k) {
    char units[256] = "", sn[64] = "";
    get_text_att(ncid, cv, "units", units, sizeof units);
    get_text_att(ncid, cv, "standard_name", sn, sizeof sn);
    switch (k) {
    case SC_LEVEL:
        return !strcmp(units, "Pa") || !strcmp(units, "hPa") || !strcmp(units, "millibars") ||
               !strcmp(units, "mbar") || !strcmp(name, "level") || !strcmp(name, "pressure_level") ||
               !strcmp(name, "isobaricInhPa") || !strcmp(name, "plev");
    case SC_MEMBER: return !strcmp(name, "number") || !strcmp(name, "realization") || !strcmp(sn, "realization");
    case SC_VALID_TIME: /* cfgrib's valid_time, or a plain time that is no reference time */
        return strstr(units, " since ") && (!strcmp(name, "valid_time") ||
               ((!strcmp(name, "time") || !strcmp(sn, "time")) && strcmp(sn, "forecast_reference_time")));
    case SC_INIT_TIME:
        return strstr(units, " since ") && (!strcmp(sn, "forecast_reference_time") || !strcmp(name, "time"));
    case SC_LEAD: /* WeatherBench2's ds.sel(prediction_timedelta=...), cfgrib's ds.sel(step=...) */
        return (!strcmp(name, "prediction_timedelta") || !strcmp(name, "lead_time") ||
                !strcmp(name, "step") || !strcmp(sn, "forecast_period")) && duration_unit_s(units) > 0;
    }
    return 0;
}

/* The first scalar coordinate of kind k of variable varid: its id, or -1. */
static int scalar_coord(int ncid, int varid, scalar_kind k) {
    char coords[1024] = "";
    get_text_att(ncid, varid, "coordinates", coords, sizeof coords);
    for (char *save = NULL, *t = strtok_r(coords, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        int cv, nd = -1;
        if (nc_inq_varid(ncid, t, &cv) || nc_inq_varndims(ncid, cv, &nd) || nd != 0) continue;
        if (scalar_is(ncid, cv, t, k)) return cv;
    }
    return -1;
}

/* The pressure level (hPa) of a scalar level coordinate (`ds.sel(level=500)`); 0 when none. */
static double scalar_level(int ncid, int varid) {
    int cv = scalar_coord(ncid, varid, SC_LEVEL);
    char units[64] = "";
    double v = 0;
    if (cv < 0 || nc_get_var_double(ncid, cv, &v) != NC_NOERR || !(v > 0)) return 0;
    get_text_att(ncid, cv, "units", units, sizeof units);
    return !strcmp(units, "Pa") ? v / 100.0 : v;
}

/* Whether a field without a level axis that the catalogue calls static (z: the surface
 * geopotential) really is: its first and last time slices equal (ERA5's single-level files repeat
 * the orography at every time). A geopotential at some level whose level the file does not say
 * varies, and must not be read as one constant field. */
static int varies_in_time(int ncid, int varid, int ndims, const size_t *len, const int *axis, size_t nt) {
    size_t start[NC_MAX_VAR_DIMS] = {0}, count[NC_MAX_VAR_DIMS];
    size_t n = 1;
    for (int d = 0; d < ndims; d++) {
        count[d] = axis[d] == AX_LAT || axis[d] == AX_LON ? len[d] : 1;
        n *= count[d];
    }
    float *a = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n);
    int differ = 0;
    if (a && b && nc_get_vara_float(ncid, varid, start, count, a) == NC_NOERR) {
        for (int d = 0; d < ndims; d++)
            if (axis[d] == AX_TIME) start[d] = nt - 1;
        if (nc_get_vara_float(ncid, varid, start, count, b) == NC_NOERR)
            for (size_t k = 0; k < n && !differ; k++)
                differ = a[k] != b[k] && !(isnan(a[k]) && isnan(b[k]));
    }
    free(a), free(b);
    return differ;
}

/* A units string reduced for comparison: lower case without blanks, '*' and '^'; spelled-out
 * words to symbols and a quotient to negative exponents, so that "m**2 s**-2", "m2/s2" and
 * "m2 s-2" give "m2s-2", and "kg/m^2", "meters/second", "metres per second" give "kgm-2",
 * "ms-1". */
static void units_key(const char *u, char *out, size_t cap) {
    static const char *const words[][2] = {
        {"metre", "m"}, {"metres", "m"}, {"meter", "m"}, {"meters", "m"}, {"second", "s"},
        {"seconds", "s"}, {"sec", "s"}, {"kilogram", "kg"}, {"kilograms", "kg"}, {NULL, NULL}};
    size_t n = 0;
    int divide = 0; /* the next unit is a denominator: its exponent is negated */
    for (const char *p = u; *p && n + 8 < cap;) {
        if (*p == ' ' || *p == '*' || *p == '^') { p++; continue; }
        if (*p == '/') { divide = 1, p++; continue; }
        if (!isalpha((unsigned char)*p)) { out[n++] = (char)tolower((unsigned char)*p++); continue; }
        char w[64];
        size_t k = 0;
        while ((isalpha((unsigned char)*p) || *p == '_') && k + 1 < sizeof w)
            w[k++] = (char)tolower((unsigned char)*p++);
        w[k] = 0;
        if (!strcmp(w, "per")) { divide = 1; continue; }
        const char *sym = w;
        for (int i = 0; words[i][0]; i++)
            if (!strcmp(w, words[i][0])) sym = words[i][1];
        n += (size_t)snprintf(out + n, cap - n, "%s", sym);
        if (n >= cap) n = cap - 1;
        if (divide) {
            while (*p == ' ' || *p == '*' || *p == '^') p++;
            char e[16];
            size_t d = 0;
            while (isdigit((unsigned char)*p) && d + 1 < sizeof e) e[d++] = *p++;
            e[d] = 0;
            n += (size_t)snprintf(out + n, cap - n, "-%s", d ? e : "1");
            if (n >= cap) n = cap - 1;
            divide = 0;
        }
    }
    out[n] = 0;
}

/* How a catalogue parameter is read from a variable whose `units` attribute is `units`: *scale and
 * *add convert the stored values to the catalogue's units (values · scale + add); returns 0 when
 * the units are the catalogue's (or absent, or another spelling of them), 1 for a known
 * conversion, -1 for units it does not know (refused for inputs, warned about otherwise). Known: temperatures in degrees Celsius, geopotential as height in metres, pressures in
 * hPa, precipitation in mm (kg m-2). */
static int units_conversion(const wx_catalogue_entry *e, const char *units, double *scale, double *add) {
    static const char *const celsius[] = {"degc", "deg_c", "degreec", "degree_c", "degrees_c",
                                          "celsius", "degree_celsius", "degrees_celsius", "°c", "c",
                                          NULL};
    static const char *const kelvin[] = {"k", "kelvin", "degk", "deg_k", "degreesk", NULL};
    static const char *const fraction[] = {"(0-1)", "1", "~", "fraction", "0-1", NULL};
    char u[256], a[256], b[256];
    *scale = 0, *add = 0;
    units_key(units, u, sizeof u);
    units_key(e->units, a, sizeof a);
    units_key(e->cf_units, b, sizeof b);
    if (!u[0] || !strcmp(u, a) || !strcmp(u, b)) return 0;
    if (!strcmp(a, "k")) {
        if (in_list(u, kelvin)) return 0;
        if (in_list(u, celsius)) return *add = 273.15, 1;
    }
    if (!strcmp(a, "(0-1)") && in_list(u, fraction)) return 0;
    if (!strcmp(a, "m2s-2") && !strcmp(u, "m2.s-2")) return 0;
    if (!strcmp(a, "m2s-2") && (!strcmp(u, "m") || !strcmp(u, "gpm")))
        return *scale = 9.80665, 1; /* geopotential height: 1 gpm = g0 m2 s-2 */
    if (!strcmp(a, "pa") && (!strcmp(u, "hpa") || !strcmp(u, "mbar") || !strcmp(u, "millibars") ||
                             !strcmp(u, "mb")))
        return *scale = 100, 1;
    if (!strcmp(a, "m") && e->accumulated && (!strcmp(u, "mm") || !strcmp(u, "kgm-2")))
        return *scale = 1e-3, 1; /* 1 kg m-2 of water = 1 mm */
    if (!strcmp(a, "kgm-2") && !strcmp(u, "mm")) return 0;
    if (!strcmp(a, "m2s-2") && !strcmp(u, "jkg-1")) return 0;
    if (!strcmp(a, "%") && !strcmp(u, "percent")) return 0;
    if (!strcmp(a, "kgkg-1") && !strcmp(u, "1")) return 0;
    return -1;
}

static wx_status scan_var(wx_source *s, nc_impl *im, int varid, int *dimax) {
    int ncid = im->ncid, ndims, dims[NC_MAX_VAR_DIMS];
    char name[NC_MAX_NAME + 1];
    nc_inq_varname(ncid, varid, name);
    nc_inq_varndims(ncid, varid, &ndims);
    nc_inq_vardimid(ncid, varid, dims);
    if (ndims < 2 || ndims > 6) return WX_OK;
    int pos[AX_OTHER + 1];
    for (int k = 0; k <= AX_OTHER; k++) pos[k] = -1;
    int nother = 0;
    for (int d = 0; d < ndims; d++) {
        int a = dimax[dims[d]];
        if (a == AX_OTHER) nother++;
        if (pos[a] >= 0 && a != AX_OTHER) return WX_OK;
        pos[a] = d;
    }
    if (pos[AX_LAT] < 0 || pos[AX_LON] < 0) return WX_OK; /* not a field (bounds, coordinates) */
    if (pos[AX_LAT] != ndims - 2 || pos[AX_LON] != ndims - 1)
        return wx_error_set(WX_ERR_RUN, "%s: variable '%s': latitude and longitude must be the last "
                            "two dimensions (in that order)", s->path, name);
    if (nother > 1)
        return wx_error_set(WX_ERR_RUN, "%s: variable '%s' has %d dimensions that are neither time, "
                            "level, latitude, longitude, member nor expver", s->path, name, nother);
    nc_var *v = &im->vars[im->nvars++];
    memset(v, 0, sizeof *v);
    v->varid = varid;
    v->ndims = ndims;
    snprintf(v->name, sizeof v->name, "%s", name);
    for (int d = 0; d < ndims; d++) {
        v->axis[d] = dimax[dims[d]];
        nc_inq_dimlen(ncid, dims[d], &v->len[d]);
    }
    v->nlat = (int)v->len[ndims - 2];
    v->nlon = (int)v->len[ndims - 1];
    v->scale = 1;
    get_double_att(ncid, varid, "scale_factor", &v->scale);
    get_double_att(ncid, varid, "add_offset", &v->offset);
    v->has_fill = get_double_att(ncid, varid, "_FillValue", &v->fill);
    v->has_miss = get_double_att(ncid, varid, "missing_value", &v->miss);
    /* NetCDF-3 has no unsigned integers: unsigned packed data are stored in the signed type with
     * `_Unsigned = "true"` (the NUG convention that xarray and netCDF-Java honour). Raw values
     * below zero are then the upper half of the unsigned range. */
    nc_type vtype;
    for (int d = 0; d < ndims; d++)
        if (v->axis[d] == AX_EXPVER) v->exp_sorted = expver_order(ncid, dims[d], v->len[d], v->exp_order);
    char uns[8];
    get_text_att(ncid, varid, "_Unsigned", uns, sizeof uns);
    if (!nc_inq_vartype(ncid, varid, &vtype) && !strcasecmp(uns, "true"))
        v->unsigned_wrap = vtype == NC_BYTE ? 256.0 : vtype == NC_SHORT ? 65536.0
                         : vtype == NC_INT ? 4294967296.0 : 0;
    char cm[256], stat[64];
    get_text_att(ncid, varid, "cell_methods", cm, sizeof cm);
    get_text_att(ncid, NC_GLOBAL, "ensemble_statistic", stat, sizeof stat);
    v->spread = strstr(cm, "standard_deviation") || strstr(cm, "variance") ||
                !strcmp(stat, "standard_deviation");
    char where[700];
    snprintf(where, sizeof where, "%s: variable '%s'", s->path, name);
    double *lats = NULL, *lons = NULL, *times = NULL, *levels = NULL, *members = NULL;
    wx_grid grid;
    v->row_map = wx_malloc(sizeof(int) * (size_t)v->nlat);
    v->col_map = wx_malloc(sizeof(int) * (size_t)v->nlon);
    wx_status st = WX_OK;
    /* 0 is legitimate: packing code gives it to a constant field (a dry hour's tp), every value
     * add_offset; a channel archived constant is warned about with the statistics */
    if (!isfinite(v->scale) || !isfinite(v->offset))
        st = wx_error_set(WX_ERR_RUN, "%s: scale_factor %g, add_offset %g: expected finite "
                          "numbers", where, v->scale, v->offset);
    if (st == WX_OK) st = read_coord(ncid, dims[ndims - 2], (size_t)v->nlat, s->path, &lats);
    if (st == WX_OK) st = read_coord(ncid, dims[ndims - 1], (size_t)v->nlon, s->path, &lons);
    if (st == WX_OK)
        st = wx_source_grid_from_axes(lats, v->nlat, lons, v->nlon, where, &grid, v->row_map,
                                      v->col_map);
    wx_time_cf cf = {0};
    size_t nt = 1, nl = 1, nm = 1, no = 1, nd = 1;
    if (pos[AX_OTHER] >= 0) no = v->len[pos[AX_OTHER]];
    int64_t *lead_s = NULL; /* [nd] seconds after the time axis' (initial) time */
    if (st == WX_OK && pos[AX_LEAD] >= 0) {
        nd = v->len[pos[AX_LEAD]];
        char dname[NC_MAX_NAME + 1], units[64] = "";
        int dv;
        nc_inq_dimname(ncid, dims[pos[AX_LEAD]], dname);
        nc_inq_varid(ncid, dname, &dv);
        get_text_att(ncid, dv, "units", units, sizeof units);
        double *lv = NULL, us = duration_unit_s(units);
        st = read_coord(ncid, dims[pos[AX_LEAD]], nd, s->path, &lv);
        lead_s = wx_malloc(sizeof(int64_t) * (nd ? nd : 1));
        for (size_t k = 0; st == WX_OK && k < nd; k++) lead_s[k] = (int64_t)llround(lv[k] * us);
        free(lv);
        if (st == WX_OK && pos[AX_TIME] < 0 && scalar_coord(ncid, varid, SC_INIT_TIME) < 0)
            st = wx_error_set(WX_ERR_RUN, "%s: lead-time axis '%s' without a time axis or a scalar "
                              "initial time (`time` in its coordinates): the leads count from no "
                              "initial time", where, dname);
    }
    /* one lead selected (ds.sel(prediction_timedelta="24h")): the times are initial times and the
     * fields valid that much later. A lead of 0 is an analysis (cfgrib writes step = 0 on every
     * analysis field): no lead. */
    int sc_lead = pos[AX_LEAD] < 0 ? scalar_coord(ncid, varid, SC_LEAD) : -1;
    if (sc_lead >= 0 && pos[AX_TIME] >= 0) { /* a time axis of valid times already has the lead */
        char tname[NC_MAX_NAME + 1] = "", tsn[64] = "";
        int tv;
        nc_inq_dimname(ncid, dims[pos[AX_TIME]], tname);
        if (!nc_inq_varid(ncid, tname, &tv)) get_text_att(ncid, tv, "standard_name", tsn, sizeof tsn);
        if (!strcmp(tname, "valid_time") || !strcmp(tsn, "time")) sc_lead = -1;
    }
    if (st == WX_OK && sc_lead >= 0) {
        char units[64] = "";
        double lv = 0;
        get_text_att(ncid, sc_lead, "units", units, sizeof units);
        if (nc_get_var_double(ncid, sc_lead, &lv) == NC_NOERR && llround(lv * duration_unit_s(units)) != 0) {
            lead_s = wx_malloc(sizeof(int64_t));
            lead_s[0] = (int64_t)llround(lv * duration_unit_s(units));
            nd = 1;
        }
    }
    /* no time axis, a scalar time coordinate (xarray's ds.isel(time=0), cfgrib's time of a
     * forecast on `step`): one time, the initial time when there are leads. Not for a field on
     * another axis (months: it would put them all at one time) nor a climatology's time (CF
     * "within years" / "over years" cell methods, or a `climatology` attribute). */
    char cm_time[256] = "";
    get_text_att(ncid, varid, "cell_methods", cm_time, sizeof cm_time);
    int clim_cm = strstr(cm_time, "within years") || strstr(cm_time, "over years");
    int sc_time = pos[AX_TIME] >= 0 || pos[AX_OTHER] >= 0 || clim_cm ? -1
                : scalar_coord(ncid, varid, lead_s ? SC_INIT_TIME : SC_VALID_TIME);
    if (sc_time >= 0) {
        char clim[8] = "";
        get_text_att(ncid, sc_time, "climatology", clim, sizeof clim);
        if (clim[0]) sc_time = -1;
    }
    if (st == WX_OK && sc_time >= 0) {
        char units[256] = "", cal[64] = "", tname[NC_MAX_NAME + 1] = "";
        nc_inq_varname(ncid, sc_time, tname);
        get_text_att(ncid, sc_time, "units", units, sizeof units);
        get_text_att(ncid, sc_time, "calendar", cal, sizeof cal);
        times = wx_malloc(sizeof(double) * no);
        st = wx_time_cf_parse(units, cal, tname, &cf);
        if (st != WX_OK) st = wx_error_wrap(WX_ERR_RUN, "%s: ", s->path);
        double tv = 0;
        if (st == WX_OK && nc_get_var_double(ncid, sc_time, &tv) != NC_NOERR)
            st = wx_error_set(WX_ERR_RUN, "%s: cannot read the scalar time '%s'", where, tname);
        for (size_t k = 0; k < no; k++) times[k] = tv;
    }
    if (st == WX_OK && pos[AX_TIME] >= 0) { /* times[t * no + o]: CF values of the valid times */
        int tv;
        char tname[NC_MAX_NAME + 1], units[256] = "", cal[64] = "";
        nc_inq_dimname(ncid, dims[pos[AX_TIME]], tname);
        if (!nc_inq_varid(ncid, tname, &tv)) {
            get_text_att(ncid, tv, "units", units, sizeof units);
            get_text_att(ncid, tv, "calendar", cal, sizeof cal);
        }
        nt = v->len[pos[AX_TIME]];
        if (nt == 0 && !im->empty[0]) snprintf(im->empty, sizeof im->empty, "%s", name);
        times = wx_malloc(sizeof(double) * (nt ? nt : 1) * no);
        if (!strstr(units, " since ")) {
            st = dated_times(ncid, varid, dims, pos[AX_TIME], pos[AX_OTHER], nt, no, where, units,
                             &cf, times);
        } else {
            double *tc = NULL;
            st = wx_time_cf_parse(units, cal, tname, &cf);
            if (st != WX_OK) st = wx_error_wrap(WX_ERR_RUN, "%s: ", s->path);
            if (st == WX_OK) st = read_coord(ncid, dims[pos[AX_TIME]], nt, s->path, &tc);
            for (size_t k = 0; st == WX_OK && k < nt * no; k++) times[k] = tc[k / no];
            free(tc);
        }
    }
    if (st == WX_OK && pos[AX_LEVEL] >= 0) {
        nl = v->len[pos[AX_LEVEL]];
        int lv;
        char lname[NC_MAX_NAME + 1], units[64] = "";
        nc_inq_dimname(ncid, dims[pos[AX_LEVEL]], lname);
        nc_inq_varid(ncid, lname, &lv);
        get_text_att(ncid, lv, "units", units, sizeof units);
        st = read_coord(ncid, dims[pos[AX_LEVEL]], nl, s->path, &levels);
        /* levels in hPa: Pa and kPa converted; a bare level axis above 1100 can only be Pa */
        /* divided (Pa / 100 is exact for every whole hPa; * 0.01 is not) */
        double per_hpa = !strcmp(units, "Pa") ? 100 : !strcmp(units, "kPa") ? 0.1 : 1;
        double top = 0;
        for (size_t k = 0; st == WX_OK && k < nl; k++) top = fmax(top, levels[k]);
        if (st == WX_OK && !units[0] && top > 1100) {
            per_hpa = 100;
            if (!im->warned_levels) {
                im->warned_levels = 1;
                wx_log_warn("%s: level axis '%s' has no units and goes up to %g: read as Pa", s->path,
                            lname, top);
            }
        }
        for (size_t k = 0; st == WX_OK && per_hpa != 1 && k < nl; k++) levels[k] /= per_hpa;
    }
    /* a scalar member (xarray's ds.sel(number=3)): that member, not an unnumbered field. 0 stays
     * unnumbered: cfgrib writes number = 0 on deterministic fields too, and member 0 is the
     * control run, a deterministic forecast (eval would score a 1-member ensemble otherwise). */
    int sc_member = pos[AX_MEMBER] < 0 ? scalar_coord(ncid, varid, SC_MEMBER) : -1;
    double sc_member_value = -1;
    if (sc_member >= 0 && nc_get_var_double(ncid, sc_member, &sc_member_value) != NC_NOERR)
        sc_member_value = -1;
    if (st == WX_OK && pos[AX_MEMBER] >= 0) {
        nm = v->len[pos[AX_MEMBER]];
        char mname[NC_MAX_NAME + 1];
        int mv;
        nc_inq_dimname(ncid, dims[pos[AX_MEMBER]], mname);
        members = wx_malloc(sizeof(double) * nm);
        if (nc_inq_varid(ncid, mname, &mv) || nc_get_var_double(ncid, mv, members))
            for (size_t m = 0; m < nm; m++) members[m] = (double)m;
    }
    char oname[NC_MAX_NAME + 1] = "";
    const wx_catalogue_entry *e =
        wx_catalogue_find_kind(name, pos[AX_LEVEL] >= 0 ? WX_LEVEL_PRESSURE : WX_LEVEL_SINGLE);
    /* "total_precipitation_6hr" (WeatherBench2, DeepMind): tp summed over 6 h, not the CDS
     * files' hourly sums */
    char base[NC_MAX_NAME + 1];
    long period = wx_catalogue_strip_period(name, base, sizeof base);
    if (!e && period) {
        e = wx_catalogue_find_kind(base, WX_LEVEL_SINGLE);
        if (!e || !e->accumulated) e = NULL, period = 0;
    }
    double sc_level = pos[AX_LEVEL] < 0 ? scalar_level(ncid, varid) : 0;
    if (sc_level > 0) { /* ds.sel(level=500): the level survives as a scalar coordinate */
        const wx_catalogue_entry *pe = wx_catalogue_find_kind(name, WX_LEVEL_PRESSURE);
        if (pe) e = pe;
        else sc_level = 0;
    }
    if (!e && pos[AX_LEVEL] < 0) e = wx_catalogue_find_kind(name, WX_LEVEL_STATIC);
    int not_static = e && e->level_kind == WX_LEVEL_STATIC && nt > 1 &&
                     varies_in_time(ncid, varid, ndims, v->len, v->axis, nt);
    if (not_static) e = NULL; /* kept as an unknown single-level field: never a silent constant */
    double conv = 0; /* a parameter read as a catalogue one after a unit change (gh -> z) */
    if (!e && pos[AX_LEVEL] >= 0) e = wx_catalogue_find_converted(name, WX_LEVEL_PRESSURE, &conv);
    /* wxcast's own files (dump, ensembles) name a pressure-level channel "z500" with no level
     * axis: parameter z at 500 hPa, as model channels are named. Only there: in other files such
     * names mean other things (ERA5's u100 is the wind at 100 m, cfgrib's r2 humidity at 2 m). */
    int64_t own_step = 0; /* wxcast's files: the period their long_name states, else the step */
    if (im->wxcast_file && e && e->accumulated) {
        char ln[256] = "", per[32] = "";
        get_text_att(ncid, varid, "long_name", ln, sizeof ln);
        const char *at = strstr(ln, "accumulated over the ");
        if (at && sscanf(at, "accumulated over the %31s", per) == 1)
            wx_time_parse_duration(per, "long_name", &own_step);
    }
    if (!own_step && im->wxcast_file && times && nt >= 2)
        own_step = wx_time_cf_value(&cf, times[no]) - wx_time_cf_value(&cf, times[0]);
    double name_level = sc_level;
    if (!e && pos[AX_LEVEL] < 0 && im->wxcast_file) e = wx_catalogue_split_level(name, &name_level);
    /* The variable's own units: a known other unit is converted on read (a t2m in degC would
     * otherwise be scored 273.15 K off); units that cannot be converted are refused. */
    double u_scale = 0, u_add = 0;
    if (st == WX_OK && e) {
        char units[256] = "";
        get_text_att(ncid, varid, "units", units, sizeof units);
        int how = units_conversion(e, units, &u_scale, &u_add);
        if (how < 0) /* listed (inspect shows the file); a read refuses or warns (check_inputs) */
            snprintf(v->bad_units, sizeof v->bad_units, "%s", units);
        else if (how > 0)
            wx_log_info("%s: units '%s' converted to %s's '%s'", where, units, e->short_name, e->units);
        if (conv != 0 && u_scale != 0) u_scale *= conv; /* gh in another unit: both factors */
    }
    for (size_t t = 0; st == WX_OK && t < nt; t++)
        for (size_t d = 0; d < nd; d++)
        for (size_t l = 0; l < nl; l++)
            for (size_t m = 0; m < nm; m++)
                for (size_t o = 0; o < no; o++) {
                    wx_field_info *f = wx_source_add(s);
                    f->msg = s->count;
                    snprintf(f->name, sizeof f->name, "%.63s", name);
                    f->entry = e;
                    f->scale = u_scale != 0 ? u_scale : conv;
                    f->add = u_add;
                    snprintf(f->param, sizeof f->param, "%.63s", e ? e->short_name : name);
                    f->kind = pos[AX_LEVEL] >= 0 || name_level > 0 ? WX_LEVEL_PRESSURE
                              : e ? e->level_kind : WX_LEVEL_SINGLE;
                    if (levels) f->level = levels[l];
                    else if (name_level > 0) f->level = name_level;
                    if (times) {
                        f->has_time = 1;
                        f->valid = wx_time_cf_value(&cf, times[t * no + o]);
                        if (lead_s) {
                            f->has_init = 1;
                            f->init = f->valid;
                            f->valid += lead_s[d];
                        }
                        /* CDS NetCDF accumulations are hourly sums ending at the valid time;
                         * wxcast's own files (synth, dump, forecasts) sum over their time step */
                        if (e && e->accumulated) f->accum_s = period ? period : own_step > 0 ? own_step : 3600;
                    }
                    f->member = members ? (int)members[m] : sc_member_value > 0 ? (int)sc_member_value : -1;
                    f->varies = not_static;
                    f->grid = grid;
                    f->nc_var = im->nvars - 1;
                    f->nc_index[0] = pos[AX_TIME] >= 0 ? (int64_t)t : -1;
                    f->nc_index[1] = levels ? (int64_t)l : -1;
                    f->nc_index[2] = members ? (int64_t)m : -1;
                    f->nc_index[3] = pos[AX_OTHER] >= 0 ? (int64_t)o : -1;
                    f->nc_index[4] = lead_s ? (int64_t)d : -1;
                    if (pos[AX_OTHER] >= 0) nc_inq_dimname(ncid, dims[pos[AX_OTHER]], oname);
                    snprintf(f->other_axis, sizeof f->other_axis, "%.31s", oname);
                }
    free(lats);
    free(lons);
    free(times);
    free(levels);
    free(members);
    free(lead_s);
    return st;
}

wx_status wx_netcdf_scan(wx_source *s) {
    nc_impl *im = wx_calloc(1, sizeof *im);
    s->impl = im;
    im->ncid = -1;
    WX_TRY(wx_nc_open_read(s->path, &im->ncid, NULL));
    int ndims, nvars;
    nc_inq_ndims(im->ncid, &ndims);
    nc_inq_nvars(im->ncid, &nvars);
    char inst[64];
    get_text_att(im->ncid, NC_GLOBAL, "institution", inst, sizeof inst);
    im->wxcast_file = !strcmp(inst, "wxcast"); /* io/netcdf_write.c writes it */
    int *dimax = wx_malloc(sizeof(int) * (size_t)(ndims + 1));
    for (int d = 0; d < ndims; d++) dimax[d] = classify_dim(im->ncid, d);
    im->vars = wx_calloc((size_t)nvars + 1, sizeof(nc_var));
    wx_status st = WX_OK;
    for (int v = 0; v < nvars && st == WX_OK; v++) st = scan_var(s, im, v, dimax);
    free(dimax);
    if (st == WX_OK && s->count == 0 && im->empty[0])
        st = wx_error_set(WX_ERR_RUN, "%s: variable %s has an empty time axis (0 times): the file "
                          "holds no fields", s->path, im->empty);
    else if (st == WX_OK && s->count == 0)
        st = wx_error_set(WX_ERR_RUN, "%s: no variable on (latitude, longitude) found (coordinates "
                          "are recognised by CF units degrees_north/degrees_east, standard_name "
                          "or axis)", s->path);
    return st;
}

/* A NetCDF variable's units attribute is written by hand often enough to be wrong (Kelvin data
 * labelled degC read as 546 K; hPa labelled Pa): temperatures and surface pressures outside what
 * the atmosphere has are refused instead of archived. Not for standard deviations (ensemble
 * spread files), which carry a temperature's units. values: [n] as stored, before the field's
 * scale and add (GRIB units are fixed by the parameter: no such check there). */
static wx_status check_plausible(const wx_source *s, const wx_field_info *f, const float *values,
                                 size_t n) {
    double lo, hi;
    if (!f->entry) return WX_OK;
    if (!strcmp(f->entry->units, "K")) lo = 150, hi = 360;
    else if (!strcmp(f->entry->units, "Pa")) lo = 30000, hi = 120000; /* msl, sp (Everest 33 kPa) */
    else return WX_OK;
    double mn = INFINITY, mx = -INFINITY, a = f->scale != 0 ? f->scale : 1;
    for (size_t k = 0; k < n; k++)
        if (isfinite(values[k])) mn = fmin(mn, a * values[k] + f->add), mx = fmax(mx, a * values[k] + f->add);
    if (mn > mx || (mn >= lo && mx <= hi)) return WX_OK;
    char where[700];
    wx_field_describe(s, f, where, sizeof where);
    return wx_error_set(WX_ERR_RUN, "%s: values %.6g..%.6g %s are not plausible for %s (expected "
                        "within %g..%g %s): is the variable's units attribute right?", where, mn,
                        mx, f->entry->units, f->entry->short_name, lo, hi, f->entry->units);
}

wx_status wx_netcdf_read(wx_source *s, int i, wx_missing_policy policy, float *values) {
    nc_impl *im = s->impl;
    const wx_field_info *f = &s->fields[i];
    nc_var *v = &im->vars[f->nc_var];
    size_t start[NC_MAX_VAR_DIMS], count[NC_MAX_VAR_DIMS];
    int epos = -1;
    for (int d = 0; d < v->ndims; d++) {
        start[d] = 0;
        count[d] = 1;
        switch (v->axis[d]) {
        case AX_TIME: start[d] = (size_t)f->nc_index[0]; break;
        case AX_LEVEL: start[d] = (size_t)f->nc_index[1]; break;
        case AX_MEMBER: start[d] = (size_t)f->nc_index[2]; break;
        case AX_OTHER: start[d] = (size_t)f->nc_index[3]; break;
        case AX_LEAD: start[d] = (size_t)f->nc_index[4]; break;
        case AX_EXPVER: epos = d; break;
        case AX_LAT: case AX_LON: count[d] = v->len[d]; break;
        }
    }
    if (v->bad_units[0] && (s->inputs_checked || !v->warned_units)) {
        char where[700];
        wx_field_describe(s, f, where, sizeof where);
        const char *why = "are not %s's '%s' nor ones wxcast converts (degC for K, m for geopotential, "
                          "hPa for Pa, mm for m of precipitation)";
        char msg[512];
        snprintf(msg, sizeof msg, why, f->entry->short_name, f->entry->units);
        if (s->inputs_checked)
            return wx_error_set(WX_ERR_RUN, "%s: units '%s' %s; convert the file or correct its "
                                "units attribute", where, v->bad_units, msg);
        wx_log_warn("%s: units '%s' %s: read as they are", where, v->bad_units, msg);
        v->warned_units = 1;
    }
    size_t n = (size_t)v->nlat * (size_t)v->nlon;
    double *buf = wx_malloc(sizeof(double) * n);
    float *acc = wx_malloc(sizeof(float) * n);
    for (size_t k = 0; k < n; k++) acc[k] = NAN;
    size_t nexp = epos >= 0 ? v->len[epos] : 1;
    char where[700];
    wx_field_describe(s, f, where, sizeof where);
    wx_status st = WX_OK;
    /* CDS files with an expver dimension hold each time in one experiment only (ERA5 or ERA5T):
     * merge by taking, per point, the first experiment with a value, ERA5 final first. */
    size_t clash = 0;
    for (size_t x = 0; x < nexp && st == WX_OK; x++) {
        if (epos >= 0) start[epos] = v->exp_sorted ? (size_t)v->exp_order[x] : x;
        wx_nc_quiet_hdf5();
        int e = nc_get_vara_double(im->ncid, v->varid, start, count, buf);
        if (e) {
            st = wx_error_set(WX_ERR_RUN, "%s: read failed: %s%s", where, nc_strerror(e),
                              e == NC_EHDFERR ? " (the data is damaged: a compressed chunk that "
                              "does not decode, or a failed Fletcher32 checksum)" : "");
            break;
        }
        for (size_t k = 0; k < n; k++) {
            double raw = buf[k];
            if (raw < 0) raw += v->unsigned_wrap; /* a fill may be given in either range */
            if (isnan(raw) || (v->has_fill && (raw == v->fill || raw - v->unsigned_wrap == v->fill)) ||
                (v->has_miss && (raw == v->miss || raw - v->unsigned_wrap == v->miss)))
                continue;
            if (isnan(acc[k])) acc[k] = (float)(raw * v->scale + v->offset);
            else clash += acc[k] != (float)(raw * v->scale + v->offset);
        }
    }
    if (clash && !v->warned_expver) {
        v->warned_expver = 1;
        wx_log_warn("%s: %zu points hold different values in two experiments (expver): %s", where,
                    clash, v->exp_sorted ? "the lowest-numbered one's (ERA5 final before ERA5T) taken"
                                         : "the first one's in the file taken");
    }
    long nmiss = 0;
    if (st == WX_OK) {
        for (int r = 0; r < v->nlat; r++)
            for (int c = 0; c < v->nlon; c++) {
                float a = acc[(size_t)r * v->nlon + c];
                nmiss += isnan(a);
                values[(size_t)v->row_map[r] * v->nlon + v->col_map[c]] = a;
            }
        if (nmiss && policy == WX_MISSING_ERROR)
            st = wx_error_set(WX_ERR_RUN, "%s: %ld of %zu values are missing (_FillValue/"
                              "missing_value/NaN; an ingest recipe keeps them as NaN with "
                              "`missing: nan`)", where, nmiss, n);
        if (st == WX_OK && s->inputs_checked && v->spread) /* its values pass as a state's */
            st = wx_error_set(WX_ERR_USAGE, "%s: an ensemble spread (a standard deviation, by its "
                              "cell_methods or ensemble_statistic), not a state: give an analysis, "
                              "a forecast or the ensemble mean file", where);
        if (st == WX_OK && s->inputs_checked) st = check_plausible(s, f, values, n);
    }
    free(buf);
    free(acc);
    return st;
}

void wx_netcdf_close(wx_source *s) {
    nc_impl *im = s->impl;
    if (!im) return;
    for (int v = 0; v < im->nvars; v++) {
        free(im->vars[v].row_map);
        free(im->vars[v].col_map);
    }
    free(im->vars);
    if (im->ncid >= 0) nc_close(im->ncid);
    free(im);
    s->impl = NULL;
}
