/* WeatherBench2 scores: hand-computed values on tiny grids, then an independent numpy
 * implementation (tests/ref/ref_metrics.py → fixtures/metrics.wxfx) on two grids with NaNs. */
#include <math.h>
#include <stdlib.h>

#include "infer/metrics.h"
#include "meteo/wx_grid.h"
#include "wx_fixture.h"
#include "wx_test.h"

static void test_weights_by_hand(void) {
    /* Rows 60, 0, −60: bounds 90, 30, −30, −90 → 0.5, 1, 0.5; mean 2/3 → 0.75, 1.5, 0.75. */
    wx_grid g;
    wx_grid_make(3, 2, 60, 60, 0, 180, &g);
    double w[3];
    wx_grid_area_weights(&g, w);
    double ref[3] = {0.75, 1.5, 0.75};
    WX_CHECK_CLOSE_F64("weights 3 rows", w, ref, 3, 0, 1e-15);
    /* 1° global grid: the pole row gets (1 − cos 0.5°)·181/2, small but not zero (cos would give 0). */
    wx_grid g1;
    wx_grid_global(1.0, &g1);
    double *w1 = malloc(sizeof(double) * 181);
    wx_grid_area_weights(&g1, w1);
    double pole = (1 - cos(0.5 * M_PI / 180)) * 181 / 2;
    WX_CHECK(fabs(w1[0] - pole) < 1e-15 && fabs(w1[180] - pole) < 1e-15, "pole weight %.6e vs %.6e",
             w1[0], pole);
    double s = 0;
    for (int j = 0; j < 181; j++) s += w1[j];
    WX_CHECK(fabs(s / 181 - 1) < 1e-14, "mean weight %.17g", s / 181);
    free(w1);
}

static void test_deterministic_by_hand(void) {
    const double w[3] = {0.75, 1.5, 0.75};
    float o[6] = {0, 0, 0, 0, 0, 0};
    float f1[6] = {1, 1, 2, 2, 3, 3}; /* errors 1, 2, 3 by row */
    float f2[6] = {1, 1, 1, 1, 1, 1};
    /* MSE = (0.75·1 + 1.5·4 + 0.75·9)/3 = 4.5; bias = (0.75 + 3 + 2.25)/3 = 2. */
    WX_CHECK(fabs(wx_metrics_mse(w, 3, 2, f1, o) - 4.5) < 1e-14, "mse");
    WX_CHECK(fabs(wx_metrics_bias(w, 3, 2, f1, o) - 2.0) < 1e-14, "bias");
    wx_score_sums s = {0};
    wx_score_add(&s, w, 3, 2, f1, o, NULL);
    wx_score_add(&s, w, 3, 2, f2, o, NULL);
    wx_scores r;
    wx_score_finish(&s, &r);
    /* sqrt after the time mean: sqrt((4.5+1)/2) = 1.6583, not (sqrt 4.5 + 1)/2 = 1.5607. */
    WX_CHECK(fabs(r.rmse - sqrt(2.75)) < 1e-14, "rmse %.17g", r.rmse);
    WX_CHECK(fabs(r.bias - 1.5) < 1e-14 && fabs(r.mae - 1.5) < 1e-14, "bias %g mae %g", r.bias,
             r.mae);
    WX_CHECK(isnan(r.acc) && r.n == 2, "no climatology: ACC NaN");

    /* Uncentred ACC: anomalies f' = [1,0;0,0;0,0], o' = [1,1;0,0;0,0] → 0.75/sqrt(0.75·1.5). */
    float c[6] = {5, 5, 5, 5, 5, 5}, fa[6] = {6, 5, 5, 5, 5, 5}, oa[6] = {6, 6, 5, 5, 5, 5};
    double acc = wx_metrics_acc(w, 3, 2, fa, oa, c);
    WX_CHECK(fabs(acc - 1 / sqrt(2.0)) < 1e-14, "acc %.17g", acc);
    /* A NaN truth point is skipped: drop the (0,1) point → f'·o' = 0.75, f'² = 0.75, o'² = 0.75. */
    oa[1] = NAN;
    WX_CHECK(fabs(wx_metrics_acc(w, 3, 2, fa, oa, c) - 1) < 1e-14, "acc with NaN");
    /* The climatology forecast has no anomaly: ACC undefined. */
    WX_CHECK(isnan(wx_metrics_acc(w, 3, 2, c, fa, c)), "acc of climatology is NaN");
}

