#include "train/checkpoint.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "backend/wx_backend.h"
#include "core/wx_fs.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoints store float32 little-endian by memcpy: a big-endian host needs byte swaps here"
#endif

static const uint8_t ck_magic[8] = {'W', 'X', 'C', 'K', 'P', 'T', 0, 1};
enum { CK_HEADER = 24, CK_SECTION = 16 };

/* Writing ------------------------------------------------------------------------------------- */

typedef struct {
    wx_atomic_file f;
    uint32_t crc;
    int err;
} ck_writer;

static void put(ck_writer *w, const void *p, size_t n) {
    if (w->err || n == 0) return;
    if (fwrite(p, 1, n, w->f.fp) != n) w->err = 1;
    const uint8_t *b = p;
    while (n) { /* zlib takes uInt lengths */
        size_t k = n > (1u << 30) ? (1u << 30) : n;
        w->crc = (uint32_t)crc32(w->crc, b, (uInt)k);
        b += k, n -= k;
    }
}
static void put_u8(ck_writer *w, uint8_t v) { put(w, &v, 1); }
static void put_u16(ck_writer *w, uint16_t v) { put(w, &v, 2); }
static void put_u32(ck_writer *w, uint32_t v) { put(w, &v, 4); }
static void put_u64(ck_writer *w, uint64_t v) { put(w, &v, 8); }
static void put_section(ck_writer *w, const char tag[4], uint64_t len) {
    put(w, tag, 4);
    put_u32(w, 0);
    put_u64(w, len);
}

static int tensor_kinds(const wx_ckpt_out *c) { return c->adam_m && c->adam_v ? 3 : 1; }

static uint64_t tens_bytes(const wx_ckpt_out *c) {
    uint64_t n = 4;
    const wx_params *p = c->params;
    for (int i = 0; i < p->count; i++)
        n += (uint64_t)tensor_kinds(c) * (2 + strlen(p->t[i].name) + 2 + 8 * (uint64_t)p->t[i].ndim +
                                          4 * (uint64_t)p->t[i].size);
    return n;
}

static const char *nz(const char *s) { return s ? s : ""; }

wx_status wx_checkpoint_write(const char *path, const wx_ckpt_out *c) {
    const char *texts[3] = {nz(c->config_text), nz(c->model_text), nz(c->data_text)};
    const char *tags[3] = {"CONF", "MODL", "DATA"};
    uint64_t stat_bytes = 5 * 8 + 8 + 16, rng_bytes = 2 * WX_RNG_PACKED_BYTES;
    uint64_t size = CK_HEADER + 4;
    for (int i = 0; i < 3; i++) size += CK_SECTION + strlen(texts[i]);
    size += CK_SECTION + stat_bytes + CK_SECTION + rng_bytes + CK_SECTION + tens_bytes(c);
    uint64_t fld_bytes = c->nfields > 0
        ? 4 + 16 + 4 * (uint64_t)c->nfields * (uint64_t)c->field_h * (uint64_t)c->field_w : 0;
    if (c->nfields > 0) size += CK_SECTION + fld_bytes;

    ck_writer w;
    memset(&w, 0, sizeof w);
    WX_TRY(wx_atomic_open(&w.f, path));
    put(&w, ck_magic, 8);
    put_u32(&w, WX_CKPT_VERSION);
    put_u32(&w, c->nfields > 0 ? 7 : 6);
    put_u64(&w, size);
    for (int i = 0; i < 3; i++) {
        put_section(&w, tags[i], strlen(texts[i]));
        put(&w, texts[i], strlen(texts[i]));
    }
    const wx_ckpt_state *st = c->st;
    put_section(&w, "STAT", stat_bytes);
    put_u64(&w, (uint64_t)st->step);
    put_u64(&w, (uint64_t)st->epoch);
    put_u64(&w, (uint64_t)st->epoch_pos);
    put_u64(&w, (uint64_t)st->total_steps);
    put_u64(&w, (uint64_t)st->best_step);
    put(&w, &st->best_loss, 8);
    char stage[16] = {0};
    snprintf(stage, sizeof stage, "%s", st->stage);
    put(&w, stage, 16);
    put_section(&w, "RNGS", rng_bytes);
    uint8_t rb[WX_RNG_PACKED_BYTES];
    wx_rng_pack(&st->order, rb);
    put(&w, rb, sizeof rb);
    wx_rng_pack(&st->noise, rb);
    put(&w, rb, sizeof rb);
    put_section(&w, "TENS", tens_bytes(c));
    const wx_params *p = c->params;
    put_u32(&w, (uint32_t)(p->count * tensor_kinds(c)));
    for (int k = 0; k < tensor_kinds(c); k++) {
        const float *base = k == 0 ? p->data : k == 1 ? c->adam_m : c->adam_v;
        for (int i = 0; i < p->count; i++) {
            const wx_param_info *t = &p->t[i];
            put_u16(&w, (uint16_t)strlen(t->name));
            put(&w, t->name, strlen(t->name));
            put_u8(&w, (uint8_t)k);
            put_u8(&w, (uint8_t)t->ndim);
            for (int d = 0; d < t->ndim; d++) put_u64(&w, (uint64_t)t->dims[d]);
            put(&w, base + t->offset, sizeof(float) * (size_t)t->size);
        }
    }
    if (c->nfields > 0) {
        put_section(&w, "FLDS", fld_bytes);
        put_u32(&w, (uint32_t)c->nfields);
        put_u64(&w, (uint64_t)c->field_h);
        put_u64(&w, (uint64_t)c->field_w);
        put(&w, c->fields, sizeof(float) * (size_t)(c->nfields * c->field_h * c->field_w));
    }
    uint32_t crc = w.crc;
    put_u32(&w, crc);
    if (w.err) {
        wx_atomic_abort(&w.f);
        return wx_error_set(WX_ERR_RUN, "%s: cannot write the checkpoint (disk full?)", path);
    }
    if (ftell(w.f.fp) != (long)size) {
        wx_atomic_abort(&w.f);
        return wx_error_set(WX_ERR_RUN, "%s: internal size mismatch writing the checkpoint", path);
    }
    return wx_atomic_commit(&w.f);
}

