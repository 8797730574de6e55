/* Internal layout of wx_source shared by io/wx_source.c, io/grib_read.c and io/netcdf_read.c. */
#ifndef WX_SOURCE_PRIV_H
#define WX_SOURCE_PRIV_H

#include "io/wx_source.h"

struct wx_source {
    char *path;
    wx_source_format format;
    int count, cap;
    wx_field_info *fields;
    void *impl; /* reader-private state */
    int inputs_checked; /* wx_source_check_inputs: unknown units and implausible values refused */
};

/* Appends a field (grows the table). */
wx_field_info *wx_source_add(wx_source *s);

#endif