static void test_ensemble_by_hand(void) {
    const double w[1] = {1};
    float o = 3, e3[3] = {2, 0, 1};
    double crps, var, mse;
    /* skill (3+2+1)/3 = 2; pairs Σ|xi−xj| = 8 over M(M−1) = 6; CRPS = 2 − ½·4/3 = 4/3. */
    wx_metrics_ensemble(w, 1, 1, 3, e3, &o, &crps, &var, &mse);
    WX_CHECK(fabs(crps - 4.0 / 3) < 1e-15 && fabs(var - 1) < 1e-15 && fabs(mse - 4) < 1e-15,
             "M=3 crps %g var %g mse %g", crps, var, mse);
    float o1 = 1, e2[2] = {0, 2};
    wx_metrics_ensemble(w, 1, 1, 2, e2, &o1, &crps, &var, &mse);
    WX_CHECK(fabs(crps) < 1e-15 && fabs(var - 2) < 1e-15 && mse == 0, "M=2 crps %g", crps);
    float e1 = 5;
    wx_metrics_ensemble(w, 1, 1, 1, &e1, &o, &crps, &var, NULL);
    WX_CHECK(crps == 2 && var == 0, "M=1: CRPS = MAE (%g)", crps);
    wx_score_sums s = {0};
    wx_score_add_ensemble(&s, w, 1, 1, 3, e3, &o);
    wx_scores r;
    wx_score_finish(&s, &r);
    /* spread 1, ensemble-mean RMSE 2 → 0.5; fair: sqrt(4/3)·0.5. */
    WX_CHECK(fabs(r.spread_skill - 0.5) < 1e-15 &&
                 fabs(r.spread_skill_fair - 0.5 * sqrt(4.0 / 3)) < 1e-15,
             "ssr %g fair %g", r.spread_skill, r.spread_skill_fair);
}

static void test_against_numpy(const wx_fixture *fx, const char *p, int nlon) {
    char k[64];
#define T_(name) (snprintf(k, sizeof k, "%s%s", p, name), wx_fixture_get(fx, k))
    const wx_fixture_tensor *lat = T_("lat"), *ft = T_("f"), *et = T_("ens");
    int H = (int)lat->size, T = (int)ft->dims[0], M = (int)et->dims[1];
    double dlat = lat->data[0] - lat->data[1];
    wx_grid g;
    WX_CHECK(wx_grid_make(H, nlon, lat->data[0], dlat, 0, 360.0 / nlon, &g) == WX_OK, "grid");
    double *w = malloc(sizeof(double) * H), *wrev = malloc(sizeof(double) * H);
    wx_grid_area_weights(&g, w);
    const wx_fixture_tensor *wi = T_("weights_increasing");
    for (int j = 0; j < H; j++) wrev[j] = wi->data[H - 1 - j]; /* back to north→south */
    snprintf(k, sizeof k, "%s weights", p);
    WX_CHECK_CLOSE_F64(k, w, wrev, H, 0, 1e-14);
    float *f = wx_fixture_f32(fx, (snprintf(k, sizeof k, "%sf", p), k));
    float *o = wx_fixture_f32(fx, (snprintf(k, sizeof k, "%so", p), k));
    float *c = wx_fixture_f32(fx, (snprintf(k, sizeof k, "%sc", p), k));
    float *e = wx_fixture_f32(fx, (snprintf(k, sizeof k, "%sens", p), k));
    size_t np = (size_t)H * nlon;
    double mse[8], acc[8], crps[8], var[8], emse[8];
    wx_score_sums s = {0};
    for (int t = 0; t < T; t++) {
        mse[t] = wx_metrics_mse(w, H, nlon, f + t * np, o + t * np);
        acc[t] = wx_metrics_acc(w, H, nlon, f + t * np, o + t * np, c + t * np);
        wx_metrics_ensemble(w, H, nlon, M, e + t * M * np, o + t * np, &crps[t], &var[t], &emse[t]);
        wx_score_add(&s, w, H, nlon, f + t * np, o + t * np, c + t * np);
        wx_score_add_ensemble(&s, w, H, nlon, M, e + t * M * np, o + t * np);
    }
    snprintf(k, sizeof k, "%s per-time mse", p);
    WX_CHECK_CLOSE_F64(k, mse, T_("mse_t")->data, T, 1e-12, 0);
    WX_CHECK_CLOSE_F64("per-time acc", acc, T_("acc_t")->data, T, 1e-12, 0);
    WX_CHECK_CLOSE_F64("per-time crps", crps, T_("crps_t")->data, T, 1e-12, 0);
    WX_CHECK_CLOSE_F64("per-time ens var", var, T_("var_t")->data, T, 1e-12, 0);
    WX_CHECK_CLOSE_F64("per-time ens-mean mse", emse, T_("emse_t")->data, T, 1e-12, 0);
    wx_scores r;
    wx_score_finish(&s, &r);
    double got[7] = {r.rmse, r.bias, r.mae, r.acc, r.crps, r.spread_skill, r.spread_skill_fair};
    double ref[7] = {T_("rmse")->data[0], T_("bias")->data[0], T_("mae")->data[0],
                     T_("acc")->data[0],  T_("crps")->data[0], T_("ssr")->data[0],
                     T_("ssr_fair")->data[0]};
    const char *names[7] = {"rmse", "bias", "mae", "acc", "crps", "ssr", "ssr_fair"};
    for (int i = 0; i < 7; i++)
        WX_CHECK(fabs(got[i] - ref[i]) <= 1e-12 * fabs(ref[i]), "%s%s: %.17g vs numpy %.17g", p,
                 names[i], got[i], ref[i]);
#undef T_
    free(f), free(o), free(c), free(e), free(w), free(wrev);
}

