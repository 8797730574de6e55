/* Files: atomic output (write a temporary in the same folder, fsync, rename, fsync the folder, so
 * an interrupted run never leaves a file that looks complete), mkdir -p, size and whole-file read.
 * Errors are WX_ERR_RUN and name the path and the failing call; a caller for whom a missing
 * file is the user's mistake (a config named on the command line) re-labels it WX_ERR_USAGE. */
#ifndef WX_FS_H
#define WX_FS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/wx_error.h"

typedef struct {
    FILE *fp;   /* write here between open and commit/abort */
    char *path; /* final name */
    char *tmp;  /* "<dir>/.<name>.tmp.<pid>" */
} wx_atomic_file;

/* Creates the temporary "<dir>/.<name>.tmp.<pid>" next to `path` (the folder must exist). */
wx_status wx_atomic_open(wx_atomic_file *f, const char *path);
/* fflush, fsync, fclose, rename onto the final name, fsync of the folder. On failure the
 * temporary is removed. Either way `f` is released. */
wx_status wx_atomic_commit(wx_atomic_file *f);
/* Closes and removes the temporary; the final name is untouched. Safe on a zeroed struct. */
void wx_atomic_abort(wx_atomic_file *f);

/* Creates `path` and its missing parents (mode 0777 & ~umask); an existing folder is fine. */
wx_status wx_mkdir_p(const char *path);
/* Size in bytes of a regular file. */
wx_status wx_file_size(const char *path, int64_t *size);
/* Reads a whole file into a new buffer (free() it) with a NUL after the last byte. */
wx_status wx_read_file(const char *path, char **buf, size_t *len);

#endif
