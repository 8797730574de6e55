/* safetensors (huggingface/safetensors), the weights interchange format with PyTorch:
 *
 *   u64 little-endian N | N bytes of JSON header | data buffer
 *   header = {"__metadata__": {"key": "value", ...},            (optional; strings only)
 *             "<tensor name>": {"dtype": "F32", "shape": [d0, ...], "data_offsets": [begin, end]},
 *             ...}
 *   offsets in bytes from the start of the data buffer; values row-major, little-endian.
 *
 * The reader checks what the reference implementation checks: header length within the file and
 * ≤ 100 MB, valid JSON of that shape, known dtypes, end − begin = numel·dtype size, and tensors
 * that tile the data buffer exactly (no gap, no overlap, nothing after the last one). Every error
 * is WX_ERR_RUN naming the file, and the tensor or header byte where it applies. The writer emits
 * float32 tensors in the given order, pads the header with spaces to an 8-byte boundary (as the
 * reference writer) and writes atomically. */
#ifndef WX_IO_SAFETENSORS_H
#define WX_IO_SAFETENSORS_H

#include <stdint.h>

#include "core/wx_error.h"

#define WX_ST_MAX_DIMS 8

typedef struct {
    char *name;
    char dtype[8];   /* "F32", "F64", "F16", "BF16", "I64", ... */
    int elem_size;   /* bytes */
    int ndim;        /* 0 for a scalar */
    int64_t dims[WX_ST_MAX_DIMS];
    int64_t numel;
    uint64_t begin, end; /* byte offsets into the data buffer */
} wx_st_tensor;

typedef struct {
    char *path;
    uint8_t *buf;         /* the whole file */
    const uint8_t *data;  /* the data buffer inside buf */
    uint64_t data_len;
    int count;
    wx_st_tensor *t;      /* in header order */
    int nmeta;
    char **meta_key, **meta_val;
} wx_safetensors;

wx_status wx_safetensors_read(const char *path, wx_safetensors *st);
void wx_safetensors_free(wx_safetensors *st);

/* Index of the tensor called `name`, or -1. */
int wx_safetensors_find(const wx_safetensors *st, const char *name);
/* Metadata value for `key`, or NULL. */
const char *wx_safetensors_meta(const wx_safetensors *st, const char *key);
/* Tensor i converted to float32 into dst (numel values). F32, F64, F16 and BF16 convert; other
 * dtypes are an error naming the tensor. */
wx_status wx_safetensors_to_f32(const wx_safetensors *st, int i, float *dst);

/* One tensor to write: float32 values, ndim 0..WX_ST_MAX_DIMS. */
typedef struct {
    const char *name;
    int ndim;
    const int64_t *dims;
    const float *data;
} wx_st_entry;

/* Writes n float32 tensors and nmeta metadata pairs (meta[2k] key, meta[2k+1] value; NULL when
 * nmeta is 0) to path atomically. Names must be unique and not "__metadata__". */
wx_status wx_safetensors_write_f32(const char *path, const wx_st_entry *e, int n,
                                   const char *const *meta, int nmeta);

#endif
