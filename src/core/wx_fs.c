#include "core/wx_fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "core/wx_log.h"

/* Splits "a/b/c.nc" into dir "a/b" and name "c.nc" (dir "." when there is no slash). */
static void split_path(const char *path, char **dir, const char **name) {
    const char *slash = strrchr(path, '/');
    if (!slash) {
        *dir = wx_strdup(".");
        *name = path;
    } else if (slash == path) {
        *dir = wx_strdup("/");
        *name = slash + 1;
    } else {
        size_t n = (size_t)(slash - path);
        *dir = wx_malloc(n + 1);
        memcpy(*dir, path, n);
        (*dir)[n] = 0;
        *name = slash + 1;
    }
}

const char *wx_fs_mode_name(unsigned mode) {
    mode_t m = (mode_t)mode;
    return S_ISDIR(m) ? "a folder" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
         : S_ISFIFO(m) ? "a FIFO (named pipe)" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

wx_status wx_output_replaceable(const char *path) {
    struct stat sb;
    if (lstat(path, &sb) != 0 || S_ISREG(sb.st_mode) || S_ISLNK(sb.st_mode)) return WX_OK;
    return wx_error_set(WX_ERR_USAGE, "%s: exists and is %s; outputs are written to a new file "
                        "renamed over the name, which would replace it: name a regular file",
                        path, wx_fs_mode_name(sb.st_mode));
}

int wx_fs_pid_gone(long pid) {
    return pid > 0 && pid != (long)getpid() && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* The folders this process writes in, each read once (an export writes hundreds of maps and an
 * ingest thousands of shards into one folder: a read per file would be quadratic), with the
 * dead temporaries found there. Only the temporary of a name being written is removed: a
 * ".notes.md.tmp.123" of the user's is not ours to judge. */
typedef struct {
    dev_t dev;
    ino_t ino;
    char **dead; /* (ndead) ".<name>.tmp.<pid>" of gone pids, untouched for an hour; NULL once gone */
    int ndead;
} swept_dir;
static swept_dir swept[64];
static int nswept;
static pthread_mutex_t swept_lock = PTHREAD_MUTEX_INITIALIZER;

static swept_dir *sweep(const char *dir) {
    struct stat ds;
    if (stat(dir, &ds) != 0) return NULL;
    for (int k = 0; k < nswept; k++)
        if (swept[k].dev == ds.st_dev && swept[k].ino == ds.st_ino) return &swept[k];
    /* past 64 folders (no command writes in that many) later ones are not swept: their dead
     * temporaries stay until a run that writes there first */
    if (nswept == (int)(sizeof swept / sizeof swept[0])) return NULL;
    swept_dir *sd = &swept[nswept++];
    memset(sd, 0, sizeof *sd);
    sd->dev = ds.st_dev, sd->ino = ds.st_ino;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        const char *tag = e->d_name[0] == '.' ? strstr(e->d_name + 1, ".tmp.") : NULL;
        char *end;
        long pid = tag ? strtol(tag + 5, &end, 10) : 0;
        if (!tag || *end || end == tag + 5 || !wx_fs_pid_gone(pid)) continue;
        char tmp[8192];
        snprintf(tmp, sizeof tmp, "%s/%s", dir, e->d_name);
        /* a pid is only this machine's: on a folder shared between nodes a recent temporary may
         * be another node's live writer, so only those untouched for an hour go */
        struct stat sb;
        if (lstat(tmp, &sb) != 0 || !S_ISREG(sb.st_mode) || time(NULL) - sb.st_mtime < 3600) continue;
        sd->dead = realloc(sd->dead, sizeof(char *) * (size_t)(sd->ndead + 1));
        WX_ASSERT(sd->dead != NULL);
        sd->dead[sd->ndead++] = wx_strdup(e->d_name);
    }
    if (d) closedir(d);
    return sd;
}

int wx_atomic_remove_dead(const char *path) {
    char *dir;
    const char *name;
    split_path(path, &dir, &name);
    char prefix[512];
    size_t np = (size_t)snprintf(prefix, sizeof prefix, ".%s.tmp.", name);
    int n = 0;
    pthread_mutex_lock(&swept_lock);
    swept_dir *sd = np < sizeof prefix ? sweep(dir) : NULL;
    for (int k = 0; sd && k < sd->ndead; k++) {
        if (!sd->dead[k] || strncmp(sd->dead[k], prefix, np) || strchr(sd->dead[k] + np, '.')) continue;
        char tmp[8192];
        snprintf(tmp, sizeof tmp, "%s/%s", dir, sd->dead[k]);
        if (unlink(tmp) == 0) {
            n++;
            wx_log_info("removed %s, left by a run (pid %s) that no longer exists", tmp, sd->dead[k] + np);
        }
        free(sd->dead[k]);
        sd->dead[k] = NULL;
    }
    pthread_mutex_unlock(&swept_lock);
    free(dir);
    return n;
}

wx_status wx_atomic_open(wx_atomic_file *f, const char *path) {
    memset(f, 0, sizeof *f);
    WX_TRY(wx_output_replaceable(path));
    char *dir;
    const char *name;
    split_path(path, &dir, &name);
    if (!name[0]) {
        free(dir);
        return wx_error_set(WX_ERR_USAGE, "%s: output path names a folder, not a file", path);
    }
    wx_status made = wx_mkdir_parent(path);
    if (made != WX_OK) {
        free(dir);
        return made;
    }
    wx_atomic_remove_dead(path); /* a SIGKILLed run's temporary of this output */
    size_t n = strlen(dir) + strlen(name) + 48;
    f->tmp = wx_malloc(n);
    snprintf(f->tmp, n, "%s/.%s.tmp.%ld", dir, name, (long)getpid());
    free(dir);
    f->fp = fopen(f->tmp, "wb");
    if (!f->fp) {
        wx_status s = wx_error_set(WX_ERR_RUN, "%s: cannot create temporary file %s: %s", path,
                                   f->tmp, strerror(errno));
        free(f->tmp);
        f->tmp = NULL;
        return s;
    }
    f->path = wx_strdup(path);
    f->reg = wx_fs_tmp_register(f->tmp, 0) + 1;
    return WX_OK;
}

static void release(wx_atomic_file *f) {
    if (f->reg > 0) wx_fs_tmp_unregister(f->reg - 1);
    free(f->path);
    free(f->tmp);
    memset(f, 0, sizeof *f);
}

/* fsync of the folder makes the rename itself durable. */
static wx_status sync_dir(const char *path) {
    char *dir;
    const char *name;
    split_path(path, &dir, &name);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) {
        wx_status s = wx_error_set(WX_ERR_RUN, "%s: cannot open folder %s to sync: %s", path, dir,
                                   strerror(errno));
        free(dir);
        return s;
    }
    /* Some file systems (e.g. some network mounts) refuse fsync on folders: not a data error. */
    if (fsync(fd) != 0 && errno != EINVAL && errno != EROFS && errno != ENOTSUP) {
        wx_status s = wx_error_set(WX_ERR_RUN, "%s: fsync of folder %s failed: %s", path, dir,
                                   strerror(errno));
        close(fd);
        free(dir);
        return s;
    }
    close(fd);
    free(dir);
    return WX_OK;
}

