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

wx_status wx_syn_diag_init(wx_syn_diag *d, const wx_sw_model *m, const wx_grid *g) {
    memset(d, 0, sizeof *d);
    d->grid = *g;
    int nl = m->par.nlat, nx = m->par.nlon;
    size_t n = (size_t)g->nlat * g->nlon;
    d->row = wx_malloc(sizeof(int) * g->nlat);
    d->row_w = wx_malloc(sizeof(double) * g->nlat);
    d->col = wx_malloc(sizeof(int) * g->nlon);
    d->col_w = wx_malloc(sizeof(double) * g->nlon);
    d->orog = wx_malloc(sizeof(double) * n);
    d->land = wx_malloc(sizeof(double) * n);
    d->buf = wx_malloc(sizeof(double) * 6 * nl * nx);
    double lat_n = asin(m->sp.mu[0]) * 180 / M_PI;
    for (int j = 0; j < g->nlat; j++) {
        double lat = wx_grid_lat(g, j);
        if (lat >= lat_n) { /* between the pole and the first row */
            d->row[j] = -1;
            d->row_w[j] = (lat - lat_n) / (90 - lat_n);
        } else if (lat <= -lat_n) {
            d->row[j] = nl - 1;
            d->row_w[j] = (-lat_n - lat) / (90 - lat_n);
        } else {
            int r = 0;
            while (r < nl - 2 && asin(m->sp.mu[r + 1]) * 180 / M_PI > lat) r++;
            double la0 = asin(m->sp.mu[r]) * 180 / M_PI, la1 = asin(m->sp.mu[r + 1]) * 180 / M_PI;
            d->row[j] = r;
            d->row_w[j] = (la0 - lat) / (la0 - la1);
        }
    }
    for (int i = 0; i < g->nlon; i++) {
        double x = wx_grid_lon(g, i) / 360.0 * nx;
        int i0 = (int)floor(x);
        d->col_w[i] = x - i0;
        d->col[i] = ((i0 % nx) + nx) % nx;
    }
    for (int j = 0; j < g->nlat; j++)
        for (int i = 0; i < g->nlon; i++)
            wx_sw_geo_eval(wx_grid_lat(g, j), wx_grid_lon(g, i), &d->orog[(size_t)j * g->nlon + i],
                           &d->land[(size_t)j * g->nlon + i]);
    return WX_OK;
}

void wx_syn_diag_free(wx_syn_diag *d) {
    free(d->row);
    free(d->row_w);
    free(d->col);
    free(d->col_w);
    free(d->orog);
    free(d->land);
    free(d->buf);
    memset(d, 0, sizeof *d);
}

/* Bilinear interpolation from the Gaussian grid (nl rows north→south, lon 2πi/nx) to the output
 * grid. Beyond the outermost Gaussian rows scalars go linearly to the zonal mean of that row at
 * the pole; wind components (vector = 1) are held constant instead. */
