/* Metrics as JSON lines: one object per call, flushed per line, so `tail -f`, pandas
 * (read_json(lines=True)) and a crashed run all see every completed line.
 *
 *   wx_metrics *m;
 *   WX_TRY(wx_metrics_open(&m, "run/metrics.jsonl"));
 *   WX_TRY(wx_metrics_log(m, WX_M_INT("step", step), WX_M_NUM("loss", loss), WX_M_STR("phase", "train")));
 *   WX_TRY(wx_metrics_close(m));
 */
#ifndef WX_METRICS_H
#define WX_METRICS_H

#include <stdint.h>

#include "core/wx_error.h"

typedef struct wx_metrics wx_metrics;

typedef enum { WX_METRIC_NUM, WX_METRIC_INT, WX_METRIC_STR, WX_METRIC_BOOL } wx_metric_type;

typedef struct {
    const char *key;
    wx_metric_type type;
    double num;
    int64_t i; /* INT and BOOL */
    const char *str;
} wx_metric_kv;

#define WX_M_NUM(k, v) ((wx_metric_kv){(k), WX_METRIC_NUM, (double)(v), 0, NULL})
#define WX_M_INT(k, v) ((wx_metric_kv){(k), WX_METRIC_INT, 0, (int64_t)(v), NULL})
#define WX_M_STR(k, v) ((wx_metric_kv){(k), WX_METRIC_STR, 0, 0, (v)})
#define WX_M_BOOL(k, v) ((wx_metric_kv){(k), WX_METRIC_BOOL, 0, !!(v), NULL})

/* Creates (truncates) the file. */
wx_status wx_metrics_open(wx_metrics **m, const char *path);
/* Appends to an existing file (a resumed run continues its metrics). */
wx_status wx_metrics_open_append(wx_metrics **m, const char *path);
/* Writes {"key": value, ...} and a newline, then flushes. */
wx_status wx_metrics_write(wx_metrics *m, const wx_metric_kv *kv, int n);
#define wx_metrics_log(m, ...)                                  \
    wx_metrics_write((m), (const wx_metric_kv[]){__VA_ARGS__},  \
                     (int)(sizeof((const wx_metric_kv[]){__VA_ARGS__}) / sizeof(wx_metric_kv)))
/* Closes (fsync included) and frees; NULL is fine. */
wx_status wx_metrics_close(wx_metrics *m);

#endif
