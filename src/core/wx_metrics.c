#include "core/wx_metrics.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/wx_fs.h"
#include "core/wx_json.h"

struct wx_metrics {
    FILE *fp;
    char *path;
};

static wx_status open_mode(wx_metrics **out, const char *path, const char *mode) {
    *out = NULL;
    WX_TRY(wx_mkdir_parent(path));
    FILE *fp = fopen(path, mode);
    if (!fp) return wx_error_set(WX_ERR_RUN, "%s: cannot open metrics file: %s", path, strerror(errno));
    wx_metrics *m = wx_calloc(1, sizeof *m);
    m->fp = fp;
    m->path = wx_strdup(path);
    *out = m;
    return WX_OK;
}

wx_status wx_metrics_open(wx_metrics **m, const char *path) { return open_mode(m, path, "w"); }
wx_status wx_metrics_open_append(wx_metrics **m, const char *path) { return open_mode(m, path, "a"); }

wx_status wx_metrics_write(wx_metrics *m, const wx_metric_kv *kv, int n) {
    wx_json j;
    wx_json_init(&j, m->fp);
    wx_json_object_begin(&j);
    for (int i = 0; i < n; i++) {
        switch (kv[i].type) {
        case WX_METRIC_NUM: wx_json_kv_number(&j, kv[i].key, kv[i].num); break;
        case WX_METRIC_INT: wx_json_kv_int(&j, kv[i].key, kv[i].i); break;
        case WX_METRIC_STR: wx_json_kv_string(&j, kv[i].key, kv[i].str); break;
        case WX_METRIC_BOOL: wx_json_kv_bool(&j, kv[i].key, (int)kv[i].i); break;
        }
    }
    wx_json_object_end(&j);
    fputc('\n', m->fp);
    if (fflush(m->fp) != 0 || ferror(m->fp))
        return wx_error_set(WX_ERR_RUN, "%s: cannot write metrics: %s", m->path, strerror(errno));
    return WX_OK;
}

wx_status wx_metrics_close(wx_metrics *m) {
    if (!m) return WX_OK;
    wx_status s = WX_OK;
    /* fsync fails with EINVAL on pipes and character devices: nothing to make durable there. */
    if (fflush(m->fp) != 0 || (fsync(fileno(m->fp)) != 0 && errno != EINVAL && errno != EROFS))
        s = wx_error_set(WX_ERR_RUN, "%s: cannot write metrics: %s", m->path, strerror(errno));
    if (fclose(m->fp) != 0 && s == WX_OK)
        s = wx_error_set(WX_ERR_RUN, "%s: cannot close metrics file: %s", m->path, strerror(errno));
    free(m->path);
    free(m);
    return s;
}