static void interp(const wx_syn_diag *d, int nl, int nx, const double *src, int vector, float *dst) {
    const wx_grid *g = &d->grid;
    double pole_n = 0, pole_s = 0;
    for (int i = 0; i < nx; i++) {
        pole_n += src[i];
        pole_s += src[(size_t)(nl - 1) * nx + i];
    }
    pole_n /= nx;
    pole_s /= nx;
    for (int j = 0; j < g->nlat; j++) {
        int r = d->row[j];
        double t = d->row_w[j];
        const double *a, *b;
        double pole = 0, wa, wb;
        if (r < 0 || r == nl - 1) { /* polar cap: the outermost row and the pole */
            a = src + (size_t)(r < 0 ? 0 : nl - 1) * nx;
            b = NULL;
            pole = r < 0 ? pole_n : pole_s;
            wa = vector ? 1 : 1 - t;
            wb = vector ? 0 : t;
        } else {
            a = src + (size_t)r * nx;
            b = a + nx;
            wa = 1 - t;
            wb = t;
        }
        float *out = dst + (size_t)j * g->nlon;
        for (int i = 0; i < g->nlon; i++) {
            int i0 = d->col[i], i1 = i0 + 1 == nx ? 0 : i0 + 1;
            double fx = d->col_w[i];
            double va = (1 - fx) * a[i0] + fx * a[i1];
            double vb = b ? (1 - fx) * b[i0] + fx * b[i1] : pole;
            out[i] = (float)(wa * va + wb * vb);
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

void wx_syn_diagnose(wx_syn_diag *d, wx_sw_model *m, double utc, double doy, float **out) {
    const wx_sw_params *p = &m->par;
    const wx_grid *g = &d->grid;
    int ng = m->ngrid, nx = p->nlon, nl = p->nlat;
    wx_sw_model_grid(m);
    double *z = d->buf, *u = z + ng, *v = u + ng, *ul = v + ng, *vl = ul + ng, *ml = vl + ng;
    wx_sw_model_z500(m, z);
    /* 500 hPa winds weighted like z500 (so they stay geostrophic with it); near-surface winds
     * and pressure from the lower layer; temperature from the upper-layer thickness (the
     * interface height is the model's cold air) */
    double w = p->z_weight, mean_ml = 0;
    for (int k = 0; k < ng; k++) {
        double c = m->sp.coslat[k / nx];
        u[k] = (w * m->ucos[0][k] + (1 - w) * m->ucos[1][k]) / c;
        v[k] = (w * m->vcos[0][k] + (1 - w) * m->vcos[1][k]) / c;
        ul[k] = m->ucos[1][k] / c;
        vl[k] = m->vcos[1][k] / c;
        ml[k] = WX_SW_GRAV * (m->gh[0][k] + m->gh[1][k] + m->gorog[k]) - p->g_red * m->gh[0][k];
        mean_ml += m->sp.wts[k / nx] * ml[k];
    }
    mean_ml /= 2.0 * nx;
    interp(d, nl, nx, z, 0, out[WX_SYN_Z500]);
    interp(d, nl, nx, u, 1, out[WX_SYN_U500]);
    interp(d, nl, nx, v, 1, out[WX_SYN_V500]);
    interp(d, nl, nx, ul, 1, out[WX_SYN_U10]);
    interp(d, nl, nx, vl, 1, out[WX_SYN_V10]);
    interp(d, nl, nx, ml, 0, out[WX_SYN_MSL]);
    interp(d, nl, nx, m->gh[0], 0, out[WX_SYN_T850]);
    interp(d, nl, nx, m->gq, 0, out[WX_SYN_TCWV]);
    interp(d, nl, nx, m->precip_acc, 0, out[WX_SYN_TP]);
    memset(m->precip_acc, 0, sizeof(double) * ng);
    double dec = wx_sw_declination(doy), sdec = sin(dec) / sin(23.44 * M_PI / 180);
    for (int j = 0; j < g->nlat; j++) {
        size_t row = (size_t)j * g->nlon;
        double phi = wx_grid_lat(g, j) * M_PI / 180, cphi = cos(phi);
        /* seasonal insolation anomaly: + in the summer hemisphere, 0 at the equator */
        double season = sin(phi) * sdec;
        for (int i = 0; i < g->nlon; i++) {
            size_t k = row + i;
            double h = d->orog[k], land = d->land[k];
            out[WX_SYN_Z500][k] = (float)(WX_SW_GRAV * p->z_mean + out[WX_SYN_Z500][k]);
            double t850 = 276.0 + p->g_red * out[WX_SYN_T850][k] / p->t_scale;
            out[WX_SYN_T850][k] = (float)t850;
            out[WX_SYN_MSL][k] = (float)(101325.0 + 1.2 * (out[WX_SYN_MSL][k] - mean_ml));
            double ured = 0.8 * (1 - 0.3 * land);
            out[WX_SYN_U10][k] *= (float)ured;
            out[WX_SYN_V10][k] *= (float)ured;
            double local = 2 * M_PI * (utc / 86400.0) + wx_grid_lon(g, i) * M_PI / 180 - M_PI;
            /* daily maximum near 15 local time; the land amplitude shrinks toward the poles */
            double diurnal = (0.4 + 5.5 * land) * cos(local - 2 * M_PI * 3 / 24) * cphi;
            out[WX_SYN_T2M][k] = (float)(t850 + 10.0 - 0.0065 * h + land * 9.0 * season + diurnal);
            double q = out[WX_SYN_TCWV][k];
            out[WX_SYN_TCWV][k] = (float)(q > 0 ? q : 0);
            double tp = out[WX_SYN_TP][k] / 1000.0; /* kg m⁻² → m of water */
            out[WX_SYN_TP][k] = (float)(tp > 0 ? tp : 0);
        }
    }
}