/* Reading ------------------------------------------------------------------------------------- */

typedef struct {
    const uint8_t *p, *end;
    const char *path;
    const char *what; /* section being parsed */
} ck_reader;

static wx_status need(ck_reader *r, uint64_t n) {
    if ((uint64_t)(r->end - r->p) < n)
        return wx_error_set(WX_ERR_RUN, "%s: section %s is shorter than its contents (damaged file)",
                            r->path, r->what);
    return WX_OK;
}
static wx_status get(ck_reader *r, void *out, uint64_t n) {
    WX_TRY(need(r, n));
    memcpy(out, r->p, (size_t)n);
    r->p += n;
    return WX_OK;
}

static char *text_copy(const uint8_t *p, uint64_t n) {
    char *s = wx_malloc((size_t)n + 1);
    memcpy(s, p, (size_t)n);
    s[n] = 0;
    return s;
}

static wx_status parse_stat(ck_reader *r, wx_checkpoint *c) {
    uint64_t v[5];
    for (int i = 0; i < 5; i++) WX_TRY(get(r, &v[i], 8));
    c->st.step = (int64_t)v[0], c->st.epoch = (int64_t)v[1], c->st.epoch_pos = (int64_t)v[2];
    c->st.total_steps = (int64_t)v[3], c->st.best_step = (int64_t)v[4];
    WX_TRY(get(r, &c->st.best_loss, 8));
    WX_TRY(get(r, c->st.stage, 16));
    c->st.stage[15] = 0;
    return WX_OK;
}

static wx_status parse_rngs(ck_reader *r, wx_checkpoint *c) {
    uint8_t rb[WX_RNG_PACKED_BYTES];
    WX_TRY(get(r, rb, sizeof rb));
    if (wx_rng_unpack(&c->st.order, rb))
        return wx_error_set(WX_ERR_RUN, "%s: invalid data-order RNG state", r->path);
    WX_TRY(get(r, rb, sizeof rb));
    if (wx_rng_unpack(&c->st.noise, rb))
        return wx_error_set(WX_ERR_RUN, "%s: invalid noise RNG state", r->path);
    return WX_OK;
}

static wx_status parse_tens(ck_reader *r, wx_checkpoint *c) {
    uint32_t n;
    WX_TRY(get(r, &n, 4));
    if (n > (uint64_t)(r->end - r->p))
        return wx_error_set(WX_ERR_RUN, "%s: tensor count %u exceeds the section", r->path, n);
    c->t = wx_calloc(n ? n : 1, sizeof *c->t);
    for (uint32_t i = 0; i < n; i++) {
        wx_ckpt_tensor *t = &c->t[i];
        uint16_t nl;
        uint8_t kind, ndim;
        WX_TRY(get(r, &nl, 2));
        if (nl == 0 || nl >= WX_PARAM_NAME_MAX)
            return wx_error_set(WX_ERR_RUN, "%s: tensor %u: name length %u out of range", r->path, i, nl);
        WX_TRY(get(r, t->name, nl));
        t->name[nl] = 0;
        WX_TRY(get(r, &kind, 1));
        WX_TRY(get(r, &ndim, 1));
        if (kind > 2 || ndim < 1 || ndim > WX_PARAM_MAX_DIMS)
            return wx_error_set(WX_ERR_RUN, "%s: tensor '%s': kind %u / ndim %u out of range",
                                r->path, t->name, kind, ndim);
        t->kind = (wx_ckpt_kind)kind, t->ndim = ndim, t->size = 1;
        for (int d = 0; d < ndim; d++) {
            uint64_t v;
            WX_TRY(get(r, &v, 8));
            if (v == 0 || v > ((uint64_t)1 << 40))
                return wx_error_set(WX_ERR_RUN, "%s: tensor '%s': dimension %llu out of range",
                                    r->path, t->name, (unsigned long long)v);
            t->dims[d] = (int64_t)v;
            t->size *= (int64_t)v;
        }
        WX_TRY(need(r, 4 * (uint64_t)t->size));
        t->data = r->p;
        r->p += 4 * (uint64_t)t->size;
        c->ntensors++;
    }
    return WX_OK;
}