wx_status wx_atomic_commit(wx_atomic_file *f) {
    WX_ASSERT(f->fp && f->tmp && f->path);
    const char *what = NULL;
    int err = 0;
    if (fflush(f->fp) != 0 || ferror(f->fp)) { what = "write"; err = errno; }
    else if (fsync(fileno(f->fp)) != 0) { what = "fsync"; err = errno; }
    int close_rc = fclose(f->fp);
    f->fp = NULL;
    if (!what && close_rc != 0) { what = "close"; err = errno; }
    if (!what && rename(f->tmp, f->path) != 0) { what = "rename"; err = errno; }
    if (what) {
        wx_status s = wx_error_set(WX_ERR_RUN, "%s: %s of temporary file %s failed: %s", f->path,
                                   what, f->tmp, strerror(err ? err : EIO));
        unlink(f->tmp);
        release(f);
        return s;
    }
    wx_status s = sync_dir(f->path);
    release(f);
    return s;
}

void wx_atomic_abort(wx_atomic_file *f) {
    if (f->fp) fclose(f->fp);
    if (f->tmp) unlink(f->tmp);
    release(f);
}

wx_status wx_mkdir_parent(const char *path) {
    char *dir;
    const char *name;
    split_path(path, &dir, &name);
    struct stat sb;
    wx_status st = stat(dir, &sb) != 0 && errno == ENOENT ? wx_mkdir_p(dir) : WX_OK;
    free(dir);
    return st;
}

