#include "io/png_canvas.h"

#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "core/wx_fs.h"

void wx_canvas_init(wx_canvas *c, int w, int h, wx_rgb fill) {
    WX_ASSERT(w > 0 && h > 0);
    c->w = w;
    c->h = h;
    c->rgb = wx_malloc((size_t)w * h * 3);
    for (size_t i = 0; i < (size_t)w * h; i++) {
        c->rgb[3 * i] = fill.r;
        c->rgb[3 * i + 1] = fill.g;
        c->rgb[3 * i + 2] = fill.b;
    }
}

void wx_canvas_free(wx_canvas *c) {
    free(c->rgb);
    c->rgb = NULL;
}

void wx_canvas_set(wx_canvas *c, int x, int y, wx_rgb col) {
    if (x < 0 || y < 0 || x >= c->w || y >= c->h) return;
    uint8_t *p = c->rgb + 3 * ((size_t)y * c->w + x);
    p[0] = col.r, p[1] = col.g, p[2] = col.b;
}

wx_rgb wx_canvas_get(const wx_canvas *c, int x, int y) {
    const uint8_t *p = c->rgb + 3 * ((size_t)y * c->w + x);
    return (wx_rgb){p[0], p[1], p[2]};
}

void wx_canvas_rect(wx_canvas *c, int x0, int y0, int w, int h, wx_rgb col) {
    for (int y = y0; y < y0 + h; y++)
        for (int x = x0; x < x0 + w; x++) wx_canvas_set(c, x, y, col);
}

void wx_canvas_rect_outline(wx_canvas *c, int x0, int y0, int w, int h, wx_rgb col) {
    wx_canvas_rect(c, x0, y0, w, 1, col);
    wx_canvas_rect(c, x0, y0 + h - 1, w, 1, col);
    wx_canvas_rect(c, x0, y0, 1, h, col);
    wx_canvas_rect(c, x0 + w - 1, y0, 1, h, col);
}

void wx_canvas_line(wx_canvas *c, double x0, double y0, double x1, double y1, int width,
                    wx_rgb col) {
    /* DDA at one step per pixel along the longer axis; the brush is width×width. */
    double dx = x1 - x0, dy = y1 - y0;
    int n = (int)ceil(fmax(fabs(dx), fabs(dy)));
    if (n > 100000) return; /* a projection error, not a line worth drawing */
    int lo = -(width - 1) / 2, hi = width / 2;
    for (int k = 0; k <= n; k++) {
        double t = n ? (double)k / n : 0;
        int x = (int)floor(x0 + t * dx + 0.5), y = (int)floor(y0 + t * dy + 0.5);
        for (int a = lo; a <= hi; a++)
            for (int b = lo; b <= hi; b++) wx_canvas_set(c, x + a, y + b, col);
    }
}

/* Next code point of the font from UTF-8 text: ASCII as is, U+00B0 as 127, others '?'. */
static int next_glyph(const char **s) {
    const unsigned char *p = (const unsigned char *)*s;
    if (p[0] < 0x80) {
        (*s)++;
        return p[0];
    }
    if (p[0] == 0xC2 && p[1] == 0xB0) {
        *s += 2;
        return 127;
    }
    int len = p[0] >= 0xF0 ? 4 : p[0] >= 0xE0 ? 3 : 2;
    for (int i = 1; i < len; i++)
        if (!p[i]) len = i;
    *s += len;
    return '?';
}

int wx_canvas_text_width(const char *s, int scale) {
    int n = 0;
    while (*s) {
        next_glyph(&s);
        n++;
    }
    return n * WX_FONT_CELL_W * scale;
}

int wx_canvas_text(wx_canvas *c, int x, int y, const char *s, int scale, wx_rgb col) {
    int x0 = x;
    while (*s) {
        const uint8_t *g = wx_font_glyph(next_glyph(&s));
        for (int r = 0; r < 7; r++)
            for (int k = 0; k < 5; k++)
                if (g[r] & (0x10 >> k)) wx_canvas_rect(c, x + k * scale, y + r * scale, scale, scale, col);
        x += WX_FONT_CELL_W * scale;
    }
    return x - x0;
}

static void png_err(png_structp png, png_const_charp msg) {
    wx_error_set(WX_ERR_RUN, "libpng: %s", msg);
    longjmp(png_jmpbuf(png), 1);
}

static void png_warn(png_structp png, png_const_charp msg) { (void)png, (void)msg; }

wx_status wx_canvas_write_png(const wx_canvas *c, const char *path) {
    wx_atomic_file f = {0};
    WX_TRY(wx_atomic_open(&f, path));
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, png_err, png_warn);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_write_struct(&png, NULL);
        wx_atomic_abort(&f);
        return wx_error_set(WX_ERR_RUN, "%s: libpng could not allocate its write state", path);
    }
    /* volatile: read after longjmp. */
    png_bytep *volatile rows = wx_malloc(sizeof(png_bytep) * (size_t)c->h);
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(rows);
        wx_atomic_abort(&f);
        return wx_error_wrap(WX_ERR_RUN, "writing %s: ", path);
    }
    for (int y = 0; y < c->h; y++) rows[y] = c->rgb + (size_t)y * c->w * 3;
    png_init_io(png, f.fp);
    png_set_IHDR(png, info, (png_uint_32)c->w, (png_uint_32)c->h, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, 6);
    png_write_info(png, info);
    png_write_image(png, rows);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    free(rows);
    return wx_atomic_commit(&f);
}
