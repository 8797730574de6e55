/* What a run started from a checkpoint checks against it (trainer_priv.h): the archive's
 * normalisation statistics against the ones the checkpoint was trained with, and, on --resume, the
 * --metrics file's rows written after the checkpoint (a killed run's), which the resumed run
 * writes again. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/wx_fs.h"
#include "core/wx_log.h"
#include "core/wx_yaml.h"
#include "meteo/wx_catalogue.h"
#include "train/trainer_priv.h"

/* The entry of channel `name` in the DATA section's list `key`, or NULL. */
static const wx_yaml *channel_of(const wx_yaml *data, const char *key, const char *name) {
    const wx_yaml *l = wx_yaml_get(data, key);
    for (int i = 0; l && l->kind == WX_YAML_SEQ && i < l->count; i++) {
        const wx_yaml *n = wx_yaml_get(l->items[i], "name");
        if (n && n->kind == WX_YAML_SCALAR && !strcmp(n->scalar, name)) return l->items[i];
    }
    return NULL;
}

static int number_of(const wx_yaml *e, const char *key, double *v) {
    const wx_yaml *n = wx_yaml_get(e, key);
    if (!n || n->kind != WX_YAML_SCALAR) return 0;
    char *end;
    errno = 0;
    *v = strtod(n->scalar, &end);
    return !errno && end != n->scalar && !*end;
}

/* What a channel name stands for, so that archives naming the same variable differently (t2m,
 * 2t, 2m_temperature; z500 and geopotential at 500) compare equal: "<shortName>[@<hPa>][/<s>]",
 * or the name itself when the catalogue does not know it. */
static void identity(const char *name, char *out, size_t cap) {
    char base[128];
    long period = wx_catalogue_strip_period(name, base, sizeof base);
    double level = 0;
    const wx_catalogue_entry *e = wx_catalogue_find(base);
    if (!e) e = wx_catalogue_split_level(base, &level);
    if (!e) {
        snprintf(out, cap, "%s", name);
        return;
    }
    int n = snprintf(out, cap, "%s", e->short_name);
    if (level > 0 && n > 0 && (size_t)n < cap) n += snprintf(out + n, cap - (size_t)n, "@%g", level);
    if (period && n > 0 && (size_t)n < cap) snprintf(out + n, cap - (size_t)n, "/%ld", period);
}

/* "a, b, c" of DATA list `key` into names, and their identities into ids. */
static void names_of(const wx_yaml *data, const char *key, char *names, char *ids, size_t cap) {
    const wx_yaml *l = wx_yaml_get(data, key);
    names[0] = ids[0] = 0;
    for (int i = 0, n = 0; l && l->kind == WX_YAML_SEQ && i < l->count; i++) {
        const wx_yaml *nm = wx_yaml_get(l->items[i], "name");
        if (!nm || nm->kind != WX_YAML_SCALAR) continue;
        char id[160];
        identity(nm->scalar, id, sizeof id);
        size_t a = strlen(names), b = strlen(ids);
        if (a + 1 < cap) snprintf(names + a, cap - a, "%s%s", n ? ", " : "", nm->scalar);
        if (b + 1 < cap) snprintf(ids + b, cap - b, "%s%s", n ? "," : "", id);
        n++;
    }
}

/* The checkpoint's DATA section and the run's, parsed; 0 (nothing to compare) for a checkpoint
 * without the section. */
static int load_data_pair(const wx_trainer *t, const char *ck_data, wx_yaml **old, wx_yaml **now) {
    *old = *now = NULL;
    if (!ck_data || wx_yaml_load_string(ck_data, "checkpoint DATA", old) != WX_OK ||
        wx_yaml_load_string(t->data_text, "run DATA", now) != WX_OK) {
        wx_error_clear();
        wx_yaml_free(*old);
        return 0;
    }
    return 1;
}

wx_status wx_trainer_check_channels(const wx_trainer *t, const char *what, const char *ck_data) {
    wx_yaml *old, *now;
    if (!load_data_pair(t, ck_data, &old, &now)) return WX_OK;
    static const char *const lists[] = {"channels_in", "channels_out"};
    wx_status st = WX_OK;
    for (int k = 0; k < 2 && st == WX_OK; k++) {
        char a[2048], b[2048], ia[4096], ib[4096];
        names_of(old, lists[k], a, ia, sizeof a);
        names_of(now, lists[k], b, ib, sizeof b);
        if (strcmp(ia, ib))
            st = wx_error_set(WX_ERR_USAGE, "%s: trained with %s [%s], this run has [%s]: the "
                              "weights belong to those channels in that order", what, lists[k], a, b);
    }
    wx_yaml_free(old);
    wx_yaml_free(now);
    return st;
}

