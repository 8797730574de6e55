#include "wx_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef WX_FIXTURE_DIR
#error "WX_FIXTURE_DIR must be defined by the build"
#endif

static int rd(FILE *fp, void *p, size_t n) { return fread(p, 1, n, fp) == n; }

wx_fixture *wx_fixture_load(const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.wxfx", WX_FIXTURE_DIR, name);
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        printf("fixture %s: cannot open (regenerate with tests/ref/make_fixtures.sh)\n", path);
        return NULL;
    }
    char magic[4];
    uint32_t version, count;
    if (!rd(fp, magic, 4) || memcmp(magic, "WXFX", 4) || !rd(fp, &version, 4) || version != 1 ||
        !rd(fp, &count, 4)) {
        printf("fixture %s: bad header\n", path);
        fclose(fp);
        return NULL;
    }
    wx_fixture *f = calloc(1, sizeof *f);
    f->count = (int)count;
    f->t = calloc(count, sizeof *f->t);
    for (uint32_t i = 0; i < count; i++) {
        wx_fixture_tensor *t = &f->t[i];
        uint32_t len, ndim;
        if (!rd(fp, &len, 4) || len > 4096) goto bad;
        t->name = calloc(len + 1, 1);
        if (!rd(fp, t->name, len) || !rd(fp, &ndim, 4) || ndim > 8) goto bad;
        t->ndim = (int)ndim;
        t->size = 1;
        for (uint32_t d = 0; d < ndim; d++) {
            if (!rd(fp, &t->dims[d], 8)) goto bad;
            t->size *= t->dims[d];
        }
        t->data = malloc(sizeof(double) * (t->size ? t->size : 1));
        if (!rd(fp, t->data, sizeof(double) * t->size)) goto bad;
    }
    fclose(fp);
    return f;
bad:
    printf("fixture %s: truncated or malformed\n", path);
    fclose(fp);
    wx_fixture_free(f);
    return NULL;
}

const wx_fixture_tensor *wx_fixture_get(const wx_fixture *f, const char *name) {
    for (int i = 0; i < f->count; i++)
        if (!strcmp(f->t[i].name, name)) return &f->t[i];
    printf("fixture: no tensor named '%s'\n", name);
    exit(1);
}

float *wx_fixture_f32(const wx_fixture *f, const char *name) {
    const wx_fixture_tensor *t = wx_fixture_get(f, name);
    float *o = malloc(sizeof(float) * (t->size ? t->size : 1));
    for (int64_t i = 0; i < t->size; i++) o[i] = (float)t->data[i];
    return o;
}

int32_t *wx_fixture_i32(const wx_fixture *f, const char *name) {
    const wx_fixture_tensor *t = wx_fixture_get(f, name);
    int32_t *o = malloc(sizeof(int32_t) * (t->size ? t->size : 1));
    for (int64_t i = 0; i < t->size; i++) o[i] = (int32_t)t->data[i];
    return o;
}

double wx_fixture_scalar(const wx_fixture *f, const char *name) {
    return wx_fixture_get(f, name)->data[0];
}

void wx_fixture_free(wx_fixture *f) {
    if (!f) return;
    for (int i = 0; i < f->count; i++) {
        free(f->t[i].name);
        free(f->t[i].data);
    }
    free(f->t);
    free(f);
}

double wx_fixture_rel_err(const float *a, const double *b, int64_t n) {
    /* a(n) computed, b(n) reference */
    double e = 0, s = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (d > e) e = d;
        if (fabs(b[i]) > s) s = fabs(b[i]);
    }
    return s > 0 ? e / s : e;
}
