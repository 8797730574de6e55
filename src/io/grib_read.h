/* GRIB1/GRIB2 reader (eccodes) behind io/wx_source.h. */
#ifndef WX_GRIB_READ_H
#define WX_GRIB_READ_H

#include "io/wx_source_priv.h"

/* Scans every message of s->path into s->fields. */
wx_status wx_grib_scan(wx_source *s);
wx_status wx_grib_read(wx_source *s, int i, wx_missing_policy policy, float *values);
void wx_grib_close(wx_source *s);

#endif
