/* Scorecard PNG as WeatherBench2's visualize_scorecard draws it: a grid of rows (variables) ×
 * columns (lead times) whose cells are coloured by a relative score in percent,
 * 100·(score − baseline)/baseline, on matplotlib's RdBu_r clipped at ±limit (blue: lower than
 * the baseline, i.e. better for RMSE; red: worse; #f7f7f7 at 0), with the value printed in the
 * cell, a title, a colour bar with ticks and a legend line. Cells without a value (NaN: no score
 * or a zero baseline) are light grey with "-". Written atomically through png_canvas.
 *
 * RdBu_r is the reversed ColorBrewer RdBu 11-class scale, linearly interpolated between its 11
 * evenly spaced stops (matplotlib's LinearSegmentedColormap "RdBu_r"):
 *   #053061 #2166ac #4393c3 #92c5de #d1e5f0 #f7f7f7 #fddbc7 #f4a582 #d6604d #b2182b #67001f */
#ifndef WX_PNG_SCORECARD_H
#define WX_PNG_SCORECARD_H

#include "core/wx_error.h"
#include "io/png_canvas.h"

typedef struct {
    const char *title;  /* top line */
    const char *legend; /* line under the colour bar, e.g. "blue: lower RMSE than persistence" */
    int nrows, ncols;
    const char *const *row_labels; /* [nrows] */
    const char *const *col_labels; /* [ncols] */
    const double *values;          /* [nrows, ncols] percent; NaN: no value */
    double limit;                  /* colour scale ±limit percent; 0: 100 */
} wx_scorecard;

/* The RdBu_r colour of `pct` on the ±limit scale (clipped at the ends). */
wx_rgb wx_scorecard_colour(double pct, double limit);

/* Pixel rectangle of cell (row, col) in the PNG wx_scorecard_png writes for s. */
void wx_scorecard_cell_rect(const wx_scorecard *s, int row, int col, int *x, int *y, int *w, int *h);

wx_status wx_scorecard_png(const char *path, const wx_scorecard *s);

#endif
