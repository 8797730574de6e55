/* The device simulator (wx_devsim.h): a bump-allocated pool of "device memory", PROT_NONE except
 * for the allocations the running op or copy works on. Single-threaded callers (the trainer's
 * thread); the ops themselves may use their OpenMP teams while their arguments are mapped. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "wx_devsim.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "backend/wx_backend_mem.h"

#define DS_POOL_BYTES ((size_t)16 << 30) /* reserved address space; pages are touched as used */
#define DS_GUARD 64
#define DS_GUARD_BYTE 0xA7
#define DS_MAX_PENDING 64
#define DS_MAX_OPEN 256

typedef struct {
    unsigned char *base; /* the user's pointer */
    size_t bytes, span;  /* requested; rounded to DS_GUARD */
    int live;
    long last_use; /* the last compute-stream action that took it (g_sim.seq) */
} ds_alloc;

/* An async upload: queued on the "copy stream" until its slot's slot_ready (the compute stream
 * waits for it) or a host wait runs it; its host buffer's crc is checked up to copy_wait. */
typedef struct {
    void *dst;
    const void *src;
    size_t bytes;
    uint32_t crc;
    int slot, done;
} ds_pending;

static struct {
    int ready, protect, depth;
    unsigned char *pool;
    size_t used; /* bytes of the pool handed out (guards included) */
    ds_alloc *a;
    size_t n, cap, nlive;
    ds_alloc *open[DS_MAX_OPEN]; /* mapped while the current op or copy runs */
    int nopen;
    ds_alloc *args[DS_MAX_OPEN]; /* the current op's arguments */
    int nargs;
    ds_pending pending[DS_MAX_PENDING];
    int npending;
    long seq;                           /* compute-stream actions so far (ops, zeroing, copies) */
    long release_seq[WX_COPY_SLOTS];    /* seq at the slot's last slot_release */
    int freed[WX_COPY_SLOTS];           /* a release since the slot's last slot_ready */
    wx_devsim_upload_stats up;
    long violations, ops;
    char first[512];
    wx_backend table;
} g_sim;

static void violation(const char *fmt, const char *a, const char *b) {
    g_sim.violations++;
    char msg[512];
    snprintf(msg, sizeof msg, fmt, a, b);
    if (!g_sim.first[0]) snprintf(g_sim.first, sizeof g_sim.first, "%s", msg);
    fprintf(stderr, "devsim: %s\n", msg);
}

static size_t page_round(size_t n) {
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    return (n + pg - 1) / pg * pg;
}

/* Only the allocations an op or copy works on are mapped while it runs (mprotect of a few
 * pages, not of the pool: its cost grows with the range); then all are unmapped again. Pages
 * shared with a neighbouring allocation open with it. */
static void page_span(const ds_alloc *a, unsigned char **lo, size_t *len) {
    const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t s = (uintptr_t)(a->base - DS_GUARD) & ~(pg - 1);
    uintptr_t e = ((uintptr_t)(a->base + a->span + DS_GUARD) + pg - 1) & ~(pg - 1);
    *lo = (unsigned char *)s, *len = (size_t)(e - s);
}

static void open_alloc(ds_alloc *a) {
    if (!g_sim.protect || !a) return;
    if (g_sim.nopen == DS_MAX_OPEN) abort();
    unsigned char *lo;
    size_t len;
    page_span(a, &lo, &len);
    if (mprotect(lo, len, PROT_READ | PROT_WRITE) != 0) abort();
    g_sim.open[g_sim.nopen++] = a;
}

static void close_all(void) {
    for (int i = 0; i < g_sim.nopen; i++) {
        unsigned char *lo;
        size_t len;
        page_span(g_sim.open[i], &lo, &len);
        if (mprotect(lo, len, PROT_NONE) != 0) abort();
    }
    g_sim.nopen = 0;
}

