/* A device simulator for tests (never reachable from the wxcast CLI): the CPU backend's ops with
 * on_device = 1 and "device memory" of its own, so code written for a GPU backend can be run and
 * checked on a machine without one. It catches host/device mix-ups that a real GPU would turn
 * into crashes or silent garbage:
 *
 *  - device memory comes from a private pool that is mapped PROT_NONE except for the allocations
 *    an op or a copy is working on, while it runs: host code that dereferences a device pointer
 *    faults, and the fault handler says so before the process exits (status 86), as it does for
 *    an op that reaches outside its pointer arguments;
 *  - every tensor pointer an op receives must lie in a live device allocation (a host pointer, or
 *    freed device memory, is a violation: the op fails with WX_ERR_RUN naming op and argument);
 *  - copies check their direction (h2d: device dst, host src; ...) and bounds;
 *  - 64-byte guard regions before and after every allocation are checked at free, synchronize and
 *    wx_devsim_check; freed memory is filled with NaN (a use after free reads NaN);
 *  - async uploads follow the CUDA backend's per-slot ordering (wx_backend.h): copy_h2d_async is
 *    queued on a "copy stream" and runs only when the compute stream waits for it (slot_ready) or
 *    the host does (copy_wait, synchronize). Violations: an op, zeroing or copy that uses a
 *    target before its slot_ready (the compute stream did not wait for the copy); an upload whose
 *    target was used by compute work queued after the slot's last slot_release (the copy, which
 *    waits only for the release, could overwrite it mid-read); a host buffer rewritten before
 *    copy_wait (crc changed). wx_devsim_uploads counts the uploads, and those that overlap
 *    compute work (queued after the slot's release, which the copy does not wait for).
 * mem_alloc zeroes, as the backend contract (wx_backend.h) promises. Ops added to ops.def after
 * tests/support/wx_devsim_ops.inc was generated run unwrapped; the simulator then leaves device
 * memory mapped (wx_devsim_protecting() = 0) and says so on stderr once. */
#ifndef WX_DEVSIM_H
#define WX_DEVSIM_H

#include <stddef.h>

#include "backend/wx_backend.h"

/* The simulator's table (name "devsim"); the pool is set up at the first call. */
const wx_backend *wx_devsim_backend(void);
/* Violations found so far, and the first one's message ("" when none). */
long wx_devsim_violations(void);
const char *wx_devsim_first_violation(void);
/* Checks the guard regions of every live allocation now; returns the violation count. */
long wx_devsim_check(void);
/* 1 when host access to device memory faults (every op of the table is wrapped). */
int wx_devsim_protecting(void);
/* Live device allocations and their bytes (leak checks). */
size_t wx_devsim_live(size_t *bytes);
/* Ops run so far (a test can assert the model really went through the simulator). */
long wx_devsim_ops_run(void);

typedef struct {
    long copies;     /* copy_h2d_async calls (with bytes > 0) */
    long overlapped; /* of those, copies that do not wait for compute work queued before them */
    long readies, releases;
} wx_devsim_upload_stats;
/* Upload counts since the process started. */
void wx_devsim_uploads(wx_devsim_upload_stats *out);

#endif