/* NVlabs FourCastNet's weights (numpy, written as in its utils/weighted_acc_rmse.py) on 720,
 * 721 and 19 rows; WB2's wind-vector RMSE; FourCastNet's per-time RMSE averaged over times and
 * its ACC against a fixed climatology, with its weights. */
static void test_fourcastnet_and_wind(const wx_fixture *fx) {
    static const int rows[3] = {720, 721, 19};
    for (int i = 0; i < 3; i++) {
        char k[64];
        snprintf(k, sizeof k, "fcn_weights_%d", rows[i]);
        double *w = malloc(sizeof(double) * (size_t)rows[i]);
        wx_metrics_fourcastnet_weights(rows[i], w);
        WX_CHECK_CLOSE_F64(k, w, wx_fixture_get(fx, k)->data, rows[i], 1e-13, 1e-13);
        free(w);
    }
    const wx_fixture_tensor *lat = wx_fixture_get(fx, "w_lat"), *fut = wx_fixture_get(fx, "w_fu");
    int H = (int)lat->size, T = (int)fut->dims[0], W = (int)fut->dims[2];
    wx_grid g;
    WX_CHECK(wx_grid_make(H, W, lat->data[0], lat->data[0] - lat->data[1], 0, 360.0 / W, &g) == WX_OK, "grid");
    double *w = malloc(sizeof(double) * H), *wf = malloc(sizeof(double) * H);
    wx_grid_area_weights(&g, w);
    wx_metrics_fourcastnet_weights(H, wf);
    float *fu = wx_fixture_f32(fx, "w_fu"), *fv = wx_fixture_f32(fx, "w_fv");
    float *ou = wx_fixture_f32(fx, "w_ou"), *ov = wx_fixture_f32(fx, "w_ov"), *cm = wx_fixture_f32(fx, "w_cm");
    size_t np = (size_t)H * W;
    wx_score_sums sv = {0}, sf = {.rmse_per_init = 1};
    for (int t = 0; t < T; t++) {
        wx_score_add_vector(&sv, w, H, W, fu + t * np, fv + t * np, ou + t * np, ov + t * np);
        wx_score_add(&sf, wf, H, W, fu + t * np, ou + t * np, cm);
    }
    wx_scores a, b;
    wx_score_finish(&sv, &a);
    wx_score_finish(&sf, &b);
    double rv = wx_fixture_scalar(fx, "w_vector_rmse"), rf = wx_fixture_scalar(fx, "w_fcn_rmse"),
           af = wx_fixture_scalar(fx, "w_fcn_acc");
    WX_CHECK(fabs(a.rmse - rv) <= 1e-12 * rv && a.n == T && isnan(a.bias) && isnan(a.mae),
             "wind-vector rmse %.17g vs numpy %.17g (n %lld; no bias/mae)", a.rmse, rv, (long long)a.n);
    WX_CHECK(fabs(b.rmse - rf) <= 1e-12 * rf, "fourcastnet rmse (mean of per-time) %.17g vs numpy %.17g",
             b.rmse, rf);
    WX_CHECK(fabs(b.acc - af) <= 1e-12, "fourcastnet acc %.17g vs numpy %.17g", b.acc, af);
    sf.rmse_per_init = 0;
    wx_score_finish(&sf, &b);
    WX_CHECK(fabs(b.rmse - rf) > 1e-6, "WB2 rmse (root after the mean) %.9g differs from the per-time mean %.9g",
             b.rmse, rf);
    free(fu), free(fv), free(ou), free(ov), free(cm), free(w), free(wf);
}

