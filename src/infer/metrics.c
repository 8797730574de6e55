#include "infer/metrics.h"

#include <math.h>
#include <stdlib.h>

#include "core/wx_error.h"
#include "io/climatology.h"

void wx_metrics_fourcastnet_weights(int nlat, double *w) {
    double sum = 0;
    for (int j = 0; j < nlat; j++) {
        double lat = nlat > 1 ? 90.0 - j * 180.0 / (nlat - 1) : 0;
        w[j] = cos(lat * M_PI / 180.0);
        sum += w[j];
    }
    for (int j = 0; j < nlat; j++) w[j] = sum > 0 ? nlat * w[j] / sum : 1;
}

double wx_metrics_wmean(const double *w, int nlat, int nlon, const float *x) {
    double num = 0, den = 0;
    for (int j = 0; j < nlat; j++) {
        const float *r = x + (size_t)j * nlon;
        double s = 0;
        int n = 0;
        for (int i = 0; i < nlon; i++)
            if (isfinite(r[i])) {
                s += r[i];
                n++;
            }
        num += w[j] * s;
        den += w[j] * n;
    }
    return den > 0 ? num / den : NAN;
}

/* The weight of point k besides its row's w_j: the region mask (WB2's region weights: 0/1 for a
 * box, the land fraction for a land region), 1 without one. Points of weight 0 are skipped, as WB2
 * zeroes them before its weighted mean. With m == NULL every product below is by exactly 1.0, so
 * the sums are bit for bit those of the unmasked scores. */
#define MASK_AT(m, k) ((m) ? (double)(m)[k] : 1.0)

/* A point is scored where the mask is positive and the truth (and the climatology, for ACC) is
 * finite: a missing truth value (a padded row, a masked region) is skipped. A forecast value that
 * is NaN or infinite at a scored point is not skipped: it makes the score of that initial time NaN
 * (as WB2's skipna=False does), so a model that breaks down cannot score better by leaving points
 * out. The count of such points is returned for the caller's warning. */

/* ⟨(f−o)^p⟩ style sums in one pass: sums[0] = Σw(f−o), [1] = Σw(f−o)², [2] = Σw|f−o|, [3] = Σw
 * (all NaN when a forecast value at a scored point is not finite). m: [nlat, nlon] or NULL.
 * Returns the number of such points. */
static int64_t diff_sums(const double *w, const float *m, int nlat, int nlon, const float *f,
                         const float *o, double sums[4]) {
    sums[0] = sums[1] = sums[2] = sums[3] = 0;
    int64_t bad = 0;
    for (int j = 0; j < nlat; j++) {
        double d1 = 0, d2 = 0, da = 0, n = 0;
        for (int i = 0; i < nlon; i++) {
            size_t k = (size_t)j * nlon + i;
            double mk = MASK_AT(m, k);
            if (!(mk > 0) || !isfinite(o[k])) continue;
            if (!isfinite(f[k])) {
                bad++;
                continue;
            }
            double d = (double)f[k] - (double)o[k];
            d1 += mk * d;
            d2 += mk * d * d;
            da += mk * fabs(d);
            n += mk;
        }
        sums[0] += w[j] * d1;
        sums[1] += w[j] * d2;
        sums[2] += w[j] * da;
        sums[3] += w[j] * n;
    }
    if (bad) sums[0] = sums[1] = sums[2] = sums[3] = NAN;
    return bad;
}

double wx_metrics_mse(const double *w, int nlat, int nlon, const float *f, const float *o) {
    double s[4];
    diff_sums(w, NULL, nlat, nlon, f, o, s);
    return s[3] > 0 ? s[1] / s[3] : NAN;
}

double wx_metrics_bias(const double *w, int nlat, int nlon, const float *f, const float *o) {
    double s[4];
    diff_sums(w, NULL, nlat, nlon, f, o, s);
    return s[3] > 0 ? s[0] / s[3] : NAN;
}

static double acc_masked(const double *w, const float *m, int nlat, int nlon, const float *f,
                         const float *o, const float *c) {
    /* The Σw normalisations of the three means cancel in the ratio. */
    double sfo = 0, sff = 0, soo = 0;
    for (int j = 0; j < nlat; j++) {
        double a = 0, b = 0, d = 0;
        for (int i = 0; i < nlon; i++) {
            size_t k = (size_t)j * nlon + i;
            double mk = MASK_AT(m, k);
            if (!(mk > 0) || !isfinite(o[k]) || !isfinite(c[k])) continue;
            if (!isfinite(f[k])) return NAN; /* a non-finite forecast at a scored point */
            double fa = (double)f[k] - c[k], oa = (double)o[k] - c[k];
            a += mk * fa * oa;
            b += mk * fa * fa;
            d += mk * oa * oa;
        }
        sfo += w[j] * a;
        sff += w[j] * b;
        soo += w[j] * d;
    }
    double den = sqrt(sff * soo);
    return den > 0 ? sfo / den : NAN;
}