wx_status wx_mkdir_p(const char *path) {
    if (!path[0]) return wx_error_set(WX_ERR_USAGE, "empty folder name");
    char *p = wx_strdup(path);
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != 0) continue;
        char keep = *s;
        *s = 0;
        int made = mkdir(p, 0777) == 0;
        if (made) wx_fs_created_dir_note(p);
        if (!made && errno != EEXIST) {
            wx_status st = wx_error_set(WX_ERR_RUN, "%s: cannot create folder %s: %s", path, p,
                                        strerror(errno));
            free(p);
            return st;
        }
        *s = keep;
        if (!keep) break;
    }
    struct stat sb;
    if (stat(p, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        free(p);
        return wx_error_set(WX_ERR_RUN, "%s: exists and is not a folder", path);
    }
    free(p);
    return WX_OK;
}

/* Whether folder `dir` can receive new entries: it exists, is a folder and is writable, or it
 * is absent and its nearest existing ancestor is (wx_mkdir_p makes the rest when writing).
 * Usage errors naming `what` and `path` (the output named on the command line). */
int wx_fs_is_archive_dir(const char *dir) {
    char path[8192];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    /* the whole manifest up to 1 MiB: `jq -S` sorts "format" behind the channel list */
    char *head = wx_malloc((1 << 20) + 1);
    size_t n = fread(head, 1, 1 << 20, f);
    fclose(f);
    head[n] = 0;
    int yes = 0;
    /* "format": "wxcast-archive", whitespace allowed (a manifest pretty-printed by jq, or one
     * whose later parts are damaged, is still an archive to protect) */
    for (const char *p = strstr(head, "\"format\""); p; p = strstr(p + 1, "\"format\"")) {
        const char *q = p + 8;
        while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r') q++;
        if (*q++ != ':') continue;
        while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r') q++;
        if (!strncmp(q, "\"wxcast-archive\"", 16)) {
            yes = 1;
            break;
        }
    }
    free(head);
    return yes;
}

/* allow_archive: ingest's own output is an archive folder; every other output there would
 * replace its files (export's manifest.json, a forecast named shard-00001.wxr). */
static wx_status folder_writable(const char *dir, const char *what, const char *path, int allow_archive) {
    char *p = wx_strdup(dir);
    struct stat sb;
    wx_status s = WX_OK;
    for (;;) {
        if (stat(p, &sb) == 0) {
            if (!S_ISDIR(sb.st_mode))
                s = wx_error_set(WX_ERR_USAGE, "%s %s: %s is not a folder", what, path, p);
            else if (access(p, W_OK | X_OK) != 0)
                s = wx_error_set(WX_ERR_USAGE, "%s %s: cannot write in folder %s: %s", what, path,
                                 p, strerror(errno));
            break;
        }
        if (errno != ENOENT && errno != ENOTDIR) { /* ENOTDIR: a file above; found going up */
            s = wx_error_set(WX_ERR_USAGE, "%s %s: folder %s: %s", what, path, p, strerror(errno));
            break;
        }
        char *slash = strrchr(p, '/');
        if (!slash) { /* a relative path whose first part is absent: the working folder */
            strcpy(p, ".");
        } else if (slash == p) {
            p[1] = 0;
        } else {
            *slash = 0;
        }
    }
    if (s == WX_OK && !allow_archive && !strcmp(p, dir) && wx_fs_is_archive_dir(p))
        s = wx_error_set(WX_ERR_USAGE, "%s %s: %s is a wxcast archive folder, whose files "
                         "(manifest.json, shards) an output there could replace: write outside it",
                         what, path, p);
    free(p);
    return s;
}

