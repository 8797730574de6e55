/* An RGB drawing surface for maps and plots: pixels, lines, rectangles, text in a built-in 5×7
 * bitmap font (src/io/png_font.c, ASCII plus the degree sign), and atomic PNG output (libpng,
 * 8-bit RGB, written to a temporary in the same folder, fsynced, renamed). */
#ifndef WX_PNG_CANVAS_H
#define WX_PNG_CANVAS_H

#include <stdint.h>

#include "core/wx_error.h"

typedef struct {
    int w, h;
    uint8_t *rgb; /* [h, w, 3], row 0 at the top */
} wx_canvas;

typedef struct {
    uint8_t r, g, b;
} wx_rgb;

void wx_canvas_init(wx_canvas *c, int w, int h, wx_rgb fill);
void wx_canvas_free(wx_canvas *c);
void wx_canvas_set(wx_canvas *c, int x, int y, wx_rgb col); /* clipped */
wx_rgb wx_canvas_get(const wx_canvas *c, int x, int y);
void wx_canvas_rect(wx_canvas *c, int x0, int y0, int w, int h, wx_rgb col);
void wx_canvas_rect_outline(wx_canvas *c, int x0, int y0, int w, int h, wx_rgb col);
/* Line between two points in pixel coordinates (float, so polylines keep sub-pixel positions),
 * 1 pixel wide, or `width` pixels (a square brush). */
void wx_canvas_line(wx_canvas *c, double x0, double y0, double x1, double y1, int width,
                    wx_rgb col);

/* Text: UTF-8 with ASCII 32..126 and "°"; others draw as '?'. A glyph cell is 6×8 pixels times
 * `scale` (5×7 glyph plus spacing); (x, y) is the top-left corner. Returns the width drawn. */
int wx_canvas_text(wx_canvas *c, int x, int y, const char *s, int scale, wx_rgb col);
int wx_canvas_text_width(const char *s, int scale);
#define WX_FONT_CELL_W 6
#define WX_FONT_CELL_H 8
/* The 7 row bitmaps of a glyph (bit 4 = leftmost column), for code 32..127 (127 = '°'). */
const uint8_t *wx_font_glyph(int code);

/* Writes the canvas as an 8-bit RGB PNG atomically. */
wx_status wx_canvas_write_png(const wx_canvas *c, const char *path);

#endif
