/* NumPy .npy arrays (numpy.lib.format), the format of NVlabs FourCastNet's released statistics
 * (global_means.npy, global_stds.npy: float32 of shape (1, 21, 1, 1)):
 *
 *   "\x93NUMPY" | major, minor | header length (u16 LE for 1.x, u32 LE for 2.x/3.x) |
 *   header: a Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (1, 21, 1, 1), }
 *   padded with spaces and a newline | the values, C order
 *
 * Only what statistics need: little-endian float32/float64 ('<f4', '<f8'; '|' or '=' byte orders
 * are not written by numpy for floats on little-endian machines). Every error is WX_ERR_RUN
 * naming the file and what was expected. */
#ifndef WX_IO_NPY_H
#define WX_IO_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "core/wx_error.h"

#define WX_NPY_MAX_DIMS 8

typedef struct {
    int ndim;
    int64_t dims[WX_NPY_MAX_DIMS];
    int64_t count; /* product of dims (1 for a 0-d array) */
    double *values; /* count values in C order, converted to double */
    char *str;      /* a unicode string array ('<Un', WX_NPY_STR): its ASCII text, else NULL */
} wx_npy;

wx_status wx_npy_read(const char *path, wx_npy *out);

/* What wx_npy_parse accepts besides little-endian float32/float64 (the flags, or'ed). */
enum {
    WX_NPY_INT = 1, /* little-endian integers '<i1' '<i2' '<i4' '<i8', '|u1', '|b1' as values */
    WX_NPY_STR = 2, /* a 0-d unicode string '<Un' (UTF-32): str, code points past 127 as '?' */
};
/* The same as wx_npy_read from an array in memory (an .npz member): `name` names it in errors. */
wx_status wx_npy_parse(const char *name, const void *buf, size_t len, int flags, wx_npy *out);
void wx_npy_free(wx_npy *a);

#endif