wx_status wx_output_path_check(const char *path, const char *what) {
    struct stat sb;
    if (!path[0]) return wx_error_set(WX_ERR_USAGE, "%s: empty file name", what);
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return wx_error_set(WX_ERR_USAGE, "%s %s: is a folder, expected a file name", what, path);
    size_t n = strlen(path);
    if (path[n - 1] == '/')
        return wx_error_set(WX_ERR_USAGE, "%s %s: names a folder, expected a file name", what, path);
    if (wx_output_replaceable(path) != WX_OK) {
        char msg[1024]; /* the message is rebuilt in the buffer it lives in */
        snprintf(msg, sizeof msg, "%s", wx_error_message());
        return wx_error_set(WX_ERR_USAGE, "%s %s", what, msg);
    }
    char *dir;
    const char *name;
    split_path(path, &dir, &name);
    wx_status s = folder_writable(dir, what, path, 0);
    free(dir);
    return s;
}

wx_status wx_output_not_input(const char *out, const char *in, const char *what) {
    struct stat so, si;
    if (!in || stat(out, &so) != 0 || stat(in, &si) != 0) return WX_OK;
    if (so.st_dev != si.st_dev || so.st_ino != si.st_ino) return WX_OK;
    return wx_error_set(WX_ERR_USAGE, "%s %s is the input %s: it would be overwritten while it is "
                        "read; write to another file", what, out, in);
}

int wx_fs_unlink_matching(const char *dir, int (*match)(const char *name, void *ctx), void *ctx) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!match(e->d_name, ctx)) continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        n += unlink(path) == 0;
    }
    closedir(d);
    return n;
}

wx_status wx_output_dir_check(const char *path, const char *what) {
    struct stat sb;
    if (!path[0]) return wx_error_set(WX_ERR_USAGE, "%s: empty folder name", what);
    if (stat(path, &sb) == 0 && !S_ISDIR(sb.st_mode))
        return wx_error_set(WX_ERR_USAGE, "%s %s: is a file, expected a folder", what, path);
    return folder_writable(path, what, path, 0);
}

wx_status wx_output_archive_dir_check(const char *path, const char *what) {
    struct stat sb;
    if (!path[0]) return wx_error_set(WX_ERR_USAGE, "%s: empty folder name", what);
    if (stat(path, &sb) == 0 && !S_ISDIR(sb.st_mode))
        return wx_error_set(WX_ERR_USAGE, "%s %s: is a file, expected a folder", what, path);
    char m[8192];
    snprintf(m, sizeof m, "%s/manifest.json", path);
    if (stat(m, &sb) == 0 && !wx_fs_is_archive_dir(path)) /* a viewer's, another tool's */
        return wx_error_set(WX_ERR_USAGE, "%s %s: holds a manifest.json that is not a wxcast "
                            "archive's, which the archive's would replace: use another folder",
                            what, path);
    return folder_writable(path, what, path, 1);
}

