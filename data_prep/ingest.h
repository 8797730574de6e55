/* Recipe → training archive (io/archive.h). The recipe schema is documented key by key in
 * configs/recipes/example.yaml. */
#ifndef WX_INGEST_H
#define WX_INGEST_H

#include <stdint.h>

#include "core/wx_error.h"

typedef struct {
    const char *output;  /* overrides the recipe's `output` when non-NULL */
    int64_t records_written; /* out: records decoded in this run (skipped shards excluded) */
    int64_t records_total;   /* out: records in the archive */
    int shards_skipped;      /* out: shards found complete from an earlier run */
    char archive_dir[4096];  /* out: the archive folder */
} wx_ingest_opts;

/* Builds the archive described by the recipe file. Recipe errors are WX_ERR_USAGE naming key and
 * line; data errors WX_ERR_RUN naming file, message and variable. For tests, the environment
 * variable WX_TEST_ABORT_AFTER_RECORDS=n makes the process _exit(3) after n records, mid-shard. */
wx_status wx_ingest_run(const char *recipe_path, wx_ingest_opts *opts);

#endif