/* A forecast value that is NaN or infinite where the truth is present makes that time's scores
 * NaN and is counted (eval warns); where the truth is missing too the point is skipped. */
static void test_non_finite_forecast(void) {
    const double w[3] = {0.75, 1.5, 0.75};
    float o[6] = {0, 0, 0, 0, 0, 0}, c[6] = {1, 1, 1, 1, 1, 1};
    float f[6] = {1, 1, 2, 2, 3, 3};
    f[3] = NAN;
    wx_score_sums s = {0};
    wx_score_add(&s, w, 3, 2, f, o, c);
    wx_scores r;
    wx_score_finish(&s, &r);
    WX_CHECK(isnan(r.rmse) && isnan(r.bias) && isnan(r.mae) && isnan(r.acc) && s.n_bad == 1,
             "NaN forecast at a scored point: rmse %g bias %g mae %g acc %g, n_bad %lld", r.rmse,
             r.bias, r.mae, r.acc, (long long)s.n_bad);
    f[3] = INFINITY;
    WX_CHECK(isnan(wx_metrics_mse(w, 3, 2, f, o)) && isnan(wx_metrics_acc(w, 3, 2, f, o, c)),
             "an infinite forecast value: MSE and ACC NaN, not inf or a skipped point");
    o[3] = NAN; /* the truth is missing there too: skipped, the rest scored */
    wx_score_sums s2 = {0};
    wx_score_add(&s2, w, 3, 2, f, o, NULL);
    wx_score_finish(&s2, &r);
    /* rows: errors 1,1 | 2 (one point, weight 1.5) | 3,3: (0.75*2 + 1.5*4 + 0.75*18)/(1.5+1.5+1.5) */
    WX_CHECK(fabs(r.rmse - sqrt((1.5 + 6 + 13.5) / 4.5)) < 1e-14 && s2.n_bad == 0,
             "missing truth and forecast: skipped (rmse %.17g, n_bad %lld)", r.rmse, (long long)s2.n_bad);
    /* ensembles: one member infinite at the one point */
    const double w1[1] = {1};
    float o1 = 3, e3[3] = {2, INFINITY, 1};
    wx_score_sums se = {0};
    wx_score_add_ensemble(&se, w1, 1, 1, 3, e3, &o1);
    wx_score_finish(&se, &r);
    WX_CHECK(isnan(r.crps) && isnan(r.spread) && isnan(r.spread_skill) && se.n_bad == 1,
             "an infinite member: CRPS %g spread %g NaN, n_bad %lld", r.crps, r.spread, (long long)se.n_bad);
    /* wind vectors: v forecast NaN at a scored point */
    float fu[1] = {1}, fv[1] = {NAN}, ou[1] = {0}, ov[1] = {0};
    wx_score_sums sv = {0};
    wx_score_add_vector(&sv, w1, 1, 1, fu, fv, ou, ov);
    wx_score_finish(&sv, &r);
    WX_CHECK(isnan(r.rmse) && sv.n_bad == 1, "vector with a NaN forecast: rmse %g", r.rmse);
}

int main(void) {
    test_weights_by_hand();
    test_non_finite_forecast();
    test_deterministic_by_hand();
    test_ensemble_by_hand();
    wx_fixture *fx = wx_fixture_load("metrics");
    WX_CHECK(fx != NULL, "fixture metrics.wxfx");
    if (fx) {
        test_against_numpy(fx, "a_", 8);
        test_against_numpy(fx, "b_", 12);
        test_fourcastnet_and_wind(fx);
        wx_fixture_free(fx);
    }
    return wx_test_summary();
}