wx_status wx_file_size(const char *path, int64_t *size) {
    struct stat sb;
    if (stat(path, &sb) != 0)
        return wx_error_set(WX_ERR_RUN, "%s: cannot stat: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode)) return wx_error_set(WX_ERR_RUN, "%s: not a regular file", path);
    *size = (int64_t)sb.st_size;
    return WX_OK;
}

wx_status wx_read_file(const char *path, char **buf, size_t *len) {
    *buf = NULL;
    *len = 0;
    struct stat sb; /* a pipe is fine (`<(...)`), a folder is a mistake worth naming */
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return wx_error_set(WX_ERR_RUN, "%s: is a folder, expected a file", path);
    FILE *fp = fopen(path, "rb");
    if (!fp) return wx_error_set(WX_ERR_RUN, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *b = wx_malloc(cap + 1);
    for (;;) {
        size_t got = fread(b + n, 1, cap - n, fp);
        n += got;
        if (n < cap) break;
        cap *= 2;
        char *nb = realloc(b, cap + 1);
        if (!nb) { free(b); fclose(fp); return wx_error_set(WX_ERR_RUN, "%s: out of memory", path); }
        b = nb;
    }
    if (ferror(fp)) {
        wx_status s = wx_error_set(WX_ERR_RUN, "%s: read error: %s", path, strerror(errno));
        free(b);
        fclose(fp);
        return s;
    }
    fclose(fp);
    b[n] = 0;
    *buf = b;
    *len = n;
    return WX_OK;
}

wx_status wx_path_join(const char *dir, const char *p, char *out, size_t cap) {
    int n = p[0] == '/' || !dir[0] ? snprintf(out, cap, "%s", p) : snprintf(out, cap, "%s/%s", dir, p);
    if (n < 0 || (size_t)n >= cap)
        return wx_error_set(WX_ERR_USAGE, "path too long (over %zu bytes): %s/%s", cap - 1, dir, p);
    return WX_OK;
}

const char *wx_fs_known_kind_bytes(const unsigned char *b, size_t n) {
    if (n >= 6 && !memcmp(b, "WXCKPT", 6))
        return "a wxcast checkpoint (binary; checkpoints go to `forecast --model`, `train "
               "--resume` or a stage's init_from)";
    if (n >= 4 && !memcmp(b, "PK\3\4", 4)) return "a zip archive (an .npz weights file?)";
    if (n >= 4 && (!memcmp(b, "CDF", 3) || !memcmp(b, "\x89HDF", 4)))
        return "a NetCDF file (data: an ingest recipe's sources, `forecast --init`, `eval --forecast`)";
    if (n >= 4 && !memcmp(b, "GRIB", 4))
        return "a GRIB file (data: an ingest recipe's sources, `forecast --init`)";
    return NULL;
}

const char *wx_fs_known_kind(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char b[8];
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    return wx_fs_known_kind_bytes(b, n);
}

int wx_fs_same_folder(const char *a, const char *b) {
    char *da, *db;
    const char *na, *nb;
    split_path(a, &da, &na);
    split_path(b, &db, &nb);
    struct stat sa, sb;
    int same = stat(da, &sa) == 0 && stat(db, &sb) == 0 && sa.st_dev == sb.st_dev &&
               sa.st_ino == sb.st_ino;
    free(da), free(db);
    return same;
}

wx_status wx_fs_crc32(const char *path, uint64_t limit, uint32_t *crc, uint64_t *bytes) {
    *crc = (uint32_t)crc32(0L, Z_NULL, 0), *bytes = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK); /* a FIFO must not block a checksum */
    struct stat sb;
    if (fd < 0) return wx_error_set(WX_ERR_RUN, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return wx_error_set(WX_ERR_RUN, "%s: not a regular file", path);
    }
    unsigned char *buf = wx_malloc(1 << 20);
    uLong c = crc32(0L, Z_NULL, 0);
    ssize_t n = 0;
    while (*bytes < limit) {
        size_t want = limit - *bytes < (1u << 20) ? (size_t)(limit - *bytes) : (size_t)1 << 20;
        if ((n = read(fd, buf, want)) <= 0) break;
        c = crc32(c, buf, (uInt)n);
        *bytes += (uint64_t)n;
    }
    free(buf);
    close(fd);
    if (n < 0) return wx_error_set(WX_ERR_RUN, "%s: read error: %s", path, strerror(errno));
    *crc = (uint32_t)c;
    return WX_OK;
}
