#include "synth/sw_forcing.h"

#include <math.h>

typedef struct { double lat, lon, rlat, rlon; } blob;        /* ellipse in degrees */
typedef struct { double lat0, lon0, lat1, lon1, width, height; } ridge;

/* Earth-like but idealised: the continents are ellipses, the ranges straight ridges. */
static const blob continents[] = {
    {45, 258, 20, 32},  /* north-west continent */
    {-15, 299, 26, 16}, /* south-west continent */
    {50, 75, 20, 65},   /* large northern continent */
    {5, 20, 30, 22},    /* equatorial continent */
    {-25, 135, 12, 20}, /* southern island continent */
    {72, 318, 10, 14},  /* polar island */
};
static const ridge ranges[] = {
    {28, 248, 62, 232, 5.0, 2600},   /* western cordillera */
    {-50, 289, 8, 282, 3.5, 3800},   /* southern cordillera */
    {32, 75, 34, 100, 6.0, 4500},    /* high plateau */
    {45, 5, 42, 48, 3.0, 1600},      /* mid-latitude chain */
    {-8, 36, 12, 38, 5.0, 1500},     /* equatorial highlands */
    {70, 316, 76, 320, 5.0, 2500},   /* polar ice dome */
};

static double wrap180(double d) {
    d = fmod(d + 540.0, 360.0) - 180.0;
    return d;
}

/* Distance (deg, longitude scaled by cos lat) from a point to a ridge segment. */
static double ridge_dist(const ridge *r, double lat, double lon) {
    double c = cos(lat * M_PI / 180.0);
    double ax = 0, ay = 0, bx = wrap180(r->lon1 - r->lon0) * c, by = r->lat1 - r->lat0;
    double px = wrap180(lon - r->lon0) * c, py = lat - r->lat0;
    double t = ((px - ax) * bx + (py - ay) * by) / (bx * bx + by * by);
    if (t < 0) t = 0;
    if (t > 1) t = 1;
    double dx = px - t * bx, dy = py - t * by;
    return sqrt(dx * dx + dy * dy);
}

void wx_sw_geo_eval(double lat, double lon, double *orog_m, double *land) {
    double l = 0;
    for (unsigned i = 0; i < sizeof continents / sizeof *continents; i++) {
        const blob *b = &continents[i];
        double dy = (lat - b->lat) / b->rlat, dx = wrap180(lon - b->lon) / b->rlon;
        double d = sqrt(dx * dx + dy * dy);
        double f = 0.5 * (1 - tanh((d - 1) / 0.06));
        if (f > l) l = f;
    }
    double ant = 0.5 * (1 - tanh((lat + 68) / 1.5)); /* polar southern continent */
    if (ant > l) l = ant;
    double h = 0;
    for (unsigned i = 0; i < sizeof ranges / sizeof *ranges; i++) {
        double d = ridge_dist(&ranges[i], lat, lon) / ranges[i].width;
        h += ranges[i].height * exp(-d * d);
    }
    double x = (lat + 90) / 22.0;
    if (x < 1) h += 2800 * (1 - x * x);
    h *= l; /* no mountains at sea */
    if (l < 1e-3) l = 0;
    *land = l;
    *orog_m = h;
}

double wx_sw_heq(double lat, double doy, double depth, double dh, double jet_lat, double swing,
                 double width) {
    /* s = +1 in mid-January: northern winter, jet equatorward and stronger in the north */
    double s = cos(2 * M_PI * (doy - 15.0) / 365.0);
    double latn = jet_lat - swing * s, lats = jet_lat + swing * s;
    double dhn = dh * (1 + 0.25 * s), dhs = dh * (1 - 0.25 * s);
    return depth - 0.5 * dhn * (1 + tanh((lat - latn) / width)) -
           0.5 * dhs * (1 + tanh((-lat - lats) / width));
}

double wx_sw_declination(double doy) { return 23.44 * M_PI / 180.0 * sin(2 * M_PI * (doy - 80.0) / 365.0); }

double wx_sw_cos_zenith(double lat, double lon, double doy, double utc) {
    double dec = wx_sw_declination(doy);
    double hour_angle = 2 * M_PI * utc / 86400.0 + lon - M_PI;
    double c = sin(lat) * sin(dec) + cos(lat) * cos(dec) * cos(hour_angle);
    return c > 0 ? c : 0;
}

double wx_sw_qsat(double t850) { return 68.0 * exp(0.068 * (t850 - 293.0)); }
