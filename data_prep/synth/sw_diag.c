#include "synth/sw_diag.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synth/sw_forcing.h"

const wx_syn_channel wx_syn_channels[WX_SYN_NCHAN] = {
    {"z500", "z", 500}, {"u500", "u", 500}, {"v500", "v", 500},   {"t850", "t", 850},
    {"msl", "msl", 0},  {"u10", "10u", 0},  {"v10", "10v", 0},    {"t2m", "2t", 0},
    {"tcwv", "tcwv", 0}, {"tp", "tp", 0},
};

/* Bilinear interpolation from the Gaussian grid (rows north→south, lon 2πi/nlon) to g. Beyond
 * the outermost Gaussian rows scalars go linearly to the zonal mean of that row at the pole
 * (vector = 0: wind components are held constant instead). */
static void interp(const wx_sw_model *m, const double *src, const wx_grid *g, int vector,
                   float *dst) {
    int nl = m->par.nlat, nx = m->par.nlon;
    double pole_n = 0, pole_s = 0;
    for (int i = 0; i < nx; i++) {
        pole_n += src[i] / nx;
        pole_s += src[(nl - 1) * nx + i] / nx;
    }
    double lat_n = asin(m->sp.mu[0]) * 180 / M_PI, lat_s = -lat_n;
    for (int j = 0; j < g->nlat; j++) {
        double lat = wx_grid_lat(g, j);
        for (int i = 0; i < g->nlon; i++) {
            double x = wx_grid_lon(g, i) / 360.0 * nx;
            int i0 = (int)floor(x);
            double fx = x - i0;
            i0 = ((i0 % nx) + nx) % nx;
            int i1 = (i0 + 1) % nx;
#define ROW(r) ((1 - fx) * src[(r) * nx + i0] + fx * src[(r) * nx + i1])
            double v;
            if (lat >= lat_n) {
                double t = (lat - lat_n) / (90 - lat_n);
                v = vector ? ROW(0) : (1 - t) * ROW(0) + t * pole_n;
            } else if (lat <= lat_s) {
                double t = (lat_s - lat) / (90 + lat_s);
                v = vector ? ROW(nl - 1) : (1 - t) * ROW(nl - 1) + t * pole_s;
            } else {
                int r = 0;
                while (r < nl - 2 && asin(m->sp.mu[r + 1]) * 180 / M_PI > lat) r++;
                double la0 = asin(m->sp.mu[r]) * 180 / M_PI, la1 = asin(m->sp.mu[r + 1]) * 180 / M_PI;
                double t = (la0 - lat) / (la0 - la1);
                v = (1 - t) * ROW(r) + t * ROW(r + 1);
            }
#undef ROW
            dst[(size_t)j * g->nlon + i] = (float)v;
        }
    }
}

void wx_syn_static(const wx_grid *g, float *z, float *lsm) {
    for (int j = 0; j < g->nlat; j++)
        for (int i = 0; i < g->nlon; i++) {
            double h, l;
            wx_sw_geo_eval(wx_grid_lat(g, j), wx_grid_lon(g, i), &h, &l);
            z[(size_t)j * g->nlon + i] = (float)(WX_SW_GRAV * h);
            lsm[(size_t)j * g->nlon + i] = (float)l;
        }
}

void wx_syn_diagnose(wx_sw_model *m, const wx_grid *g, double utc, double doy, float **out) {
    const wx_sw_params *p = &m->par;
    int ng = m->ngrid, nx = p->nlon;
    wx_sw_model_grid(m);
    double *u = m->w1, *v = m->w2;
    for (int k = 0; k < ng; k++) {
        double c = m->sp.coslat[k / nx];
        u[k] = m->ucos[k] / c;
        v[k] = m->vcos[k] / c;
    }
    interp(m, m->gphi, g, 0, out[WX_SYN_Z500]);
    interp(m, u, g, 1, out[WX_SYN_U500]);
    interp(m, v, g, 1, out[WX_SYN_V500]);
    interp(m, m->gq, g, 0, out[WX_SYN_TCWV]);
    interp(m, m->precip_acc, g, 0, out[WX_SYN_TP]);
    memset(m->precip_acc, 0, sizeof(double) * ng);
    double dec = wx_sw_declination(doy);
    for (int j = 0; j < g->nlat; j++) {
        size_t row = (size_t)j * g->nlon;
        double lat = wx_grid_lat(g, j), phi = lat * M_PI / 180;
        double zm = 0, um = 0;
        for (int i = 0; i < g->nlon; i++) {
            zm += out[WX_SYN_Z500][row + i] / g->nlon;
            um += out[WX_SYN_U500][row + i] / g->nlon;
        }
        /* seasonal insolation anomaly: + in the summer hemisphere, 0 at the equator */
        double season = sin(phi) * sin(dec) / sin(23.44 * M_PI / 180);
        for (int i = 0; i < g->nlon; i++) {
            size_t k = row + i;
            double h, land;
            wx_sw_geo_eval(lat, wx_grid_lon(g, i), &h, &land);
            double zanom = out[WX_SYN_Z500][k] / WX_SW_GRAV; /* height anomaly (m) */
            double z = p->z_mean + zanom;
            double t850 = wx_sw_t850(z, p->z_mean);
            out[WX_SYN_Z500][k] = (float)(WX_SW_GRAV * z);
            out[WX_SYN_T850][k] = (float)t850;
            /* equivalent-barotropic surface pressure: eddies of z500 plus the zonal belts of
             * the subtropical highs and subpolar lows */
            out[WX_SYN_MSL][k] = (float)(101325.0 + 9.0 * (zanom - (zm / WX_SW_GRAV)) -
                                         600.0 * cos(6 * phi));
            double ured = 0.45 * (1 - 0.3 * land);
            out[WX_SYN_U10][k] = (float)(ured * (out[WX_SYN_U500][k] - um) - 6.0 * cos(3 * phi));
            out[WX_SYN_V10][k] = (float)(ured * out[WX_SYN_V500][k]);
            double local = 2 * M_PI * (utc / 86400.0) + wx_grid_lon(g, i) * M_PI / 180 - M_PI;
            /* daily maximum near 15 local time; the land amplitude shrinks toward the poles */
            double diurnal = (0.4 + 5.5 * land) * cos(local - 2 * M_PI * 3 / 24) * cos(phi);
            out[WX_SYN_T2M][k] = (float)(t850 + 10.0 - 0.0065 * h + land * 9.0 * season + diurnal);
            double q = out[WX_SYN_TCWV][k];
            out[WX_SYN_TCWV][k] = (float)(q > 0 ? q : 0);
            double tp = out[WX_SYN_TP][k] / 1000.0; /* kg m⁻² → m of water */
            out[WX_SYN_TP][k] = (float)(tp > 0 ? tp : 0);
        }
    }
}
