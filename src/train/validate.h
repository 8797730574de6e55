/* Validation: autoregressive rollouts from the validation years' initial times, scored at the
 * validation leads by latitude-weighted RMSE per channel in physical units, plus the training loss
 * at one step (what selects the best checkpoint, as NVlabs' valid loss).
 *
 *   RMSE_c(lead) = sqrt( mean_samples  Σ_j w_j Σ_i (ŷ − y)²_{c,j,i} / (H·W) ) · std_c
 * with w the model grid's cell-area weights normalised to mean 1 (WeatherBench 2,
 * products-and-metrics.md §2.1) and the square root after the mean over initial times (ECMWF). */
#ifndef WX_TRAIN_VALIDATE_H
#define WX_TRAIN_VALIDATE_H

#include <stdint.h>

#include "train/dataset.h"
#include "train/train_model.h"

typedef struct {
    int nleads;
    int64_t leads[WX_TRAIN_MAX_LEADS]; /* model steps */
    int nch;
    double *rmse;     /* (nleads, nch) physical units */
    double loss;      /* mean one-step training loss */
    int64_t samples;
} wx_valid_result;

/* Scores up to max_samples (0 = all; else evenly spaced) validation samples in batches of
 * `batch`. out->rmse is allocated; free with wx_valid_result_free. Collective under MPI: each
 * rank scores its share of the samples and every rank gets the reduced result. */
wx_status wx_validate(wx_train_model *m, wx_dataset *ds, const wx_train_loss *loss,
                      const int64_t *leads, int nleads, int64_t max_samples, int64_t batch,
                      wx_valid_result *out);
void wx_valid_result_free(wx_valid_result *r);

#endif
