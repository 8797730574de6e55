/* The DATA section's channel and grid lines (train/checkpoint.h). %.17g: doubles read back
 * exactly, so a forecast normalises with the trainer's own statistics. */
#include "train/checkpoint.h"

/* A double-quoted YAML scalar: \\ and \" escaped, so any path or name reads back as written. */
static void put_quoted(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

void wx_ckpt_data_channels(FILE *f, const char *key, const wx_ckpt_channel *c, int n) {
    fprintf(f, "%s:\n", key);
    for (int i = 0; i < n; i++) {
        fputs("  - {name: ", f);
        put_quoted(f, c[i].name);
        fputs(", units: ", f);
        put_quoted(f, c[i].units);
        fprintf(f, ", mean: %.17g, std: %.17g, diff_std: %.17g", c[i].mean, c[i].std,
                c[i].diff_std);
        if (c[i].accum_s > 0) fprintf(f, ", accumulation_s: %lld", (long long)c[i].accum_s);
        fputs("}\n", f);
    }
}

void wx_ckpt_data_string(FILE *f, const char *key, const char *value) {
    fprintf(f, "%s: ", key);
    put_quoted(f, value);
    fputc('\n', f);
}

void wx_ckpt_data_grid(FILE *f, const wx_grid *g) {
    fprintf(f, "grid: {nlat: %d, nlon: %d, lat0: %.17g, dlat: %.17g, lon0: %.17g, dlon: %.17g}\n",
            g->nlat, g->nlon, g->lat0, g->dlat, g->lon0, g->dlon);
}