static wx_status parse_flds(ck_reader *r, wx_checkpoint *c) {
    uint32_t n;
    uint64_t h, w;
    WX_TRY(get(r, &n, 4));
    WX_TRY(get(r, &h, 8));
    WX_TRY(get(r, &w, 8));
    if (n > 4096 || h > (1u << 20) || w > (1u << 20))
        return wx_error_set(WX_ERR_RUN, "%s: FLDS: %u fields of %llux%llu out of range", r->path, n,
                            (unsigned long long)h, (unsigned long long)w);
    uint64_t bytes = 4 * (uint64_t)n * h * w;
    WX_TRY(need(r, bytes));
    c->nfields = (int)n, c->field_h = (int64_t)h, c->field_w = (int64_t)w;
    c->fields = wx_malloc((size_t)bytes + 4);
    memcpy(c->fields, r->p, (size_t)bytes);
    r->p += bytes;
    return WX_OK;
}

static wx_status parse(wx_checkpoint *c) {
    const char *path = c->path;
    /* a file given in the wrong place: say what it is (not for a damaged checkpoint's magic) */
    const char *kind = wx_fs_known_kind_bytes(c->buf, c->len);
    if (kind && (c->len < 6 || memcmp(c->buf, "WXCKPT", 6)))
        return wx_error_set(WX_ERR_RUN, "%s: %s, expected a wxcast checkpoint", path, kind);
    if (c->len < CK_HEADER + 4)
        return wx_error_set(WX_ERR_RUN, "%s: truncated checkpoint (%zu bytes, shorter than the "
                            "header)", path, c->len);
    if (memcmp(c->buf, ck_magic, 8)) {
        int text = 1; /* a config or a log given as the checkpoint */
        for (size_t k = 0; k < 64 && k < c->len && text; k++)
            text = c->buf[k] == '\n' || c->buf[k] == '\t' || c->buf[k] == '\r' ||
                   (c->buf[k] >= 32 && c->buf[k] < 127);
        return wx_error_set(WX_ERR_RUN, "%s: not a wxcast checkpoint (%s)", path,
                            text ? "a text file: a YAML config?" : "bad magic");
    }
    uint32_t version, nsec;
    uint64_t size;
    memcpy(&version, c->buf + 8, 4);
    memcpy(&nsec, c->buf + 12, 4);
    memcpy(&size, c->buf + 16, 8);
    if (version != WX_CKPT_VERSION)
        return wx_error_set(WX_ERR_RUN, "%s: checkpoint format version %u; this wxcast reads "
                            "version %d", path, version, WX_CKPT_VERSION);
    c->version = version;
    if (size != c->len)
        return wx_error_set(WX_ERR_RUN, "%s: %s: the header says %llu bytes, the file has %zu",
                            path, c->len < size ? "truncated checkpoint" : "damaged checkpoint",
                            (unsigned long long)size, c->len);
    uint32_t stored, crc = (uint32_t)crc32(0L, Z_NULL, 0);
    memcpy(&stored, c->buf + c->len - 4, 4);
    for (size_t off = 0; off < c->len - 4;) {
        size_t k = c->len - 4 - off > (1u << 30) ? (1u << 30) : c->len - 4 - off;
        crc = (uint32_t)crc32(crc, c->buf + off, (uInt)k);
        off += k;
    }
    if (crc != stored)
        return wx_error_set(WX_ERR_RUN, "%s: checksum mismatch (stored %08x, computed %08x): the "
                            "checkpoint is damaged", path, stored, crc);
    ck_reader r = {c->buf + CK_HEADER, c->buf + c->len - 4, path, "header"};
    int have_tens = 0;
    for (uint32_t s = 0; s < nsec; s++) {
        char tag[5] = {0};
        uint32_t zero;
        uint64_t len;
        r.what = "header";
        WX_TRY(get(&r, tag, 4));
        WX_TRY(get(&r, &zero, 4));
        WX_TRY(get(&r, &len, 8));
        r.what = tag;
        WX_TRY(need(&r, len));
        ck_reader sub = {r.p, r.p + len, path, tag};
        if (!strcmp(tag, "CONF")) c->config_text = text_copy(r.p, len);
        else if (!strcmp(tag, "MODL")) c->model_text = text_copy(r.p, len);
        else if (!strcmp(tag, "DATA")) c->data_text = text_copy(r.p, len);
        else if (!strcmp(tag, "STAT")) {
            WX_TRY(parse_stat(&sub, c));
            c->has_state = 1;
        } else if (!strcmp(tag, "RNGS")) {
            WX_TRY(parse_rngs(&sub, c));
        } else if (!strcmp(tag, "TENS")) {
            if (have_tens) return wx_error_set(WX_ERR_RUN, "%s: two tensor sections", path);
            WX_TRY(parse_tens(&sub, c));
            have_tens = 1;
        } else if (!strcmp(tag, "FLDS")) {
            WX_TRY(parse_flds(&sub, c));
        }
        r.p += len;
    }
    if (!have_tens) return wx_error_set(WX_ERR_RUN, "%s: no tensor section", path);
    if (!c->model_text) return wx_error_set(WX_ERR_RUN, "%s: no model config section", path);
    return WX_OK;
}

