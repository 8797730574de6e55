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
    int reg;    /* clean-up registry slot + 1 (0: none) */
} wx_atomic_file;

/* Creates the temporary "<dir>/.<name>.tmp.<pid>" next to `path`, making <dir> (and its parents)
 * when absent, after removing the dead temporaries of `path` (wx_atomic_remove_dead). */
wx_status wx_atomic_open(wx_atomic_file *f, const char *path);
/* Removes the temporaries of `path` (".<name>.tmp.<pid>") that a killed run left (SIGKILL, a
 * crash: no handler ran): whose process no longer exists on this machine and which nothing has
 * written for an hour (on a folder shared between nodes the pid may be another machine's). A live
 * pid's is left alone. Each folder is read once per process. Returns how many were removed.
 * Thread-safe. */
int wx_atomic_remove_dead(const char *path);
/* 1 when process `pid` (taken from a temporary's name) no longer exists on this machine; 0 for
 * this process, a live one or a pid that cannot be asked about. */
int wx_fs_pid_gone(long pid);
/* fflush, fsync, fclose, rename onto the final name, fsync of the folder. On failure the
 * temporary is removed. Either way `f` is released. */
wx_status wx_atomic_commit(wx_atomic_file *f);
/* Closes and removes the temporary; the final name is untouched. Safe on a zeroed struct. */
void wx_atomic_abort(wx_atomic_file *f);

/* Whether the name `path` may be replaced by a new file: absent, a regular file, or a symbolic
 * link (the link is replaced, its target untouched). A device, FIFO, socket or folder is a usage
 * error: the rename that makes outputs atomic would replace it (as root, /dev/null itself). */
wx_status wx_output_replaceable(const char *path);
/* Whether `path` can be an output file: replaceable (above), its folder a writable folder or
 * absent under one (wx_atomic_open makes it). Usage errors naming `what` ("--output") and the
 * path, so a command refuses before any work. */
wx_status wx_output_path_check(const char *path, const char *what);
/* A usage error when output `out` is the same file as input `in` (same device and inode: also
 * through another spelling or a link), which the command would overwrite while reading it;
 * WX_OK when either does not exist or `in` is NULL. */
wx_status wx_output_not_input(const char *out, const char *in, const char *what);
/* Unlinks the entries of folder `dir` whose names `match(name, ctx)` accepts (an earlier run's
 * outputs); returns how many were removed (0 when dir does not exist). */
int wx_fs_unlink_matching(const char *dir, int (*match)(const char *name, void *ctx), void *ctx);
/* Whether `path` can be an output folder: a writable folder, or absent (created later) under a
 * writable one. Neither this nor wx_output_path_check accepts a wxcast archive folder as the
 * folder written in (its files could be replaced). */
wx_status wx_output_dir_check(const char *path, const char *what);
/* The same for an archive's own folder (ingest's output): an archive folder is fine, a folder
 * with another manifest.json is not. */
wx_status wx_output_archive_dir_check(const char *path, const char *what);
/* crc32 (zlib's) of the first `limit` bytes of a regular file (UINT64_MAX: all of it) and how many
 * there were (fewer when the file is shorter). A FIFO or device is an error, not a wait. */
wx_status wx_fs_crc32(const char *path, uint64_t limit, uint32_t *crc, uint64_t *bytes);
/* 1 when files a and b (either may be absent) lie in the same existing folder. */
int wx_fs_same_folder(const char *a, const char *b);
/* 1 when dir/manifest.json is a wxcast archive's. */
int wx_fs_is_archive_dir(const char *dir);

/* Clean-up of interrupted and failed runs (core/wx_fs_cleanup.c). The SIGINT/SIGTERM/SIGHUP
 * handler (installed once by the CLI) unlinks every registered temporary, removes the folders
 * this run created while they are empty, then re-raises the signal with its default action (exit
 * status 130/143). wx_atomic_open registers its temporary; a writer with its own temporary
 * (NetCDF) registers it with wx_fs_tmp_register (tree = 1: a temporary folder, removed with what
 * it holds) and unregisters it (slot from register) once renamed or removed. */
void wx_fs_cleanup_install(void);
int wx_fs_tmp_register(const char *path, int tree);
void wx_fs_tmp_unregister(int slot);
/* wx_mkdir_p notes each folder it creates; a failed run removes those still empty, newest first. */
void wx_fs_created_dir_note(const char *path);
void wx_fs_created_dirs_remove(void);

/* A path as a config file gives it: `p` itself when absolute (or `dir` is empty), else `dir`/`p`
 * (dir: the config file's folder). WX_ERR_USAGE naming both when it does not fit in cap. */
wx_status wx_path_join(const char *dir, const char *p, char *out, size_t cap);
/* Creates `path` and its missing parents (mode 0777 & ~umask); an existing folder is fine. */
wx_status wx_mkdir_p(const char *path);
/* The folder of file `path` (and its parents) when absent: outputs make their folder. */
wx_status wx_mkdir_parent(const char *path);
/* Size in bytes of a regular file. */
wx_status wx_file_size(const char *path, int64_t *size);
/* Reads a whole file into a new buffer (free() it) with a NUL after the last byte. */
wx_status wx_read_file(const char *path, char **buf, size_t *len);

/* What a file is, from its first bytes, when it is one of the kinds wxcast reads ("a GRIB file
 * (data: ...)", "a wxcast checkpoint (...)"), so that a file given in the wrong place is named as
 * what it is; NULL for anything else or an unreadable file (the caller reports its own error). */
const char *wx_fs_known_kind(const char *path);
/* The same from a file's first bytes already in memory (n: how many there are). */
const char *wx_fs_known_kind_bytes(const unsigned char *bytes, size_t n);
/* "a folder", "a FIFO (named pipe)", "a character device", ... for a stat st_mode. */
const char *wx_fs_mode_name(unsigned mode);

#endif
