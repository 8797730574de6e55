/* The ERA5 catalogue against eccodes' own definitions: for every entry, a GRIB2 message made from
 * the eccodes sample with shortName (and level type) set must read back the catalogue's paramId,
 * discipline, parameterCategory, parameterNumber and typeOfFirstFixedSurface. */
#include <eccodes.h>
#include <string.h>

#include "meteo/wx_catalogue.h"
#include "wx_test.h"

static void check_entry(const wx_catalogue_entry *e) {
    FILE *f = fopen("/usr/share/eccodes/samples/GRIB2.tmpl", "rb");
    if (!WX_CHECK(f != NULL, "eccodes GRIB2 sample missing")) return;
    int err = 0;
    codes_handle *h = codes_handle_new_from_file(NULL, f, PRODUCT_GRIB, &err);
    fclose(f);
    if (!WX_CHECK(h && !err, "sample unreadable")) return;
    if (e->accumulated) codes_set_long(h, "productDefinitionTemplateNumber", 8);
    if (e->level_kind == WX_LEVEL_PRESSURE) {
        codes_set_string(h, "typeOfLevel", "isobaricInhPa", &(size_t){13});
        codes_set_long(h, "level", 500);
    }
    size_t len = strlen(e->short_name);
    err = codes_set_string(h, "shortName", e->short_name, &len);
    WX_CHECK(err == 0, "%s: eccodes refused shortName (%d)", e->short_name, err);
    long pid = 0, disc = -1, cat = -1, num = -1, sfc = -1, lev = -1;
    codes_get_long(h, "paramId", &pid);
    codes_get_long(h, "discipline", &disc);
    codes_get_long(h, "parameterCategory", &cat);
    codes_get_long(h, "parameterNumber", &num);
    codes_get_long(h, "typeOfFirstFixedSurface", &sfc);
    codes_get_long(h, "level", &lev);
    char units[64] = "";
    size_t ul = sizeof units;
    codes_get_string(h, "units", units, &ul);
    WX_CHECK(pid == e->param_id, "%s: paramId %ld vs catalogue %d", e->short_name, pid, e->param_id);
    WX_CHECK(disc == e->discipline && cat == e->category && num == e->number,
             "%s: eccodes %ld/%ld/%ld vs catalogue %d/%d/%d", e->short_name, disc, cat, num,
             e->discipline, e->category, e->number);
    WX_CHECK(!strcmp(units, e->units), "%s: units '%s' vs '%s'", e->short_name, units, e->units);
    /* eccodes' prmsl definition does not fix the surface (the sample's stays 1); real files such
     * as regular_ll_msl.grib carry 101, checked in test_grib_read. */
    if (e->level_kind != WX_LEVEL_PRESSURE && strcmp(e->short_name, "prmsl")) {
        WX_CHECK(sfc == e->first_surface, "%s: typeOfFirstFixedSurface %ld vs %d", e->short_name,
                 sfc, e->first_surface);
        if (e->first_surface == 103)
            WX_CHECK(lev == e->surface_level, "%s: level %ld vs %d", e->short_name, lev,
                     e->surface_level);
    } else if (e->level_kind == WX_LEVEL_PRESSURE) {
        WX_CHECK(sfc == 100, "%s: typeOfFirstFixedSurface %ld, expected 100", e->short_name, sfc);
    }
    codes_handle_delete(h);
}

int main(void) {
    for (int i = 0; i < wx_catalogue_count(); i++) {
        const wx_catalogue_entry *e = wx_catalogue_at(i);
        if (e->level_kind == WX_LEVEL_STATIC && !strcmp(e->short_name, "z")) continue;
        check_entry(e);
    }
    /* Lookup by every kind of name. */
    const char *pairs[][2] = {{"2t", "2t"},    {"t2m", "2t"},  {"2m_temperature", "2t"},
                              {"10u", "10u"},  {"u10", "10u"}, {"10v", "10v"},
                              {"V10", "10v"},  {"msl", "msl"}, {"sp", "sp"},
                              {"tcwv", "tcwv"}, {"tp", "tp"},  {"z", "z"},
                              {"t", "t"},      {"u", "u"},     {"v", "v"},
                              {"r", "r"},      {"q", "q"},     {"w", "w"},
                              {"lsm", "lsm"},  {"geopotential_at_surface", "z"}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        const wx_catalogue_entry *e = wx_catalogue_find(pairs[i][0]);
        WX_CHECK(e && !strcmp(e->short_name, pairs[i][1]), "lookup '%s'", pairs[i][0]);
    }
    WX_CHECK(wx_catalogue_find("z")->level_kind == WX_LEVEL_PRESSURE, "z defaults to pressure");
    const wx_catalogue_entry *orog = wx_catalogue_find("orography");
    WX_CHECK(orog && orog->level_kind == WX_LEVEL_STATIC && orog->param_id == 129, "orography");
    WX_CHECK(wx_catalogue_find_kind("z", WX_LEVEL_STATIC) == orog, "static z");
    WX_CHECK(wx_catalogue_find("nonsense") == NULL, "unknown name");
    WX_CHECK(wx_catalogue_find_param_id(167, -1) == wx_catalogue_find("2t"), "paramId 167");
    WX_CHECK(wx_catalogue_find("tp")->accumulated == 1, "tp accumulated");
    /* WeatherBench2/DeepMind accumulation periods in the name */
    struct { const char *name, *base; long s; } per[] = {
        {"total_precipitation_6hr", "total_precipitation", 21600},
        {"total_precipitation_24hr", "total_precipitation", 86400},
        {"tp", "tp", 0}, {"u100", "u100", 0}, {"6hr", "6hr", 0}, {"x_hr", "x_hr", 0},
        {"tp_6h", "tp_6h", 0}, {"tp_0hr", "tp_0hr", 0}, {"tp_1234hr", "tp_1234hr", 0}};
    for (size_t i = 0; i < sizeof per / sizeof per[0]; i++) {
        char base[64];
        long s = wx_catalogue_strip_period(per[i].name, base, sizeof base);
        WX_CHECK(s == per[i].s && !strcmp(base, per[i].base), "strip_period('%s') = %ld '%s'",
                 per[i].name, s, base);
    }
    return wx_test_summary();
}