wx_status wx_checkpoint_read(const char *path, wx_checkpoint *c) {
    memset(c, 0, sizeof *c);
    c->path = wx_strdup(path);
    char *buf;
    wx_status st = wx_read_file(path, &buf, &c->len);
    if (st == WX_OK) {
        c->buf = (uint8_t *)buf;
        st = parse(c);
    }
    if (st != WX_OK) wx_checkpoint_free(c); /* nothing to free for the caller on failure */
    return st;
}

void wx_checkpoint_free(wx_checkpoint *c) {
    free(c->path);
    free(c->buf);
    free(c->config_text);
    free(c->model_text);
    free(c->data_text);
    free(c->t);
    free(c->fields);
    memset(c, 0, sizeof *c);
}

static const char *kind_name(wx_ckpt_kind k) {
    return k == WX_CKPT_PARAM ? "parameter" : k == WX_CKPT_ADAM_M ? "AdamW m" : "AdamW v";
}

wx_status wx_checkpoint_load(const wx_checkpoint *c, wx_ckpt_kind kind, const wx_params *p,
                             float *dst) {
    if (!dst && p->be && p->be->on_device) { /* device parameters: host staging, one upload */
        float *h = wx_calloc((size_t)p->len + 1, sizeof(float));
        wx_status s = wx_checkpoint_load(c, kind, p, h);
        if (s == WX_OK) s = p->be->copy_h2d(p->be_ctx, p->data, h, sizeof(float) * (size_t)p->len);
        free(h);
        return s;
    }
    if (!dst) dst = p->data;
    int found = 0;
    char *seen = wx_calloc((size_t)p->count + 1, 1);
    wx_status st = WX_OK;
    for (int i = 0; i < c->ntensors; i++) {
        const wx_ckpt_tensor *t = &c->t[i];
        if (t->kind != kind) continue;
        int j = wx_params_find(p, t->name);
        if (j < 0 || seen[j]) {
            free(seen);
            if (j >= 0)
                return wx_error_set(WX_ERR_RUN, "%s: %s tensor '%s' appears twice", c->path,
                                    kind_name(kind), t->name);
            return wx_error_set(WX_ERR_RUN, "%s: %s tensor '%s' is not in the model (a checkpoint of "
                                "another model config?)", c->path, kind_name(kind), t->name);
        }
        seen[j] = 1;
        const wx_param_info *pi = &p->t[j];
        int same = pi->ndim == t->ndim;
        for (int d = 0; same && d < t->ndim; d++) same = pi->dims[d] == t->dims[d];
        if (!same) {
            char want[96];
            wx_params_shape_str(pi, want, sizeof want);
            wx_param_info got = *pi;
            got.ndim = t->ndim;
            memcpy(got.dims, t->dims, sizeof got.dims);
            char have[96];
            wx_params_shape_str(&got, have, sizeof have);
            st = wx_error_set(WX_ERR_RUN, "%s: %s tensor '%s' has shape %s, the model expects %s",
                              c->path, kind_name(kind), t->name, have, want);
            break;
        }
        memcpy(dst + pi->offset, t->data, sizeof(float) * (size_t)t->size);
        found++;
    }
    for (int j = 0; st == WX_OK && j < p->count; j++)
        if (!seen[j])
            st = wx_error_set(WX_ERR_RUN, "%s: no %s tensor '%s' (the model has %d tensors, the "
                              "checkpoint %d of this kind)", c->path, kind_name(kind), p->t[j].name,
                              p->count, found);
    free(seen);
    return st;
}
