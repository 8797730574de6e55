/* Open-addressing hash map from an integer triple (a, b, c) to an int: eval's cells by (model,
 * channel, lead) and its "already scored" sets. Zero-initialise, free(m.s) when done. */
#ifndef WX_TMAP_H
#define WX_TMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int64_t a, b, c;
    int val, used; /* val: -1 when just added */
} wx_tmap_slot;

typedef struct {
    wx_tmap_slot *s;
    size_t cap, n;
} wx_tmap;

/* The slot of (a, b, c); add: created (val -1) when absent, else NULL when absent. */
wx_tmap_slot *wx_tmap_find(wx_tmap *m, int64_t a, int64_t b, int64_t c, int add);

#endif