void wx_trainer_warn_stats(const wx_trainer *t, const char *what, const char *ck_data) {
    wx_yaml *old, *now;
    if (!load_data_pair(t, ck_data, &old, &now)) return;
    static const char *const lists[] = {"channels_in", "channels_out"};
    static const char *const stats[] = {"mean", "std", "diff_std"};
    int nchan = 0, ndiff = 0;
    double worst = 0, wa = 0, wb = 0;
    const char *wname = NULL, *wstat = NULL;
    for (int k = 0; k < 2; k++) {
        const wx_yaml *l = wx_yaml_get(now, lists[k]);
        for (int i = 0; l && l->kind == WX_YAML_SEQ && i < l->count; i++) {
            const wx_yaml *nm = wx_yaml_get(l->items[i], "name");
            if (!nm || nm->kind != WX_YAML_SCALAR) continue;
            const wx_yaml *o = channel_of(old, lists[k], nm->scalar);
            if (!o || (k == 1 && channel_of(now, lists[0], nm->scalar))) continue; /* counted once */
            nchan++;
            int differs = 0;
            for (int s = 0; s < 3; s++) {
                double a, b;
                if (!number_of(o, stats[s], &a) || !number_of(l->items[i], stats[s], &b)) continue;
                /* relative to the channel's std: a mean shift of 1e-12 std is rounding */
                double sd = 0;
                if (!number_of(o, "std", &sd) || !(sd > 0)) sd = fabs(a) > 0 ? fabs(a) : 1;
                double rel = fabs(b - a) / (s == 0 ? sd : fabs(a) > 0 ? fabs(a) : 1);
                if (!(rel <= 1e-12)) {
                    differs = 1;
                    if (!(rel <= worst)) worst = rel, wa = a, wb = b, wname = nm->scalar, wstat = stats[s];
                }
            }
            ndiff += differs;
        }
    }
    if (ndiff)
        wx_log_warn("%s: the archive %s normalises %d of its %d channels differently from the "
                    "checkpoint (largest: %s %s %.9g here, %.9g in the checkpoint, %.3g%s); the run "
                    "continues with the archive's statistics", what, t->c->archive, ndiff, nchan,
                    wname, wstat, wb, wa, worst, !strcmp(wstat, "mean") ? " of its std" : " relative");
    wx_yaml_free(old);
    wx_yaml_free(now);
}

int wx_trainer_row_number(const char *line, const char *key, double *v) {
    char quoted[64];
    snprintf(quoted, sizeof quoted, "\"%s\"", key);
    const char *p = strstr(line, quoted);
    if (!p) return 0;
    p += strlen(quoted);
    while (*p == ' ' || *p == ':') p++;
    char *end;
    errno = 0;
    *v = strtod(p, &end);
    return !errno && end != p;
}

/* The step of a metrics row ({"phase":...,"step":N,...}); 0 when it has none. */
static int row_step(const char *line, long long *step) {
    double v;
    if (!wx_trainer_row_number(line, "step", &v)) return 0;
    *step = (long long)v;
    return 1;
}

wx_status wx_trainer_metrics_trim(const char *path, int64_t step) {
    FILE *in = fopen(path, "r");
    if (!in) return WX_OK; /* a new file: nothing written past the checkpoint */
    wx_atomic_file f;
    wx_status s = wx_atomic_open(&f, path);
    if (s != WX_OK) {
        fclose(in);
        return wx_error_wrap(s, "--metrics: ");
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long long dropped = 0, kept = 0;
    while (s == WX_OK && (n = getline(&line, &cap, in)) > 0) {
        long long st;
        /* a row past the checkpoint, or the unfinished last row of a killed run */
        if (line[n - 1] != '\n' || (row_step(line, &st) && st > step)) {
            dropped++;
            continue;
        }
        kept++;
        if (fwrite(line, 1, (size_t)n, f.fp) != (size_t)n)
            s = wx_error_set(WX_ERR_RUN, "%s: cannot write: %s", f.tmp, strerror(errno));
    }
    if (s == WX_OK && ferror(in))
        s = wx_error_set(WX_ERR_RUN, "%s: cannot read: %s", path, strerror(errno));
    free(line);
    fclose(in);
    if (s != WX_OK || dropped == 0) {
        wx_atomic_abort(&f); /* nothing to drop: the file stays as it is */
        return s;
    }
    WX_TRY(wx_atomic_commit(&f));
    wx_log_info("--metrics %s: dropped %lld row(s) written after the checkpoint's step %lld (the "
                "resumed run writes them again); %lld kept", path, dropped, (long long)step, kept);
    return WX_OK;
}
