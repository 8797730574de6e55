/* The minimal CUDA unit: without a GPU it must report "no CUDA device" cleanly (status, message)
 * and the test exits 77 (skipped) after checking that; with a GPU the add kernel must match the CPU
 * result exactly, and guard regions around the output must stay untouched. */
#include <math.h>
#include <string.h>

#include "wx_build_config.h"
#include "wx_test.h"

#if WX_HAVE_CUDA
#include "wx_cuda_basic.h"

int main(void) {
    int count = -1;
    WX_CHECK(wx_cuda_device_count(&count) == WX_OK, "device count query must not fail: %s",
             wx_error_message());
    char report[1024];
    int reported = wx_cuda_device_report(report, sizeof report);
    WX_CHECK(reported == count, "report counts %d devices, query %d", reported, count);
    if (count == 0) {
        WX_CHECK(strstr(report, "no CUDA device") != NULL, "report without a GPU: '%s'", report);
        wx_status s = wx_cuda_init(0);
        WX_CHECK(s == WX_ERR_RUN, "init without a GPU returns a run error (got %d)", s);
        WX_CHECK(strstr(wx_error_message(), "no CUDA device") != NULL, "message: %s",
                 wx_error_message());
        wx_test_summary();
        printf("no GPU: CUDA execution checks skipped\n");
        return wx_test_failed ? 1 : 77;
    }
    WX_CHECK(wx_cuda_init(0) == WX_OK, "init: %s", wx_error_message());
    enum { N = 100003, GUARD = 64 };
    static float a[N], b[N], y[N + 2 * GUARD];
    for (int i = 0; i < N; i++) {
        a[i] = sinf((float)i);
        b[i] = cosf((float)i * 0.5f);
    }
    float *da, *db, *dy;
    WX_CHECK(wx_cuda_malloc((void **)&da, sizeof a) == WX_OK, "malloc a");
    WX_CHECK(wx_cuda_malloc((void **)&db, sizeof b) == WX_OK, "malloc b");
    WX_CHECK(wx_cuda_malloc((void **)&dy, sizeof y) == WX_OK, "malloc y");
    for (int i = 0; i < N + 2 * GUARD; i++) y[i] = NAN; /* poison output and guards */
    WX_CHECK(wx_cuda_copy_to_device(dy, y, sizeof y) == WX_OK, "poison copy");
    WX_CHECK(wx_cuda_copy_to_device(da, a, sizeof a) == WX_OK, "copy a");
    WX_CHECK(wx_cuda_copy_to_device(db, b, sizeof b) == WX_OK, "copy b");
    WX_CHECK(wx_cuda_basic_add(dy + GUARD, da, db, N) == WX_OK, "launch: %s", wx_error_message());
    WX_CHECK(wx_cuda_synchronize() == WX_OK, "sync: %s", wx_error_message());
    WX_CHECK(wx_cuda_copy_to_host(y, dy, sizeof y) == WX_OK, "copy back");
    int bad = 0, guard_bad = 0;
    for (int i = 0; i < N; i++) bad += y[GUARD + i] != a[i] + b[i];
    for (int i = 0; i < GUARD; i++) guard_bad += !isnan(y[i]) + !isnan(y[GUARD + N + i]);
    WX_CHECK(bad == 0, "%d of %d sums differ from the CPU", bad, N);
    WX_CHECK(guard_bad == 0, "%d guard values overwritten", guard_bad);
    wx_cuda_free(da);
    wx_cuda_free(db);
    wx_cuda_free(dy);
    return wx_test_summary();
}
#else
int main(void) {
    printf("built without CUDA: skipped\n");
    return 77;
}
#endif
