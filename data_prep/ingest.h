/* Recipe → training archive (io/archive.h). The recipe schema is documented key by key in
 * configs/recipes/example.yaml. */
#ifndef WX_INGEST_H
#define WX_INGEST_H

#include <stdint.h>

#include "core/wx_error.h"
#include "io/archive.h"

typedef struct {
    const char *output;  /* overrides the recipe's `output` when non-NULL */
    int overwrite;       /* 1: a finished archive of another recipe there may be replaced */
    int64_t records_written; /* out: records decoded in this run (skipped shards excluded) */
    int64_t records_total;   /* out: records in the archive */
    int shards_skipped;      /* out: shards found complete from an earlier run */
    char archive_dir[4096];  /* out: the archive folder */
} wx_ingest_opts;

/* Builds the archive described by the recipe file. Recipe errors are WX_ERR_USAGE naming key and
 * line; data errors WX_ERR_RUN naming file, message and variable. For tests, the environment
 * variable WX_TEST_ABORT_AFTER_RECORDS=n makes the process _exit(3) after n records, mid-shard. */
wx_status wx_ingest_run(const char *recipe_path, wx_ingest_opts *opts);

/* `wxcast verify`'s re-check of an archive's statistics: the manifest's mean/std/min/max/diff_std
 * recomputed from the stored records exactly as ingest computes them (the same per-record
 * moments, merged in record order: the same bits), so an edited or damaged statistics block is
 * an error naming the channel and both values. Feed every record in order; finish compares and
 * frees. An archive without statistics is accepted (begin returns NULL). */
typedef struct wx_stats_check wx_stats_check;
wx_stats_check *wx_stats_check_begin(const wx_archive_meta *m);
void wx_stats_check_record(wx_stats_check *s, int64_t index, const float *rec);
wx_status wx_stats_check_finish(wx_stats_check *s, const char *dir);
/* Frees without comparing (a record failed to read: the statistics cannot be judged). */
void wx_stats_check_free(wx_stats_check *s);

#endif
