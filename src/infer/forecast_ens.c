#include "infer/forecast_ens.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/wx_rng.h"

static const char *const perturbation_names[] = {"gaussian", "spherical-gaussian", "bred"};

wx_status wx_perturbation_parse(const char *text, wx_perturbation *out) {
    for (int k = 0; k < 3; k++)
        if (!strcmp(text, perturbation_names[k])) {
            *out = (wx_perturbation)k;
            return WX_OK;
        }
    return wx_error_set(WX_ERR_USAGE, "--perturbation %s: expected gaussian, spherical-gaussian or "
                        "bred", text);
}

const char *wx_perturbation_name(wx_perturbation p) {
    return (unsigned)p < 3 ? perturbation_names[p] : "?";
}

/* Philox stream of (member, channel): independent of batch layout. */
static void rng_for(wx_rng *g, uint64_t seed, uint64_t member, int channel) {
    wx_rng_init(g, seed ^ (member * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)channel << 40), 2);
}

static double weighted_rms(const wx_grid *g, const float *x) {
    double *w = wx_malloc(sizeof(double) * (size_t)g->nlat), s = 0, sw = 0;
    wx_grid_area_weights(g, w);
    for (int j = 0; j < g->nlat; j++)
        for (int i = 0; i < g->nlon; i++) {
            double v = x[(size_t)j * g->nlon + i];
            s += w[j] * v * v, sw += w[j];
        }
    free(w);
    return sqrt(s / sw);
}

void wx_spherical_gaussian_field(const wx_grid *g, uint64_t seed, uint64_t member, int channel,
                                 float *out) {
    int L = g->nlat - 1 < 63 ? g->nlat - 1 : 63;
    if (L < 1) L = 1;
    const double alpha = 2.0, tau = 3.0;
    size_t nc = (size_t)(L + 1) * (L + 1);
    double *a = wx_malloc(sizeof(double) * nc), *b = wx_malloc(sizeof(double) * nc);
    wx_rng rng;
    rng_for(&rng, seed, member, channel);
    for (int l = 0; l <= L; l++) /* coefficient draws in a fixed (l, m) order */
        for (int m = 0; m <= l; m++) {
            double sd = l == 0 ? 0.0 : pow(l * (l + 1.0) + tau * tau, -alpha / 2);
            a[l * (L + 1) + m] = sd * wx_rng_normal(&rng);
            b[l * (L + 1) + m] = m ? sd * wx_rng_normal(&rng) : 0.0;
        }
    double *p = wx_malloc(sizeof(double) * nc), *cm = wx_malloc(sizeof(double) * (L + 1)),
           *sm = wx_malloc(sizeof(double) * (L + 1));
    for (int j = 0; j < g->nlat; j++) {
        double x = sin(wx_grid_lat(g, j) * M_PI / 180), s = sqrt(fmax(0.0, 1 - x * x));
        /* orthonormal associated Legendre functions P̄_l^m(x) by the standard stable recurrence */
        p[0] = sqrt(1.0 / (4 * M_PI));
        for (int m = 1; m <= L; m++)
            p[m * (L + 1) + m] = -sqrt((2.0 * m + 1) / (2.0 * m)) * s * p[(m - 1) * (L + 1) + m - 1];
        for (int m = 0; m < L; m++) p[(m + 1) * (L + 1) + m] = sqrt(2.0 * m + 3) * x * p[m * (L + 1) + m];
        for (int m = 0; m <= L; m++)
            for (int l = m + 2; l <= L; l++) {
                double al = sqrt((4.0 * l * l - 1) / ((double)l * l - (double)m * m));
                double bl = sqrt(((l - 1.0) * (l - 1.0) - (double)m * m) / (4.0 * (l - 1.0) * (l - 1.0) - 1));
                p[l * (L + 1) + m] = al * (x * p[(l - 1) * (L + 1) + m] - bl * p[(l - 2) * (L + 1) + m]);
            }
        for (int m = 0; m <= L; m++) {
            cm[m] = sm[m] = 0;
            for (int l = m; l <= L; l++) {
                cm[m] += a[l * (L + 1) + m] * p[l * (L + 1) + m];
                sm[m] += b[l * (L + 1) + m] * p[l * (L + 1) + m];
            }
        }
        for (int i = 0; i < g->nlon; i++) {
            double lon = wx_grid_lon(g, i) * M_PI / 180, v = cm[0];
            for (int m = 1; m <= L; m++) v += M_SQRT2 * (cm[m] * cos(m * lon) + sm[m] * sin(m * lon));
            out[(size_t)j * g->nlon + i] = (float)v;
        }
    }
    double rms = weighted_rms(g, out);
    size_t n = (size_t)g->nlat * g->nlon;
    for (size_t k = 0; k < n; k++) out[k] = rms > 0 ? (float)(out[k] / rms) : 0.0f;
    free(a), free(b), free(p), free(cm), free(sm);
}

