#include "io/grib_write.h"

#include <eccodes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#define MISSING_VALUE 9999.0 /* NaN must be encoded through the bitmap, never as data */

const char *wx_grib_type_of_level(const wx_catalogue_entry *e) {
    switch (e->first_surface) {
    case 100: return "isobaricInhPa";
    case 103: return "heightAboveGround";
    case 101: return "meanSea";
    default: break;
    }
    /* vertical integrals (tcwv, category 1 number 64) sit on surface 1 to 8: entire atmosphere */
    if (e->param_id == 137) return "entireAtmosphere";
    return "surface";
}

/* eccodes allocates and frees a few field-sized buffers per message (the values as doubles: 8 MB
 * at 0.25°). Under glibc's defaults those come from mmap or are trimmed off the heap's top on
 * free, so every message pays the kernel for fresh zeroed pages: 20-25 % of the writer's CPU
 * (perf: page faults; tests/bench/bench_products.sh, docs/benchmarks.md). Keeping such blocks on
 * the heap makes the next message reuse them. Process-wide and for the rest of the process (a
 * forecast or daily run writing GRIB then also keeps its other blocks up to 64 MB on the heap
 * and up to 256 MB of freed memory mapped), so set once, and not where the user tuned malloc
 * (GLIBC_TUNABLES, or glibc's older MALLOC_*_ variables). A threshold glibc refuses is left at
 * its default: slower, same bytes. */
static void keep_field_buffers(void) {
#ifdef __GLIBC__
    const char *tun = getenv("GLIBC_TUNABLES");
    if (tun && strstr(tun, "glibc.malloc.")) return;
    if (getenv("MALLOC_MMAP_THRESHOLD_") || getenv("MALLOC_TRIM_THRESHOLD_") ||
        getenv("MALLOC_TOP_PAD_") || getenv("MALLOC_MMAP_MAX_"))
        return;
    if (mallopt(M_MMAP_THRESHOLD, 64 << 20)) /* up to a 0.1° field of doubles on the heap */
        (void)mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

wx_status wx_grib_writer_open(wx_grib_writer *w, const char *path) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, keep_field_buffers);
    memset(w, 0, sizeof *w);
    w->bits_per_value = 16;
    WX_TRY(wx_atomic_open(&w->file, path));
    w->path = wx_strdup(path);
    return WX_OK;
}

static void release(wx_grib_writer *w) {
    if (w->sample) codes_handle_delete(w->sample);
    free(w->path);
    free(w->vals);
    memset(w, 0, sizeof *w);
}

void wx_grib_writer_abort(wx_grib_writer *w) {
    wx_atomic_abort(&w->file);
    release(w);
}

wx_status wx_grib_writer_close(wx_grib_writer *w) {
    wx_status st = wx_atomic_commit(&w->file);
    release(w);
    return st;
}

#define SET_L(key, v)                                                                          \
    do {                                                                                       \
        int rc_ = codes_set_long(h, key, (long)(v));                                           \
        if (rc_) {                                                                             \
            st = wx_error_set(WX_ERR_RUN, "%s: message %lld (%s): cannot set %s=%ld: %s",      \
                              w->path, (long long)w->messages, f->var->short_name, key,        \
                              (long)(v), codes_get_error_message(rc_));                        \
            goto done;                                                                         \
        }                                                                                      \
    } while (0)
#define SET_D(key, v)                                                                          \
    do {                                                                                       \
        int rc_ = codes_set_double(h, key, (v));                                               \
        if (rc_) {                                                                             \
            st = wx_error_set(WX_ERR_RUN, "%s: message %lld (%s): cannot set %s=%g: %s",       \
                              w->path, (long long)w->messages, f->var->short_name, key, (v),   \
                              codes_get_error_message(rc_));                                   \
            goto done;                                                                         \
        }                                                                                      \
    } while (0)
#define SET_S(key, v)                                                                          \
    do {                                                                                       \
        size_t len_ = strlen(v);                                                               \
        int rc_ = codes_set_string(h, key, (v), &len_);                                        \
        if (rc_) {                                                                             \
            st = wx_error_set(WX_ERR_RUN, "%s: message %lld (%s): cannot set %s=%s: %s",      \
                              w->path, (long long)w->messages, f->var->short_name, key, (v),   \
                              codes_get_error_message(rc_));                                   \
            goto done;                                                                         \
        }                                                                                      \
    } while (0)

