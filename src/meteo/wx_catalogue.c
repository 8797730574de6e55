#include "meteo/wx_catalogue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Single-level fixed surfaces (GRIB2 code table 4.5). */
enum { SFC_GROUND = 1, SFC_ISOBARIC = 100, SFC_MSL = 101, SFC_HEIGHT = 103 };

static const wx_catalogue_entry entries[] = {
    /* Pressure-level variables (ERA5 "reanalysis-era5-pressure-levels"). */
    {"z", "z", "geopotential", "m**2 s**-2", "m2 s-2", 129, WX_LEVEL_PRESSURE, "geopotential",
     "Geopotential", 0, 3, 4, SFC_ISOBARIC, 0, 0, 0},
    {"t", "t", "temperature", "K", "K", 130, WX_LEVEL_PRESSURE, "air_temperature", "Temperature", 0,
     0, 0, SFC_ISOBARIC, 0, 0, 0},
    {"u", "u", "u_component_of_wind", "m s**-1", "m s-1", 131, WX_LEVEL_PRESSURE, "eastward_wind",
     "U component of wind", 0, 2, 2, SFC_ISOBARIC, 0, 0, 0},
    {"v", "v", "v_component_of_wind", "m s**-1", "m s-1", 132, WX_LEVEL_PRESSURE, "northward_wind",
     "V component of wind", 0, 2, 3, SFC_ISOBARIC, 0, 0, 0},
    {"r", "r", "relative_humidity", "%", "%", 157, WX_LEVEL_PRESSURE, "relative_humidity",
     "Relative humidity", 0, 1, 1, SFC_ISOBARIC, 0, 0, 1},
    {"q", "q", "specific_humidity", "kg kg**-1", "kg kg-1", 133, WX_LEVEL_PRESSURE,
     "specific_humidity", "Specific humidity", 0, 1, 0, SFC_ISOBARIC, 0, 0, 1},
    {"w", "w", "vertical_velocity", "Pa s**-1", "Pa s-1", 135, WX_LEVEL_PRESSURE,
     "lagrangian_tendency_of_air_pressure", "Vertical velocity", 0, 2, 8, SFC_ISOBARIC, 0, 0, 0},
    /* Single-level variables (ERA5 "reanalysis-era5-single-levels"). */
    {"2t", "t2m", "2m_temperature,2_metre_temperature", "K", "K", 167, WX_LEVEL_SINGLE,
     "air_temperature", "2 metre temperature", 0, 0, 0, SFC_HEIGHT, 2, 0, 0},
    {"10u", "u10", "10m_u_component_of_wind,10_metre_u_wind_component", "m s**-1", "m s-1", 165,
     WX_LEVEL_SINGLE, "eastward_wind", "10 metre U wind component", 0, 2, 2, SFC_HEIGHT, 10, 0, 0},
    {"10v", "v10", "10m_v_component_of_wind,10_metre_v_wind_component", "m s**-1", "m s-1", 166,
     WX_LEVEL_SINGLE, "northward_wind", "10 metre V wind component", 0, 2, 3, SFC_HEIGHT, 10, 0, 0},
    {"msl", "msl", "mean_sea_level_pressure", "Pa", "Pa", 151, WX_LEVEL_SINGLE,
     "air_pressure_at_mean_sea_level", "Mean sea level pressure", 0, 3, 0, SFC_MSL, 0, 0, 0},
    {"sp", "sp", "surface_pressure", "Pa", "Pa", 134, WX_LEVEL_SINGLE, "surface_air_pressure",
     "Surface pressure", 0, 3, 0, SFC_GROUND, 0, 0, 0},
    /* eccodes gives tcwv typeOfFirstFixedSurface 1 with typeOfSecondFixedSurface 8 (entire
     * atmosphere). */
    {"tcwv", "tcwv", "total_column_water_vapour", "kg m**-2", "kg m-2", 137, WX_LEVEL_SINGLE,
     "atmosphere_mass_content_of_water_vapor",
     "Total column vertically-integrated water vapour", 0, 1, 64, SFC_GROUND, 0, 0, 1},
    /* tp is an ECMWF local parameter in GRIB2 (number 193), accumulated (statistical process 1);
     * metres of liquid water equivalent, hence CF's lwe_thickness_ name (the kg m-2 one is
     * precipitation_amount). */
    {"tp", "tp", "total_precipitation", "m", "m", 228, WX_LEVEL_SINGLE,
     "lwe_thickness_of_precipitation_amount", "Total precipitation", 0, 1, 193, SFC_GROUND, 0, 1,
     1},
    {"skt", "skt", "skin_temperature", "K", "K", 235, WX_LEVEL_SINGLE, "surface_temperature",
     "Skin temperature", 0, 0, 17, SFC_GROUND, 0, 0, 0},
    /* NCEP's mean sea level pressure (found in GRIB2 files from other centres). */
    {"prmsl", "prmsl", "pressure_reduced_to_msl", "Pa", "Pa", 260074, WX_LEVEL_SINGLE,
     "air_pressure_at_mean_sea_level", "Pressure reduced to MSL", 0, 3, 1, SFC_MSL, 0, 0, 0},
    /* Static fields. */
    /* ERA5's lsm is the land fraction of the cell (0..1, not only 0 or 1): land_area_fraction,
     * not land_binary_mask. */
    {"lsm", "lsm", "land_sea_mask", "(0 - 1)", "1", 172, WX_LEVEL_STATIC, "land_area_fraction",
     "Land-sea mask", 2, 0, 0, SFC_GROUND, 0, 0, 0},
    {"z", "z", "geopotential_at_surface,orography,orog,zs", "m**2 s**-2", "m2 s-2", 129,
     WX_LEVEL_STATIC, "surface_geopotential", "Geopotential", 0, 3, 4, SFC_GROUND, 0, 0, 0},
};

