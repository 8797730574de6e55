/* NumPy .npz archives as numpy.savez writes them (the format of DeepMind's published GraphCast
 * checkpoints, graphcast/checkpoint.py dump): a zip file whose members "<key>.npy" are stored
 * (not deflated) .npy arrays (io/npy.h).
 *
 *   members | central directory (one record per member: method, crc32, sizes, local offset,
 *   name; ZIP64 extra fields when numpy's writer forced them) | [ZIP64 end record + locator] |
 *   end-of-central-directory record (found by scanning back over a comment of up to 64 KiB)
 *
 * The whole file is read into memory; each member's data is checked against its crc32 when the
 * archive is opened. Every error is WX_ERR_RUN naming the file and, for a member, its key. */
#ifndef WX_IO_NPZ_H
#define WX_IO_NPZ_H

#include <stddef.h>

#include "core/wx_error.h"
#include "io/npy.h"

typedef struct {
    char *key;  /* member name without ".npy" */
    size_t off; /* its .npy bytes in the file buffer */
    size_t len;
} wx_npz_member;

typedef struct {
    char *path;
    char *buf;
    size_t len;
    int count;
    wx_npz_member *m; /* (count), archive order */
} wx_npz;

/* 1 when the file at path starts with a zip local-file-header signature ("PK\3\4"), 0 when not or
 * when it cannot be read (the caller's reader reports that). */
int wx_npz_is_zip(const char *path);

/* Reads and indexes path. Errors: not a zip / truncated (no end record), central directory past
 * the end, a compressed or encrypted member (np.savez_compressed: unsupported), sizes that do
 * not agree, a crc32 mismatch, the same key twice. On error z is empty. */
wx_status wx_npz_open(const char *path, wx_npz *z);

/* Member index of key, or -1. */
int wx_npz_find(const wx_npz *z, const char *key);

/* Member i as an array (flags: io/npy.h WX_NPY_*); errors name "FILE: member 'KEY'". */
wx_status wx_npz_array(const wx_npz *z, int i, int flags, wx_npy *out);

void wx_npz_free(wx_npz *z);

#endif