wx_status wx_grib_writer_add(wx_grib_writer *w, const wx_grib_field *f, const wx_grid *g,
                             const float *values) {
    wx_status st = WX_OK;
    size_t n = (size_t)g->nlat * g->nlon;
    if (!w->sample && !(w->sample = codes_grib_handle_new_from_samples(NULL, "GRIB2")))
        return wx_error_set(WX_ERR_RUN, "%s: eccodes sample GRIB2 not found (libeccodes-data)",
                            w->path);
    codes_handle *h = codes_handle_clone(w->sample);
    if (!h) return wx_error_set(WX_ERR_RUN, "%s: cannot copy the GRIB2 sample", w->path);
    if (f->step_end % 3600 || f->step_start % 3600) {
        st = wx_error_set(WX_ERR_RUN, "%s: %s: steps must be whole hours (got %lld..%lld s)",
                          w->path, f->var->short_name, (long long)f->step_start,
                          (long long)f->step_end);
        goto done;
    }
    SET_L("centre", 98);
    SET_L("Ni", g->nlon);
    SET_L("Nj", g->nlat);
    double lat_last = g->lat0 - (g->nlat - 1) * g->dlat;
    double lon_last = g->lon0 + (g->nlon - 1) * g->dlon;
    SET_D("latitudeOfFirstGridPointInDegrees", g->lat0);
    SET_D("longitudeOfFirstGridPointInDegrees", g->lon0);
    SET_D("latitudeOfLastGridPointInDegrees", lat_last);
    SET_D("longitudeOfLastGridPointInDegrees", lon_last);
    SET_D("iDirectionIncrementInDegrees", g->dlon);
    SET_D("jDirectionIncrementInDegrees", g->dlat);
    SET_L("jScansPositively", 0);
    int64_t y;
    int mo, d, hh, mi, s;
    wx_time_split(f->ref_time, &y, &mo, &d, &hh, &mi, &s);
    SET_L("dataDate", y * 10000 + mo * 100 + d);
    SET_L("dataTime", hh * 100 + mi);
    /* Ensembles as ECMWF codes ENS/TIGGE/S2S in GRIB2: member 0, the unperturbed control, is a
     * control forecast (code table 1.4: 3 = cf; table 4.6: 1 = unperturbed control), the others
     * perturbed forecasts (4 = pf; 3 = positively perturbed), so eccodes and cfgrib report
     * dataType cf / pf. */
    int control = f->member == 0;
    SET_L("typeOfProcessedData", f->member >= 0 ? (control ? 3 : 4)
                                                : (f->step_end > 0 || w->forecast ? 1 : 0));
    /* code table 4.3: 0 analysis, 2 forecast, 4 ensemble forecast */
    SET_L("typeOfGeneratingProcess", f->member >= 0 ? 4 : (f->step_end > 0 || w->forecast ? 2 : 0));
    if (f->var->accumulated)
        SET_L("productDefinitionTemplateNumber", f->member >= 0 ? 11 : 8);
    else if (f->member >= 0)
        SET_L("productDefinitionTemplateNumber", 1);
    if (f->member >= 0) {
        SET_L("typeOfEnsembleForecast", control ? 1 : 3);
        SET_L("perturbationNumber", f->member);
        SET_L("numberOfForecastsInEnsemble", f->members);
    }
    const char *tol = wx_grib_type_of_level(f->var);
    SET_S("typeOfLevel", tol);
    if (f->var->level_kind == WX_LEVEL_PRESSURE)
        SET_L("level", f->level);
    else if (f->var->first_surface == 103)
        SET_L("level", f->var->surface_level);
    SET_L("paramId", f->var->param_id);
    SET_L("stepUnits", 1);
    if (f->var->accumulated) {
        SET_S("stepType", "accum");
        SET_L("startStep", f->step_start / 3600);
        SET_L("endStep", f->step_end / 3600);
    } else {
        SET_L("step", f->step_end / 3600);
    }
    SET_S("packingType", w->packing == WX_GRIB_CCSDS ? "grid_ccsds" : "grid_simple");
    SET_L("bitsPerValue", w->bits_per_value);
    if (w->vals_cap < n) {
        free(w->vals);
        w->vals = wx_malloc(sizeof(double) * n);
        w->vals_cap = n;
    }
    double *vals = w->vals;
    /* a branch-free pass that vectorises (exponent all ones: NaN or Inf), the slow one only
     * when it found one */
    unsigned nonfinite = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &values[i], sizeof u);
        nonfinite |= (u & 0x7f800000u) == 0x7f800000u;
        vals[i] = values[i];
    }
    int missing = 0;
    for (size_t i = 0; nonfinite && i < n; i++) {
        if (isnan(values[i])) {
            vals[i] = MISSING_VALUE;
            missing = 1;
        } else if (!isfinite(values[i])) {
            st = wx_error_set(WX_ERR_RUN, "%s: %s: value %zu is infinite", w->path,
                              f->var->short_name, i);
            goto done;
        }
    }
    if (missing) {
        SET_L("bitmapPresent", 1);
        SET_D("missingValue", MISSING_VALUE);
    }
    int rc = codes_set_double_array(h, "values", vals, n);
    if (rc) {
        st = wx_error_set(WX_ERR_RUN, "%s: message %lld (%s): cannot set %zu values: %s", w->path,
                          (long long)w->messages, f->var->short_name, n,
                          codes_get_error_message(rc));
        goto done;
    }
    const void *msg = NULL;
    size_t len = 0;
    rc = codes_get_message(h, &msg, &len);
    if (rc) {
        st = wx_error_set(WX_ERR_RUN, "%s: cannot encode message %lld: %s", w->path,
                          (long long)w->messages, codes_get_error_message(rc));
        goto done;
    }
    if (fwrite(msg, 1, len, w->file.fp) != len) {
        st = wx_error_set(WX_ERR_RUN, "%s: write failed (message %lld, %zu bytes)", w->path,
                          (long long)w->messages, len);
        goto done;
    }
    w->messages++;
done:
    codes_handle_delete(h);
    return st;
}