double wx_metrics_acc(const double *w, int nlat, int nlon, const float *f, const float *o,
                      const float *c) {
    return acc_masked(w, NULL, nlat, nlon, f, o, c);
}

static void sort_small(double *x, int n) {
    for (int i = 1; i < n; i++) {
        double v = x[i];
        int k = i - 1;
        while (k >= 0 && x[k] > v) {
            x[k + 1] = x[k];
            k--;
        }
        x[k + 1] = v;
    }
}

/* Returns the number of scored points where a member is not finite (then all three are NaN). */
static int64_t ensemble_masked(const double *w, const float *mask, int nlat, int nlon, int M,
                               const float *ens, const float *o, double *crps, double *ens_var,
                               double *ens_mse) {
    WX_ASSERT(M >= 1);
    size_t npt = (size_t)nlat * nlon;
    double *x = wx_malloc(sizeof(double) * (size_t)M);
    double s_skill = 0, s_spread = 0, s_var = 0, s_mse = 0, s_w = 0;
    int64_t bad = 0;
    for (int j = 0; j < nlat; j++) {
        double skill = 0, spread = 0, var = 0, mse = 0, n = 0;
        for (int i = 0; i < nlon; i++) {
            size_t k = (size_t)j * nlon + i;
            double mk = MASK_AT(mask, k);
            if (!(mk > 0) || !isfinite(o[k])) continue;
            int ok = 1;
            for (int m = 0; m < M && ok; m++) {
                x[m] = ens[m * npt + k];
                ok = isfinite(x[m]);
            }
            if (!ok) {
                bad++;
                continue;
            }
            double ov = o[k], mean = 0, sk = 0;
            for (int m = 0; m < M; m++) {
                sk += fabs(x[m] - ov);
                mean += x[m];
            }
            mean /= M;
            skill += mk * (sk / M);
            mse += mk * ((mean - ov) * (mean - ov));
            if (M >= 2) {
                double v = 0;
                for (int m = 0; m < M; m++) v += (x[m] - mean) * (x[m] - mean);
                var += mk * (v / (M - 1));
                /* Σ_{i,j}|x_i − x_j| = 2 Σ_r (2r − M − 1) x_(r), r the 1-based rank (PWM form). */
                sort_small(x, M);
                double pw = 0;
                for (int r = 1; r <= M; r++) pw += (2.0 * r - M - 1) * x[r - 1];
                spread += mk * (2.0 * pw / ((double)M * (M - 1)));
            }
            n += mk;
        }
        s_skill += w[j] * skill;
        s_spread += w[j] * spread;
        s_var += w[j] * var;
        s_mse += w[j] * mse;
        s_w += w[j] * n;
    }
    free(x);
    double inv = s_w > 0 && !bad ? 1.0 / s_w : NAN;
    if (crps) *crps = (s_skill - 0.5 * s_spread) * inv;
    if (ens_var) *ens_var = s_var * inv;
    if (ens_mse) *ens_mse = s_mse * inv;
    return bad;
}

void wx_metrics_ensemble(const double *w, int nlat, int nlon, int M, const float *ens,
                         const float *o, double *crps, double *ens_var, double *ens_mse) {
    ensemble_masked(w, NULL, nlat, nlon, M, ens, o, crps, ens_var, ens_mse);
}

void wx_score_add(wx_score_sums *s, const double *w, int nlat, int nlon, const float *f,
                  const float *o, const float *c) {
    wx_score_add_masked(s, w, NULL, nlat, nlon, f, o, c);
}

void wx_score_add_masked(wx_score_sums *s, const double *w, const float *mask, int nlat, int nlon,
                         const float *f, const float *o, const float *c) {
    double d[4];
    s->n_bad += diff_sums(w, mask, nlat, nlon, f, o, d);
    double inv = d[3] > 0 ? 1.0 / d[3] : NAN;
    s->sum_bias += d[0] * inv;
    s->sum_mse += d[1] * inv;
    s->sum_mae += d[2] * inv;
    s->sum_rmse += sqrt(d[1] * inv);
    s->n++;
    if (c) {
        s->sum_acc += acc_masked(w, mask, nlat, nlon, f, o, c);
        s->n_acc++;
    }
}

void wx_score_add_vector(wx_score_sums *s, const double *w, int nlat, int nlon, const float *fu,
                         const float *fv, const float *ou, const float *ov) {
    wx_score_add_vector_masked(s, w, NULL, nlat, nlon, fu, fv, ou, ov);
}

