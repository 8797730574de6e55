/* Training archive: a folder with manifest.json and shard files in the FFRecord layout
 * (docs/archive-format.md gives every byte). One record = all channels of one valid time,
 * channel-major: [channels, nlat, nlon], float32 (or float16 on disk).
 *
 * Writing is shard by shard, each shard atomic (temporary + fsync + rename); the manifest is
 * written last, so a folder without manifest.json is an unfinished ingest and a rerun skips the
 * shards that already exist with the same ingest key. Reading serves random batches of any list of
 * time indices from a persistent pool of pread workers (started at open, joined at close),
 * checks crc32 per record (optional), can use O_DIRECT with aligned buffers, and can prefetch the
 * next batch in the background through the same pool. */
#ifndef WX_ARCHIVE_H
#define WX_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>

#include "core/wx_error.h"
#include "meteo/wx_catalogue.h"
#include "meteo/wx_grid.h"
#include "meteo/wx_time.h"

#define WX_ARCHIVE_VERSION 1
#define WX_ARCHIVE_ALIGN 4096
#define WX_SHARD_HEADER_BYTES 72

typedef enum { WX_DTYPE_F32 = 0, WX_DTYPE_F16 = 1 } wx_archive_dtype;

typedef struct {
    char name[64];  /* channel name from the recipe ("z500") */
    char param[64]; /* catalogue shortName ("z") */
    wx_level_kind kind;
    double level;   /* hPa, 0 for single-level */
    char units[32];
    int64_t accum_s; /* accumulation window, 0 = instantaneous */
} wx_archive_channel;

typedef struct {
    int nchan;
    wx_archive_channel *chan; /* [nchan] */
    wx_grid grid;
    wx_time start;
    int64_t step;    /* seconds */
    int64_t count;   /* number of times (records) */
    wx_archive_dtype dtype;
    int64_t records_per_shard;
    uint64_t key;    /* ingest fingerprint: recipe + sources; shards of another key are rewritten */
    /* Statistics (per channel, over [stats_start, stats_end]); has_stats = 0 when absent. */
    int has_stats;
    wx_time stats_start, stats_end;
    double *mean, *std, *min, *max, *diff_std; /* [nchan] each */
    int64_t diff_step; /* seconds between the differenced fields (6 h) */
    char climatology[64]; /* file beside the manifest, "" when none */
    /* Checksums recorded by ingest (0 in archives written before 2026-12-01): of the climatology
     * file's header (which covers its slab crcs), and of the manifest's own description of the
     * data (wx_archive_meta_crc), so that a hand-edited channel, level, unit, grid or time
     * range is found by every reader instead of mislabelling the records. */
    uint32_t clim_crc, meta_crc;
} wx_archive_meta;

/* crc32 of the manifest's description of the data: key, dtype, channels (name, param, level
 * type and level, units, accumulation), grid, times, shard layout, statistics window and the
 * climatology's name and clim_crc. */
uint32_t wx_archive_meta_crc(const wx_archive_meta *m);

int64_t wx_archive_points(const wx_archive_meta *m);      /* nlat*nlon */
int64_t wx_archive_record_bytes(const wx_archive_meta *m); /* nchan*points*dtype size */
int64_t wx_archive_record_stride(const wx_archive_meta *m); /* record bytes rounded up to 4096 */
int wx_archive_shard_count(const wx_archive_meta *m);
/* Records per shard for a target shard size in bytes (at least 1). */
int64_t wx_archive_records_for_size(const wx_archive_meta *m, double shard_bytes);
void wx_archive_meta_free(wx_archive_meta *m);
void wx_archive_shard_name(int shard, char *buf, int len); /* "shard-00003.wxr" */

/* Writer of one shard: records are put in order; commit writes the tables and the header and
 * renames the temporary onto the final name. */
typedef struct wx_shard_writer wx_shard_writer;
wx_status wx_shard_writer_open(const char *dir, int shard, const wx_archive_meta *m,
                               wx_shard_writer **out);