/* The allocation holding p (live or not), or NULL when p is outside the pool's allocations. */
static ds_alloc *find(const void *p) {
    const unsigned char *q = p;
    size_t lo = 0, hi = g_sim.n;
    while (lo < hi) { /* last allocation with base <= q */
        size_t mid = (lo + hi) / 2;
        if (g_sim.a[mid].base <= q) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return NULL;
    ds_alloc *a = &g_sim.a[lo - 1];
    return q < a->base + (a->bytes ? a->bytes : 1) ? a : NULL;
}

static int in_pool(const void *p) {
    const unsigned char *q = p;
    return g_sim.pool && q >= g_sim.pool && q < g_sim.pool + DS_POOL_BYTES;
}

static int guards_ok(const ds_alloc *a) {
    for (size_t i = 0; i < DS_GUARD; i++)
        if (a->base[-1 - (ptrdiff_t)i] != DS_GUARD_BYTE) return 0;
    for (size_t i = a->bytes; i < a->span + DS_GUARD; i++)
        if (a->base[i] != DS_GUARD_BYTE) return 0;
    return 1;
}

/* Pending upload i: its host buffer must be as it was queued. */
static void pending_crc(const ds_pending *c) {
    if ((uint32_t)crc32(0L, c->src, (uInt)c->bytes) != c->crc)
        violation("copy_h2d_async (slot %s): the host buffer was rewritten before copy_wait%s "
                  "(a race on a GPU copy stream)", c->slot ? "1" : "0", "");
}

/* Runs the not yet done uploads of `slot` (-1: of every slot), in order: the copy stream reaches
 * them. Entries stay (for copy_wait's crc check) unless `drop`. */
static void run_pending(int slot, int drop) {
    g_sim.depth++;
    int n = 0;
    for (int i = 0; i < g_sim.npending; i++) {
        ds_pending *c = &g_sim.pending[i];
        int mine = slot < 0 || c->slot == slot;
        if (mine && !c->done) {
            pending_crc(c);
            open_alloc(find(c->dst));
            memcpy(c->dst, c->src, c->bytes);
            close_all();
            c->done = 1;
        } else if (mine && drop) {
            pending_crc(c);
        }
        if (!(mine && drop)) g_sim.pending[n++] = *c;
    }
    g_sim.npending = n;
    g_sim.depth--;
}

/* A compute-stream action takes allocation a: it must not be the target of an upload the compute
 * stream has not waited for (slot_ready), and it becomes a's last use. */
static void touch(ds_alloc *a, const char *what) {
    if (!a || a->last_use == g_sim.seq) return; /* once per action (an op may take it twice) */
    for (int i = 0; i < g_sim.npending; i++) {
        const ds_pending *c = &g_sim.pending[i];
        if (!c->done && find(c->dst) == a) {
            violation("%s uses the target of an async upload before slot_ready%s (the compute "
                      "stream did not wait for the copy: a race on a GPU)", what, "");
            break;
        }
    }
    a->last_use = g_sim.seq;
}

/* Around every op and copy: the queue first, then the given allocations mapped. */
static void enter(ds_alloc *a, ds_alloc *b) {
    g_sim.depth++;
    open_alloc(a);
    if (b != a) open_alloc(b);
}

static void leave(void) {
    close_all();
    g_sim.depth--;
}

static void on_segv(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    if (in_pool(si->si_addr)) {
        char msg[256];
        int len = snprintf(msg, sizeof msg, g_sim.depth == 0
                           ? "devsim: host code read or wrote device memory at %p (a device "
                             "pointer used as a host pointer)\n"
                           : "devsim: an op touched device memory at %p outside its pointer "
                             "arguments\n", si->si_addr);
        if (write(2, msg, (size_t)len) < 0) _exit(86);
        _exit(86);
    }
    signal(sig, SIG_DFL); /* not ours: the default action when the access repeats */
}

/* Device-side argument check of an op. */
static int arg_ok(const char *op, const void *p, const char *name) {
    if (!p) return 1; /* optional tensors (bias NULL, ...) */
    ds_alloc *a = find(p);
    if (a && a->live) {
        touch(a, op);
        if (g_sim.nargs < DS_MAX_OPEN) g_sim.args[g_sim.nargs++] = a; /* mapped by DS_RUN */
        return 1;
    }
    char what[160];
    snprintf(what, sizeof what, "%s: argument %s", op, name);
    violation("%s is %s", what, a ? "freed device memory" : "not device memory (a host pointer?)");
    return 0;
}

#define DS_OP(name)          \
    const char *op_ = name;  \
    int bad_ = 0;            \
    g_sim.seq++;             \
    g_sim.ops++
#define DS_ARG(p, name) bad_ |= !arg_ok(op_, (p), (name))
#define DS_RUN(call) ds_run(bad_, op_, ctx) ? WX_ERR_RUN : ds_finish((call))

/* Before the op: fail it on a bad argument, else map its arguments. */
static int ds_run(int bad, const char *op, wx_ctx *ctx) {
    (void)ctx;
    int n = g_sim.nargs;
    g_sim.nargs = 0;
    if (bad) {
        wx_error_set(WX_ERR_RUN, "devsim: %s: %s", op, g_sim.first);
        return bad;
    }
    enter(NULL, NULL);
    for (int i = 0; i < n; i++) open_alloc(g_sim.args[i]);
    return 0;
}

static wx_status ds_finish(wx_status s) {
    leave();
    return s;
}

#include "wx_devsim_ops.inc"

/* ---- memory functions ---- */

static wx_status ds_mem_alloc(wx_ctx *ctx, void **ptr, size_t bytes) {
    (void)ctx;
    size_t span = (bytes + DS_GUARD - 1) / DS_GUARD * DS_GUARD;
    if (span == 0) span = DS_GUARD;
    size_t need = DS_GUARD + span + DS_GUARD;
    *ptr = NULL;
    if (g_sim.used + need > DS_POOL_BYTES)
        return wx_error_set(WX_ERR_RUN, "devsim: pool exhausted (%zu bytes asked)", bytes);
    if (g_sim.n == g_sim.cap) {
        g_sim.cap = g_sim.cap ? 2 * g_sim.cap : 256;
        g_sim.a = realloc(g_sim.a, g_sim.cap * sizeof *g_sim.a);
        if (!g_sim.a) abort();
    }
    unsigned char *blk = g_sim.pool + g_sim.used;
    g_sim.used += need;
    ds_alloc *a = &g_sim.a[g_sim.n++];
    /* zeroed on the compute stream (cudaMemsetAsync), a use like any other */
    *a = (ds_alloc){blk + DS_GUARD, bytes, span, 1, ++g_sim.seq};
    g_sim.nlive++;
    enter(a, a);
    memset(blk, DS_GUARD_BYTE, need);
    memset(blk + DS_GUARD, 0, bytes);
    leave();
    *ptr = blk + DS_GUARD;
    return WX_OK;
}

static void ds_mem_free(wx_ctx *ctx, void *ptr) {
    (void)ctx;
    if (!ptr) return;
    ds_alloc *a = find(ptr);
    if (!a || a->base != ptr || !a->live) {
        violation("mem_free(%s): %s", "ptr", !a ? "not device memory" : "not a live allocation");
        return;
    }
    run_pending(-1, 0); /* cudaFree waits for the whole device, copies included */
    enter(a, a);
    if (!guards_ok(a)) violation("mem_free: guard region of a %s allocation overwritten%s", "device", "");
    const uint32_t nan = 0x7fc00000u;
    for (size_t i = 0; i + 4 <= a->bytes; i += 4) memcpy(a->base + i, &nan, 4);
    leave();
    a->live = 0;
    /* Everything freed (a trainer run ended): start the pool over, so the range opened and
     * closed around each op stays one run's footprint (mprotect's cost grows with it). */
    if (--g_sim.nlive == 0 && g_sim.depth == 0 && g_sim.npending == 0) {
        if (madvise(g_sim.pool, page_round(g_sim.used), MADV_DONTNEED) != 0) abort();
        g_sim.used = 0, g_sim.n = 0;
    }
}

/* bytes at p lie inside one live allocation. */
static int range_ok(const char *what, const void *p, size_t bytes) {
    ds_alloc *a = find(p);
    if (!a || !a->live) {
        violation("%s: %s", what, a ? "freed device memory" : "not device memory (a host pointer?)");
        return 0;
    }
    if ((const unsigned char *)p + bytes > a->base + a->bytes) {
        violation("%s: %s", what, "past the end of its device allocation");
        return 0;
    }
    return 1;
}

static int host_ok(const char *what, const void *p) {
    if (!in_pool(p)) return 1;
    violation("%s: %s", what, "is device memory where host memory is expected");
    return 0;
}

static wx_status ds_fail(const char *what) {
    return wx_error_set(WX_ERR_RUN, "devsim: %s: %s", what, g_sim.first);
}

static wx_status ds_mem_zero(wx_ctx *ctx, void *ptr, size_t bytes) {
    (void)ctx;
    if (!bytes) return WX_OK;
    if (!range_ok("mem_zero", ptr, bytes)) return ds_fail("mem_zero");
    g_sim.seq++;
    touch(find(ptr), "mem_zero");
    enter(find(ptr), NULL);
    memset(ptr, 0, bytes);
    leave();
    return WX_OK;
}

static wx_status ds_copy(const char *what, void *dst, const void *src, size_t bytes, int ddev,
                         int sdev) {
    if (!bytes) return WX_OK;
    int ok = ddev ? range_ok(what, dst, bytes) : host_ok(what, dst);
    ok &= sdev ? range_ok(what, src, bytes) : host_ok(what, src);
    if (!ok) return ds_fail(what);
    g_sim.seq++;
    if (ddev) touch(find(dst), what);
    if (sdev) touch(find(src), what);
    enter(ddev ? find(dst) : NULL, sdev ? find(src) : NULL);
    memmove(dst, src, bytes);
    leave();
    return WX_OK;
}

static wx_status ds_h2d(wx_ctx *c, void *d, const void *s, size_t n) {
    (void)c;
    return ds_copy("copy_h2d", d, s, n, 1, 0);
}
static wx_status ds_d2h(wx_ctx *c, void *d, const void *s, size_t n) {
    (void)c;
    return ds_copy("copy_d2h", d, s, n, 0, 1);
}
static wx_status ds_d2d(wx_ctx *c, void *d, const void *s, size_t n) {
    (void)c;
    return ds_copy("copy_d2d", d, s, n, 1, 1);
}

static int slot_ok(const char *what, int slot) {
    if (slot >= 0 && slot < WX_COPY_SLOTS) return 1;
    violation("%s: upload slot out of range%s", what, "");
    return 0;
}

static wx_status ds_h2d_async(wx_ctx *ctx, int slot, void *dst, const void *src, size_t bytes) {
    (void)ctx;
    if (!slot_ok("copy_h2d_async", slot)) return ds_fail("copy_h2d_async");
    if (!bytes) return WX_OK;
    if (!range_ok("copy_h2d_async", dst, bytes) || !host_ok("copy_h2d_async", src))
        return ds_fail("copy_h2d_async");
    /* What the copy waits for, as the CUDA backend does it: the slot's last release, else all
     * queued work. Compute work after that point must not use the target: the copy may overwrite
     * it while that work runs. */
    if (!g_sim.freed[slot]) g_sim.release_seq[slot] = g_sim.seq, g_sim.freed[slot] = 1;
    ds_alloc *a = find(dst);
    if (a->last_use > g_sim.release_seq[slot]) {
        violation("copy_h2d_async (slot %s): its target was used by compute work queued after the "
                  "slot's release%s (the copy may overwrite it while that work reads it)",
                  slot ? "1" : "0", "");
        return ds_fail("copy_h2d_async");
    }
    g_sim.up.copies++;
    if (g_sim.release_seq[slot] < g_sim.seq) g_sim.up.overlapped++;
    if (g_sim.npending == DS_MAX_PENDING) run_pending(-1, 1);
    g_sim.pending[g_sim.npending++] =
        (ds_pending){dst, src, bytes, (uint32_t)crc32(0L, src, (uInt)bytes), slot, 0};
    return WX_OK;
}

static wx_status ds_slot_ready(wx_ctx *ctx, int slot) {
    (void)ctx;
    if (!slot_ok("slot_ready", slot)) return ds_fail("slot_ready");
    run_pending(slot, 0); /* the compute stream waits for the slot's copies */
    g_sim.freed[slot] = 0;
    g_sim.up.readies++;
    return g_sim.violations ? ds_fail("slot_ready") : WX_OK;
}

static wx_status ds_slot_release(wx_ctx *ctx, int slot) {
    (void)ctx;
    if (!slot_ok("slot_release", slot)) return ds_fail("slot_release");
    g_sim.release_seq[slot] = g_sim.seq, g_sim.freed[slot] = 1;
    g_sim.up.releases++;
    return WX_OK;
}

static wx_status ds_wait(wx_ctx *ctx, int slot) {
    (void)ctx;
    if (!slot_ok("copy_wait", slot)) return ds_fail("copy_wait");
    run_pending(slot, 1);
    return g_sim.violations ? ds_fail("copy_wait") : WX_OK;
}

static wx_status ds_sync(wx_ctx *ctx) {
    (void)ctx;
    if (wx_devsim_check()) return ds_fail("synchronize");
    run_pending(-1, 1);
    return g_sim.violations ? ds_fail("synchronize") : WX_OK;
}

static wx_status ds_host_alloc(wx_ctx *ctx, void **ptr, size_t bytes) {
    return wx_cpu_mem_alloc(ctx, ptr, bytes);
}

static void ds_host_free(wx_ctx *ctx, void *ptr) {
    if (ptr && in_pool(ptr)) {
        violation("host_free(%s): %s", "ptr", "device memory");
        return;
    }
    wx_cpu_mem_free(ctx, ptr);
}

static void setup(void) {
    g_sim.pool = mmap(NULL, DS_POOL_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (g_sim.pool == MAP_FAILED) {
        fprintf(stderr, "devsim: cannot reserve the pool\n");
        abort();
    }
    wx_backend *t = &g_sim.table;
    *t = *wx_backend_cpu();
    t->name = "devsim";
#define X(n) t->n = ds_##n;
    DS_WRAPPED(X)
#undef X
    /* An op the generated wrappers do not know still points at the CPU: it would touch the pool
     * unopened, so the pool stays open (no host-access check) rather than fault in the op. */
    const wx_backend *cpu = wx_backend_cpu();
    int unwrapped = 0;
#define WX_OP(op, fam) \
    unwrapped += t->op##_forward == cpu->op##_forward || t->op##_backward == cpu->op##_backward;
#define WX_OP_FWD(op, fam) unwrapped += t->op##_forward == cpu->op##_forward;
#include "ops/ops.def"
#undef WX_OP
#undef WX_OP_FWD
    g_sim.protect = unwrapped == 0;
    if (unwrapped)
        fprintf(stderr, "devsim: %d op(s) of ops.def have no wrapper (rerun "
                "tests/support/gen_devsim_ops.py): host-access checks are off\n", unwrapped);
    else if (mprotect(g_sim.pool, DS_POOL_BYTES, PROT_NONE) != 0) abort();
    if (!g_sim.protect) { /* a plain mapping: as host memory, the other checks still on */
        if (mprotect(g_sim.pool, DS_POOL_BYTES, PROT_READ | PROT_WRITE) != 0) abort();
    }
    t->on_device = 1;
    t->mem_alloc = ds_mem_alloc, t->mem_free = ds_mem_free, t->mem_zero = ds_mem_zero;
    t->copy_h2d = ds_h2d, t->copy_d2h = ds_d2h, t->copy_d2d = ds_d2d;
    t->copy_h2d_async = ds_h2d_async, t->slot_ready = ds_slot_ready;
    t->slot_release = ds_slot_release, t->copy_wait = ds_wait;
    t->host_alloc = ds_host_alloc, t->host_free = ds_host_free, t->synchronize = ds_sync;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    g_sim.ready = 1;
}

const wx_backend *wx_devsim_backend(void) {
    if (!g_sim.ready) setup();
    return &g_sim.table;
}

long wx_devsim_violations(void) { return g_sim.violations; }
const char *wx_devsim_first_violation(void) { return g_sim.first; }
int wx_devsim_protecting(void) { return g_sim.protect; }
long wx_devsim_ops_run(void) { return g_sim.ops; }

void wx_devsim_uploads(wx_devsim_upload_stats *out) { *out = g_sim.up; }

long wx_devsim_check(void) {
    run_pending(-1, 0);
    for (size_t i = 0; i < g_sim.n; i++) {
        if (!g_sim.a[i].live) continue;
        enter(&g_sim.a[i], NULL);
        int ok = guards_ok(&g_sim.a[i]);
        leave();
        if (!ok) violation("guard region of a live %s allocation overwritten%s", "device", "");
    }
    return g_sim.violations;
}

size_t wx_devsim_live(size_t *bytes) {
    size_t n = 0, b = 0;
    for (size_t i = 0; i < g_sim.n; i++)
        if (g_sim.a[i].live) n++, b += g_sim.a[i].bytes;
    if (bytes) *bytes = b;
    return n;
}
