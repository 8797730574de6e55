/* The helpers every reference-case body uses, included once per precision by each
 * ref_<family>_impl.h (no include guard on purpose): fixture tensors loaded as REF_R, filled and
 * refilled buffers, and the two checks — an output or activation grad against the fixture, and a
 * parameter grad after REF_REPS accumulating calls from REF_PREFILL. Needs REF_R, REF_T, REF_PREC,
 * REF_REPS, REF_PREFILL, REF_RTOL, REF_ATOL, REF_CLOSE. */

/* An op call that must succeed; outputs start as REF_GARBAGE so an op that skips a write fails. */
#define REF_RUN(call) WX_CHECK((call) == WX_OK, "%s: %s", #call, wx_error_message())
#define REF_GARBAGE 777.0

static REF_R *REF_T(load)(const wx_fixture *f, const char *name) {
    const wx_fixture_tensor *t = wx_fixture_get(f, name);
    REF_R *o = malloc(sizeof(REF_R) * (size_t)(t->size > 0 ? t->size : 1));
    for (int64_t i = 0; i < t->size; i++) o[i] = (REF_R)t->data[i];
    return o;
}

static REF_R *REF_T(filled)(int64_t n, double v) {
    REF_R *o = malloc(sizeof(REF_R) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++) o[i] = (REF_R)v;
    return o;
}

static void REF_T(refill)(REF_R *a, int64_t n, double v) {
    for (int64_t i = 0; i < n; i++) a[i] = (REF_R)v;
}

/* Output or activation grad against the fixture tensor `name`. */
static void REF_T(check)(const char *op, const char *name, const REF_R *a, const wx_fixture *f) {
    const wx_fixture_tensor *t = wx_fixture_get(f, name);
    char what[128];
    snprintf(what, sizeof what, "%s %s %s", op, REF_PREC, name);
    REF_CLOSE(what, a, t->data, t->size, REF_RTOL, REF_ATOL);
}

/* Parameter grad after REF_REPS accumulating calls from REF_PREFILL. */
static void REF_T(check_acc)(const char *op, const char *name, const REF_R *a, const wx_fixture *f) {
    const wx_fixture_tensor *t = wx_fixture_get(f, name);
    double *want = malloc(sizeof(double) * (size_t)(t->size > 0 ? t->size : 1));
    for (int64_t i = 0; i < t->size; i++) want[i] = REF_PREFILL + REF_REPS * t->data[i];
    char what[128];
    snprintf(what, sizeof what, "%s %s %s (accumulated x%d)", op, REF_PREC, name, REF_REPS);
    REF_CLOSE(what, a, want, t->size, REF_RTOL, REF_ATOL);
    free(want);
}