#define N_ENTRIES ((int)(sizeof entries / sizeof entries[0]))

int wx_catalogue_count(void) { return N_ENTRIES; }

const wx_catalogue_entry *wx_catalogue_at(int i) {
    return (i >= 0 && i < N_ENTRIES) ? &entries[i] : NULL;
}

static int list_has(const char *list, const char *name) {
    size_t n = strlen(name);
    const char *p = list;
    while (p && *p) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == n && !strncasecmp(p, name, n)) return 1;
        p = c ? c + 1 : NULL;
    }
    return 0;
}

const wx_catalogue_entry *wx_catalogue_split_level(const char *name, double *level) {
    size_t n = strlen(name), k = n;
    while (k > 0 && name[k - 1] >= '0' && name[k - 1] <= '9') k--;
    if (k == 0 || k == n || k >= 64) return NULL;
    char param[64];
    snprintf(param, sizeof param, "%.*s", (int)k, name);
    const wx_catalogue_entry *e = wx_catalogue_find_kind(param, WX_LEVEL_PRESSURE);
    if (e) *level = atof(name + k);
    return e;
}

long wx_catalogue_strip_period(const char *name, char *base, size_t cap) {
    snprintf(base, cap, "%s", name);
    size_t n = strlen(base), k = n;
    if (n < 4 || strcmp(base + n - 2, "hr")) return 0;
    k = n - 2;
    while (k > 0 && base[k - 1] >= '0' && base[k - 1] <= '9') k--;
    if (k == n - 2 || k < 2 || base[k - 1] != '_' || n - 2 - k > 3) return 0;
    long hours = atol(base + k);
    if (hours <= 0) return 0;
    base[k - 1] = 0;
    return hours * 3600;
}

int wx_catalogue_matches(const wx_catalogue_entry *e, const char *name) {
    if (!e || !name || !*name) return 0;
    return !strcasecmp(e->short_name, name) || !strcasecmp(e->nc_name, name) ||
           list_has(e->aliases, name);
}

const wx_catalogue_entry *wx_catalogue_find_kind(const char *name, wx_level_kind kind) {
    for (int i = 0; i < N_ENTRIES; i++)
        if (entries[i].level_kind == kind && wx_catalogue_matches(&entries[i], name))
            return &entries[i];
    return NULL;
}

const wx_catalogue_entry *wx_catalogue_find(const char *name) {
    for (int i = 0; i < N_ENTRIES; i++)
        if (wx_catalogue_matches(&entries[i], name)) return &entries[i];
    return NULL;
}

const wx_catalogue_entry *wx_catalogue_find_param_id(int param_id, int kind) {
    for (int i = 0; i < N_ENTRIES; i++)
        if (entries[i].param_id == param_id && (kind < 0 || (int)entries[i].level_kind == kind))
            return &entries[i];
    return NULL;
}

/* Parameters read as a catalogue channel after a conversion (see wx_catalogue_find_converted). */
static const struct {
    const char *short_name, *param_id;
    wx_level_kind kind;
    const char *as;
    double scale;
} converted[] = {
    /* WMO geopotential metre: 1 gpm = g0 m = 9.80665 m2 s-2 of geopotential (eccodes' gh is
     * "Geopotential height", gpm; ERA5/WeatherBench/GraphCast models take z). */
    {"gh", "156", WX_LEVEL_PRESSURE, "z", 9.80665},
};

const wx_catalogue_entry *wx_catalogue_find_converted(const char *name, wx_level_kind kind,
                                                      double *scale) {
    if (!name) return NULL;
    for (size_t i = 0; i < sizeof converted / sizeof converted[0]; i++)
        if (converted[i].kind == kind && (!strcasecmp(name, converted[i].short_name) ||
                                          !strcmp(name, converted[i].param_id))) {
            const wx_catalogue_entry *e = wx_catalogue_find_kind(converted[i].as, kind);
            if (e && scale) *scale = converted[i].scale;
            return e;
        }
    return NULL;
}

const char *wx_level_kind_name(wx_level_kind k) {
    switch (k) {
    case WX_LEVEL_PRESSURE: return "pressure";
    case WX_LEVEL_SINGLE: return "single";
    case WX_LEVEL_STATIC: return "static";
    }
    return "?";
}
