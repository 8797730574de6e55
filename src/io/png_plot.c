#include "io/png_plot.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "io/png_canvas.h"

static const wx_rgb TEXT = {20, 20, 20}, GRID = {225, 225, 225};
/* Matplotlib's tab10 colours, then greys for the dashed baselines. */
static const wx_rgb PALETTE[10] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},
                                   {148, 103, 189}, {140, 86, 75},  {227, 119, 194}, {188, 189, 34},
                                   {23, 190, 207},  {127, 127, 127}};
static const wx_rgb BASE[2] = {{90, 90, 90}, {160, 160, 160}};

static double nice(double range, int target) {
    double raw = range / target, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static void label(double v, double step, char *b, int n) {
    int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    if (fabs(v) < 1e-9 * step) v = 0;
    snprintf(b, (size_t)n, "%.*f", dec, v);
}

wx_status wx_plot_lines_png(const char *path, const wx_plot_opts *o, int ns,
                            const wx_plot_series *s) {
    int W = o->width > 0 ? o->width : 760, H = o->height > 0 ? o->height : 440;
    int px0 = 70, py0 = 36, pw = W - px0 - 170, ph = H - py0 - 50;
    if (pw < 100 || ph < 80) return wx_error_set(WX_ERR_USAGE, "plot %dx%d pixels is too small", W, H);
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    for (int k = 0; k < ns; k++)
        for (int i = 0; i < s[k].n; i++)
            if (isfinite(s[k].y[i]) && isfinite(s[k].x[i])) {
                xmin = fmin(xmin, s[k].x[i]), xmax = fmax(xmax, s[k].x[i]);
                ymin = fmin(ymin, s[k].y[i]), ymax = fmax(ymax, s[k].y[i]);
            }
    if (!isfinite(xmin)) xmin = 0, xmax = 1, ymin = 0, ymax = 1;
    if (xmax - xmin < 1e-12) xmax = xmin + 1;
    if (ymax - ymin < 1e-12 * fmax(1, fabs(ymax))) ymin -= 0.5, ymax += 0.5;
    double xs = nice(xmax - xmin, 8), ys = nice(ymax - ymin, 6);
    xmin = floor(xmin / xs) * xs, xmax = ceil(xmax / xs) * xs;
    ymin = floor(ymin / ys) * ys, ymax = ceil(ymax / ys) * ys;
    wx_canvas c;
    wx_canvas_init(&c, W, H, (wx_rgb){255, 255, 255});
#define X(v) (px0 + ((v)-xmin) / (xmax - xmin) * pw)
#define Y(v) (py0 + ph - ((v)-ymin) / (ymax - ymin) * ph)
    char t[64];
    for (double v = xmin; v <= xmax + 1e-9 * xs; v += xs) {
        int x = (int)lround(X(v));
        wx_canvas_rect(&c, x, py0, 1, ph, GRID);
        wx_canvas_rect(&c, x, py0 + ph, 1, 4, TEXT);
        label(v, xs, t, sizeof t);
        wx_canvas_text(&c, x - wx_canvas_text_width(t, 1) / 2, py0 + ph + 7, t, 1, TEXT);
    }
    for (double v = ymin; v <= ymax + 1e-9 * ys; v += ys) {
        int y = (int)lround(Y(v));
        wx_canvas_rect(&c, px0, y, pw, 1, GRID);
        wx_canvas_rect(&c, px0 - 4, y, 4, 1, TEXT);
        label(v, ys, t, sizeof t);
        wx_canvas_text(&c, px0 - 7 - wx_canvas_text_width(t, 1), y - 3, t, 1, TEXT);
    }
    wx_canvas_rect_outline(&c, px0, py0, pw + 1, ph + 1, TEXT);
    int nb = 0, nm = 0;
    for (int k = 0; k < ns; k++) {
        wx_rgb col = s[k].dashed ? BASE[nb++ % 2] : PALETTE[nm++ % 10];
        double lx = NAN, ly = NAN;
        for (int i = 0; i < s[k].n; i++) {
            if (!isfinite(s[k].y[i])) {
                lx = ly = NAN;
                continue;
            }
            double x = X(s[k].x[i]), y = Y(s[k].y[i]);
            if (isfinite(lx)) {
                if (!s[k].dashed) {
                    wx_canvas_line(&c, lx, ly, x, y, 2, col);
                } else { /* dashes of 6 px with 4 px gaps */
                    double len = hypot(x - lx, y - ly);
                    for (double a = 0; a < len; a += 10) {
                        double b = fmin(a + 6, len);
                        wx_canvas_line(&c, lx + (x - lx) * a / len, ly + (y - ly) * a / len,
                                       lx + (x - lx) * b / len, ly + (y - ly) * b / len, 2, col);
                    }
                }
            }
            wx_canvas_rect(&c, (int)lround(x) - 2, (int)lround(y) - 2, 5, 5, col);
            lx = x, ly = y;
        }
        int ly0 = py0 + 6 + 16 * k;
        wx_canvas_rect(&c, px0 + pw + 14, ly0 + 3, 18, 2, col);
        wx_canvas_text(&c, px0 + pw + 38, ly0, s[k].label, 1, TEXT);
    }
#undef X
#undef Y
    if (o->title) wx_canvas_text(&c, px0, 10, o->title, 2, TEXT);
    if (o->xlabel)
        wx_canvas_text(&c, px0 + pw / 2 - wx_canvas_text_width(o->xlabel, 1) / 2, H - 18, o->xlabel, 1, TEXT);
    if (o->ylabel) wx_canvas_text(&c, 4, py0 - 12, o->ylabel, 1, TEXT);
    wx_status st = wx_canvas_write_png(&c, path);
    wx_canvas_free(&c);
    return st;
}