void wx_score_add_vector_masked(wx_score_sums *s, const double *w, const float *mask, int nlat,
                                int nlon, const float *fu, const float *fv, const float *ou,
                                const float *ov) {
    double num = 0, den = 0;
    int64_t bad = 0;
    for (int j = 0; j < nlat; j++) {
        double d2 = 0, n = 0;
        for (int i = 0; i < nlon; i++) {
            size_t k = (size_t)j * nlon + i;
            double mk = MASK_AT(mask, k);
            if (!(mk > 0) || !isfinite(ou[k]) || !isfinite(ov[k])) continue;
            if (!isfinite(fu[k]) || !isfinite(fv[k])) {
                bad++;
                continue;
            }
            double du = (double)fu[k] - ou[k], dv = (double)fv[k] - ov[k];
            d2 += mk * (du * du + dv * dv);
            n += mk;
        }
        num += w[j] * d2;
        den += w[j] * n;
    }
    double mse = den > 0 && !bad ? num / den : NAN;
    s->n_bad += bad;
    s->sum_mse += mse;
    s->sum_rmse += sqrt(mse);
    s->vector = 1;
    s->n++;
}

void wx_score_add_ensemble(wx_score_sums *s, const double *w, int nlat, int nlon, int M,
                           const float *ens, const float *o) {
    wx_score_add_ensemble_masked(s, w, NULL, nlat, nlon, M, ens, o);
}

void wx_score_add_ensemble_masked(wx_score_sums *s, const double *w, const float *mask, int nlat,
                                  int nlon, int M, const float *ens, const float *o) {
    double crps, var, mse;
    s->n_bad += ensemble_masked(w, mask, nlat, nlon, M, ens, o, &crps, &var, &mse);
    s->sum_crps += crps;
    s->sum_ens_var += var;
    s->sum_ens_mse += mse;
    s->members = M;
    s->n_ens++;
}

/* Category indicators of x (dry, light, heavy) as WB2 forms them: comparisons that are false
 * for NaN thresholds, so a value can be in none. */
static void seeps_cat(double x, double wet, double dry, int cat[3]) {
    cat[0] = x < dry;
    cat[1] = x > dry && x < wet;
    cat[2] = x >= wet;
}

double wx_metrics_seeps_point(double f, double o, double wet, double p1, double dry) {
    if (isnan(f) || isnan(o) || !(p1 < WX_SEEPS_MAX_P1) || !(p1 > WX_SEEPS_MIN_P1)) return NAN;
    const double S[3][3] = {{0, 1 / (1 - p1), 4 / (1 - p1)},
                            {1 / p1, 0, 3 / (1 - p1)},
                            {1 / p1 + 3 / (2 + p1), 3 / (2 + p1), 0}};
    int cf[3], co[3];
    /* in float32, as WB2 compares its float32 fields with the threshold (NumPy keeps a float32
     * array's precision against a Python float): a value of exactly (float)0.1 mm is not dry */
    double d32 = (float)dry;
    seeps_cat(f, wet, d32, cf);
    seeps_cat(o, wet, d32, co);
    double v = 0; /* WB2's contingency table dotted with the matrix */
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            if (cf[i] && co[j]) v += S[i][j];
    return 0.5 * v;
}

void wx_score_add_seeps_masked(wx_score_sums *s, const double *w, const float *mask, int nlat,
                               int nlon, const float *f, const float *o, const wx_seeps_clim *sc) {
    double num = 0, den = 0;
    for (int j = 0; j < nlat; j++) {
        double a = 0, n = 0;
        for (int i = 0; i < nlon; i++) {
            size_t k = (size_t)j * nlon + i;
            double mk = MASK_AT(mask, k);
            if (!(mk > 0)) continue;
            double v = wx_metrics_seeps_point(f[k], o[k], sc->wet[k], sc->p1[k], sc->dry);
            if (isnan(v)) continue;
            a += mk * v;
            n += mk;
        }
        num += w[j] * a;
        den += w[j] * n;
    }
    s->sum_seeps += den > 0 ? num / den : NAN;
    s->n_seeps++;
}

void wx_score_finish(const wx_score_sums *s, wx_scores *out) {
    *out = (wx_scores){.n = s->n, .n_ens = s->n_ens, .n_seeps = s->n_seeps};
    out->seeps = s->n_seeps > 0 ? s->sum_seeps / (double)s->n_seeps : NAN;
    double n = s->n > 0 ? (double)s->n : NAN, ne = s->n_ens > 0 ? (double)s->n_ens : NAN;
    out->rmse = s->rmse_per_init ? s->sum_rmse / n : sqrt(s->sum_mse / n);
    out->bias = s->vector ? NAN : s->sum_bias / n;
    out->mae = s->vector ? NAN : s->sum_mae / n;
    out->acc = s->n_acc > 0 ? s->sum_acc / (double)s->n_acc : NAN;
    out->crps = s->sum_crps / ne;
    out->spread = sqrt(s->sum_ens_var / ne);
    out->ens_mean_rmse = sqrt(s->sum_ens_mse / ne);
    out->spread_skill = out->spread / out->ens_mean_rmse;
    out->spread_skill_fair =
        s->members > 0 ? sqrt((s->members + 1.0) / s->members) * out->spread_skill : NAN;
}
