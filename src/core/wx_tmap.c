/* The triple map of wx_tmap.h (moved from infer/eval.c). */
#include "core/wx_tmap.h"

#include <stdlib.h>

#include "core/wx_error.h"

static size_t th(int64_t a, int64_t b, int64_t c) {
    uint64_t h = (uint64_t)a * 0x9E3779B97F4A7C15ULL ^ (uint64_t)b * 0xC2B2AE3D27D4EB4FULL ^
                 (uint64_t)c * 0x165667B19E3779F9ULL;
    return (size_t)(h ^ (h >> 29));
}

wx_tmap_slot *wx_tmap_find(wx_tmap *m, int64_t a, int64_t b, int64_t c, int add) {
    if (add && (m->n + 1) * 2 > m->cap) {
        wx_tmap old = *m;
        m->cap = old.cap ? old.cap * 2 : 256;
        m->s = wx_calloc(m->cap, sizeof(wx_tmap_slot));
        m->n = 0;
        for (size_t i = 0; i < old.cap; i++)
            if (old.s[i].used) *wx_tmap_find(m, old.s[i].a, old.s[i].b, old.s[i].c, 1) = old.s[i];
        free(old.s);
    }
    if (!m->cap) return NULL;
    for (size_t i = th(a, b, c) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        wx_tmap_slot *p = &m->s[i];
        if (p->used && p->a == a && p->b == b && p->c == c) return p;
        if (!p->used) {
            if (!add) return NULL;
            *p = (wx_tmap_slot){a, b, c, -1, 1};
            m->n++;
            return p;
        }
    }
}