static void add_noise(wx_rollout *r, wx_perturbation kind, double amp, uint64_t seed) {
    size_t hw = (size_t)(r->h * r->w);
    float *f = wx_malloc(sizeof(float) * hw);
    for (int64_t m = 1; m < r->b; m++)
        for (int i = 0; i < r->nin; i++) {
            if (wx_rollout_input_unread(r, i)) continue; /* no member starts from it */
            float *x = r->x + ((size_t)m * (size_t)r->nin + (size_t)i) * hw;
            if (kind == WX_PERTURB_SPHERICAL) {
                wx_spherical_gaussian_field(&r->grid, seed, (uint64_t)m, i, f);
            } else {
                wx_rng g;
                rng_for(&g, seed, (uint64_t)m, i);
                for (size_t p = 0; p < hw; p++) f[p] = (float)wx_rng_normal(&g);
            }
            for (size_t p = 0; p < hw; p++) x[p] += (float)(amp * f[p]);
        }
    free(f);
}

/* Members 1.. of physically non-negative inputs (tp, tcwv, q) back to >= 0: noise would start
 * them below (negative water) and show it at lead 0. NaN stays NaN. */
static void clamp_members(wx_rollout *r) {
    size_t hw = (size_t)(r->h * r->w);
    for (int64_t m = 1; m < r->b; m++)
        for (int i = 0; i < r->nin; i++) {
            if (!r->in[i].nonnegative || wx_rollout_input_unread(r, i)) continue; /* unperturbed */
            float *x = r->x + ((size_t)m * (size_t)r->nin + (size_t)i) * hw;
            const float lo = (float)(-r->in[i].mean / r->in[i].std); /* 0 in normalised units */
            for (size_t p = 0; p < hw; p++)
                if (x[p] < lo) x[p] = lo;
        }
}

wx_status wx_forecast_perturb(wx_rollout *r, wx_perturbation kind, double amp, uint64_t seed,
                              int cycles) {
    if (!(amp >= 0) || !isfinite(amp))
        return wx_error_set(WX_ERR_USAGE, "perturbation amplitude %g: expected >= 0", amp);
    add_noise(r, kind == WX_PERTURB_BRED ? WX_PERTURB_GAUSSIAN : kind, amp, seed);
    clamp_members(r);
    wx_rollout_state_edited(r); /* a device backend uploads the perturbed state */
    if (kind != WX_PERTURB_BRED) return WX_OK;
    size_t hw = (size_t)(r->h * r->w), sz = (size_t)r->nin * hw;
    float *x0 = wx_malloc(sizeof(float) * sz);
    memcpy(x0, r->x, sizeof(float) * sz); /* member 0: the control state */
    wx_status st = WX_OK;
    for (int c = 0; c < (cycles > 0 ? cycles : 1) && st == WX_OK; c++) {
        st = wx_rollout_step(r); /* now x = M(x0 + dx) per member, x[0] = M(x0) */
        for (int64_t m = 1; st == WX_OK && m < r->b; m++)
            for (int i = 0; i < r->nin; i++) {
                float *x = r->x + ((size_t)m * (size_t)r->nin + (size_t)i) * hw;
                if (wx_rollout_input_unread(r, i)) { /* back to the analysis, unperturbed */
                    memcpy(x, x0 + (size_t)i * hw, sizeof(float) * hw);
                    continue;
                }
                const float *y0 = r->x + (size_t)i * hw;
                double s = 0;
                for (size_t p = 0; p < hw; p++) s += (double)(x[p] - y0[p]) * (x[p] - y0[p]);
                double scale = s > 0 ? amp / sqrt(s / (double)hw) : 0.0;
                for (size_t p = 0; p < hw; p++)
                    x[p] = x0[(size_t)i * hw + p] + (float)(scale * (x[p] - y0[p]));
            }
        memcpy(r->x, x0, sizeof(float) * sz);
        clamp_members(r);
        wx_rollout_state_edited(r);
    }
    r->steps = 0;
    free(x0);
    return st;
}
