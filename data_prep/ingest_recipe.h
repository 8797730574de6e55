/* Parsed ingest recipe (internal to data_prep/ingest*.c). */
#ifndef WX_INGEST_RECIPE_H
#define WX_INGEST_RECIPE_H

#include <stdint.h>

#include "core/wx_yaml.h"
#include "io/wx_source.h"

typedef struct {
    char name[64];
    char param[64];
    const wx_catalogue_entry *entry;
    wx_level_kind kind;
    double level;      /* hPa, 0 when single-level */
    int64_t accum_s;   /* 0: take the field as is; >0: sum hourly accumulations over this window */
} wx_recipe_var;

typedef struct {
    wx_yaml *root;
    char path[4096];       /* the recipe file (for messages) */
    char dir[4096];        /* recipe folder: relative paths start here */
    int nsources;
    char **sources;        /* expanded file paths, sorted per pattern */
    int nvars;
    wx_recipe_var *vars;
    wx_time start, end;
    int64_t step;
    double resolution;     /* 0: native grid */
    int drop_south_pole;
    int member;
    wx_missing_policy missing;
    int has_stats;
    wx_time stats_start, stats_end;
    int climatology;
    int climatology_explicit; /* the recipe sets `climatology:` (else the size rule decides) */
    int clim_hour_step;       /* climatology_hour_step (default 6) */
    char output[4096];
    double shard_mb;
    int f16;
    char *text;            /* recipe text (for the ingest key) */
} wx_recipe;

wx_status wx_recipe_load(const char *path, const char *output_override, wx_recipe *r);
void wx_recipe_free(wx_recipe *r);

#endif
