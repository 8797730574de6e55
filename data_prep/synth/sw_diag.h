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

/* Computes every channel at the model's current state into out[c] ([nlat, nlon] each) and
 * resets the precipitation accumulator. `utc` seconds of day and `doy` (365-day year) set the
 * diurnal and seasonal terms of t2m. */
void wx_syn_diagnose(wx_sw_model *m, const wx_grid *g, double utc, double doy, float **out);
/* Static fields: surface geopotential (m² s⁻²) and land-sea mask (0..1), [nlat, nlon]. */
void wx_syn_static(const wx_grid *g, float *z, float *lsm);

#endif
