#include "io/png_scorecard.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Reversed ColorBrewer RdBu, 11 classes (matplotlib's _RdBu_data read from the blue end). */
static const wx_rgb RDBU_R[11] = {{5, 48, 97},    {33, 102, 172},  {67, 147, 195}, {146, 197, 222},
                                  {209, 229, 240}, {247, 247, 247}, {253, 219, 199}, {244, 165, 130},
                                  {214, 96, 77},   {178, 24, 43},   {103, 0, 31}};
static const wx_rgb TEXT = {20, 20, 20}, WHITE = {255, 255, 255}, NONE = {220, 220, 220},
                    FRAME = {255, 255, 255};

enum { PAD = 10, CELL_H = 22, TITLE_SCALE = 2, BAR_W = 16, BAR_GAP = 14, BAR_LABELS = 44 };

wx_rgb wx_scorecard_colour(double pct, double limit) {
    if (!(limit > 0)) limit = 100;
    double x = (pct / limit + 1) / 2 * 10; /* 0..10 along the stops */
    if (!(x > 0)) x = 0;                   /* also NaN: callers colour those separately */
    if (x > 10) x = 10;
    int i = x >= 10 ? 9 : (int)x;
    double t = x - i;
    wx_rgb a = RDBU_R[i], b = RDBU_R[i + 1];
    return (wx_rgb){(uint8_t)lround(a.r + t * (b.r - a.r)), (uint8_t)lround(a.g + t * (b.g - a.g)),
                    (uint8_t)lround(a.b + t * (b.b - a.b))};
}

typedef struct {
    int x0, y0, cw, W, H, bar_x, bar_y, bar_h;
} layout;

static void layout_of(const wx_scorecard *s, layout *L) {
    int lw = 0, cw = 56;
    for (int r = 0; r < s->nrows; r++) {
        int w = wx_canvas_text_width(s->row_labels[r], 1);
        if (w > lw) lw = w;
    }
    for (int c = 0; c < s->ncols; c++) {
        int w = wx_canvas_text_width(s->col_labels[c], 1) + 8;
        if (w > cw) cw = w;
    }
    L->cw = cw;
    L->x0 = PAD + lw + 8;
    L->y0 = PAD + WX_FONT_CELL_H * TITLE_SCALE + 10 + WX_FONT_CELL_H + 6;
    int grid_h = s->nrows * CELL_H;
    L->bar_h = grid_h > 150 ? grid_h : 150;
    L->bar_x = L->x0 + s->ncols * cw + BAR_GAP;
    L->bar_y = L->y0;
    L->W = L->bar_x + BAR_W + BAR_LABELS + PAD;
    int tw = PAD * 2 + wx_canvas_text_width(s->title ? s->title : "", TITLE_SCALE);
    int gw = PAD * 2 + wx_canvas_text_width(s->legend ? s->legend : "", 1);
    if (tw > L->W) L->W = tw;
    if (gw > L->W) L->W = gw;
    L->H = L->y0 + L->bar_h + 8 + WX_FONT_CELL_H + PAD;
}

void wx_scorecard_cell_rect(const wx_scorecard *s, int row, int col, int *x, int *y, int *w, int *h) {
    layout L;
    layout_of(s, &L);
    *x = L.x0 + col * L.cw + 1, *y = L.y0 + row * CELL_H + 1;
    *w = L.cw - 2, *h = CELL_H - 2; /* a 1-pixel white gap frames every cell */
}

static void value_text(double v, char *b, size_t n) {
    if (!isfinite(v)) snprintf(b, n, "-");
    else if (fabs(v) < 0.5) snprintf(b, n, "0%%");
    else snprintf(b, n, "%+.0f%%", v);
}

wx_status wx_scorecard_png(const char *path, const wx_scorecard *s) {
    if (s->nrows < 1 || s->ncols < 1)
        return wx_error_set(WX_ERR_USAGE, "%s: scorecard needs at least one row and one column "
                                          "(%d x %d)", path, s->nrows, s->ncols);
    double lim = s->limit > 0 ? s->limit : 100;
    layout L;
    layout_of(s, &L);
    wx_canvas c;
    wx_canvas_init(&c, L.W, L.H, WHITE);
    if (s->title) wx_canvas_text(&c, PAD, PAD, s->title, TITLE_SCALE, TEXT);
    int hy = L.y0 - WX_FONT_CELL_H - 4;
    for (int k = 0; k < s->ncols; k++) {
        int tw = wx_canvas_text_width(s->col_labels[k], 1);
        wx_canvas_text(&c, L.x0 + k * L.cw + (L.cw - tw) / 2, hy, s->col_labels[k], 1, TEXT);
    }
    for (int r = 0; r < s->nrows; r++) {
        int ty = L.y0 + r * CELL_H + (CELL_H - 7) / 2;
        wx_canvas_text(&c, L.x0 - 8 - wx_canvas_text_width(s->row_labels[r], 1), ty, s->row_labels[r], 1, TEXT);
        for (int k = 0; k < s->ncols; k++) {
            double v = s->values[(size_t)r * (size_t)s->ncols + (size_t)k];
            int x, y, w, h;
            wx_scorecard_cell_rect(s, r, k, &x, &y, &w, &h);
            wx_rgb col = isfinite(v) ? wx_scorecard_colour(v, lim) : NONE;
            wx_canvas_rect(&c, x - 1, y - 1, w + 2, h + 2, FRAME);
            wx_canvas_rect(&c, x, y, w, h, col);
            /* dark cells get white text (luma below the middle grey) */
            double luma = 0.299 * col.r + 0.587 * col.g + 0.114 * col.b;
            char t[32];
            value_text(v, t, sizeof t);
            int tw = wx_canvas_text_width(t, 1);
            wx_canvas_text(&c, x + (w - tw) / 2, ty, t, 1, luma < 128 ? WHITE : TEXT);
        }
    }
    /* colour bar: +limit at the top */
    for (int y = 0; y < L.bar_h; y++) {
        double v = lim - 2 * lim * (y + 0.5) / L.bar_h;
        wx_canvas_rect(&c, L.bar_x, L.bar_y + y, BAR_W, 1, wx_scorecard_colour(v, lim));
    }
    wx_canvas_rect_outline(&c, L.bar_x - 1, L.bar_y - 1, BAR_W + 2, L.bar_h + 2, TEXT);
    for (int k = 0; k <= 4; k++) {
        double v = lim - k * lim / 2;
        int y = L.bar_y + (int)lround(k * (L.bar_h - 1) / 4.0);
        char t[32];
        snprintf(t, sizeof t, "%+.0f%%", v);
        if (k == 2) snprintf(t, sizeof t, "0%%");
        wx_canvas_rect(&c, L.bar_x + BAR_W, y, 4, 1, TEXT);
        wx_canvas_text(&c, L.bar_x + BAR_W + 6, y - 3, t, 1, TEXT);
    }
    if (s->legend) wx_canvas_text(&c, PAD, L.y0 + L.bar_h + 8, s->legend, 1, TEXT);
    wx_status st = wx_canvas_write_png(&c, path);
    wx_canvas_free(&c);
    return st;
}
