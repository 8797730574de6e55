/* Line plots as PNG (score vs lead time, several models on one plot): axes with nice ticks, grid,
 * one coloured polyline with point markers per series, a legend column on the right, title and
 * axis labels in the built-in font. Written atomically. */
#ifndef WX_PNG_PLOT_H
#define WX_PNG_PLOT_H

#include "core/wx_error.h"

typedef struct {
    const char *label;
    int n;
    const double *x, *y; /* [n]; points with a non-finite y are skipped (the line breaks) */
    int dashed;          /* 1: dashed line (baselines) */
} wx_plot_series;

typedef struct {
    const char *title, *xlabel, *ylabel;
    int width, height; /* 0: 760 × 440 */
} wx_plot_opts;

wx_status wx_plot_lines_png(const char *path, const wx_plot_opts *o, int nseries,
                            const wx_plot_series *s);

#endif