/* record: [nchan, nlat, nlon] float32 */
wx_status wx_shard_writer_put(wx_shard_writer *w, const float *record);
/* Appends n records already in the on-disk layout, in one write: each record's record_bytes in
 * the shard's dtype followed by zero padding up to record_stride; crcs are their crc32 over
 * record_bytes (the caller computes them, e.g. in parallel, with zlib's crc32/crc32_combine).
 * records: [n * record_stride] bytes; crcs: [n] */
wx_status wx_shard_writer_put_raw(wx_shard_writer *w, const void *records, int64_t n,
                                  const uint32_t *crcs);
/* put_raw on the writer's own thread: returns once the previously queued batch is written (its
 * write error is returned here) and this one is queued, so the caller can fill another buffer
 * meanwhile. `records` must stay untouched until the next put*, wait, commit or abort returns.
 * Written with O_DIRECT (no page-cache copy) when records is 4096-aligned and the filesystem
 * accepts it, else buffered (wx_shard_writer_buffered_note says why). */
wx_status wx_shard_writer_put_async(wx_shard_writer *w, const void *records, int64_t n,
                                    const uint32_t *crcs);
/* Waits for the queued batch; its write error, if any. */
wx_status wx_shard_writer_wait(wx_shard_writer *w);
/* "" while put_async writes bypass the page cache, else one line saying why they do not. */
const char *wx_shard_writer_buffered_note(const wx_shard_writer *w);
/* Waits for queued writes, writes the tables, fsyncs and renames (atomic). */
wx_status wx_shard_writer_commit(wx_shard_writer *w);
void wx_shard_writer_abort(wx_shard_writer *w);
/* 1 when shard file `shard` exists with a valid header for this meta (key, counts, sizes). */
int wx_shard_is_complete(const char *dir, int shard, const wx_archive_meta *m);

/* Writes manifest.json atomically (the archive is complete from then on). */
wx_status wx_archive_write_manifest(const char *dir, const wx_archive_meta *m);
/* Reads manifest.json. */
wx_status wx_archive_read_manifest(const char *dir, wx_archive_meta *m);

/* Reader. */
typedef struct {
    int threads;    /* pread workers (default 4) */
    int check_crc;  /* 1: verify crc32 of every record read (default) */
    int o_direct;   /* 1: open shards with O_DIRECT (falls back with an error if unsupported) */
} wx_archive_opts;

typedef struct wx_archive wx_archive;
wx_status wx_archive_open(const char *dir, const wx_archive_opts *opts, wx_archive **out);
void wx_archive_close(wx_archive *a);
const wx_archive_meta *wx_archive_meta_of(const wx_archive *a);
/* Reads records for times[0..n) (time indices 0..count-1, any order, repeats allowed) as float32.
 * out: [n, nchan, nlat, nlon] */
wx_status wx_archive_read(wx_archive *a, const int64_t *times, int n, float *out);
/* Starts reading the batch in the background (one at a time); wx_archive_wait returns its status.
 * `times` is copied; `out` must stay valid until wait returns. */
wx_status wx_archive_prefetch(wx_archive *a, const int64_t *times, int n, float *out);
wx_status wx_archive_wait(wx_archive *a);
/* Reads every record of every shard and checks header and record checksums; on failure the
 * message names the shard file and record. */
wx_status wx_archive_verify(const char *dir, int64_t *records_checked);
/* As wx_archive_verify, handing each good record (decoded, [nchan, points]) to each(ctx, index,
 * rec) in record order (verify's statistics re-check). */
wx_status wx_archive_verify_each(const char *dir, int64_t *records_checked,
                                 void (*each)(void *ctx, int64_t index, const float *rec), void *ctx);

/* zlib's crc32(crc, data, len), the same values, by PCLMULQDQ folding where the CPU has it
 * (several times faster than zlib 1.2's tables). Start with crc = 0. */
uint32_t wx_archive_crc32(uint32_t crc, const void *data, size_t len);

/* float16 conversion (IEEE binary16, round to nearest even). */
uint16_t wx_f32_to_f16(float f);
float wx_f16_to_f32(uint16_t h);

#endif
