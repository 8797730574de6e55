/* Output channels of the synthetic world on a regular lat-lon grid (rows north→south, both poles
 * included), named and scaled like ERA5. */
#ifndef WX_SW_DIAG_H
#define WX_SW_DIAG_H

#include "meteo/wx_grid.h"
#include "synth/sw_model.h"

enum {
    WX_SYN_Z500, WX_SYN_U500, WX_SYN_V500, WX_SYN_T850, WX_SYN_MSL, WX_SYN_U10, WX_SYN_V10,
    WX_SYN_T2M, WX_SYN_TCWV, WX_SYN_TP, WX_SYN_NCHAN
};

typedef struct {
    const char *channel;  /* "z500", "t2m": the name in configs */
    const char *var;      /* catalogue name: "z", "2t" */
    int level;            /* hPa, 0 for single levels */
} wx_syn_channel;

extern const wx_syn_channel wx_syn_channels[WX_SYN_NCHAN];

/* What the diagnostics precompute for one output grid: bilinear interpolation weights from the
 * Gaussian grid and the static geography at the output points. */
typedef struct {
    wx_grid grid;
    int *row;        /* (grid.nlat) upper Gaussian row; −1 north of the first, nlat−1 south of the last */
    double *row_w;   /* (grid.nlat) weight of the lower row (or of the pole value beyond the rows) */
    int *col;        /* (grid.nlon) left Gaussian column */
    double *col_w;   /* (grid.nlon) weight of the right column */
    double *orog, *land; /* (grid.nlat, grid.nlon) */
    double *buf;     /* (6, model nlat, nlon) model-grid scratch */
} wx_syn_diag;

wx_status wx_syn_diag_init(wx_syn_diag *d, const wx_sw_model *m, const wx_grid *g);
void wx_syn_diag_free(wx_syn_diag *d);

/* Computes every channel at the model's current state into out[c] ([nlat, nlon] each) and
 * resets the precipitation accumulator. `utc` seconds of day and `doy` (365-day year) set the
 * diurnal and seasonal terms of t2m. */
void wx_syn_diagnose(wx_syn_diag *d, wx_sw_model *m, double utc, double doy, float **out);
/* Static fields: surface geopotential (m² s⁻²) and land-sea mask (0..1), [nlat, nlon]. */
void wx_syn_static(const wx_grid *g, float *z, float *lsm);

#endif
