/* Coastlines for maps, read from GSHHG's binned netCDF files as GMT ships them (Debian package
 * gmt-gshhg-low: /usr/share/gmt-gshhg/binned_GSHHS_{c,l,i}.nc; LGPL data by Wessel & Smith).
 *
 * Binned layout (GMT's gmt_shore.c): the globe is cut into square bins of Bin_size_in_minutes,
 * numbered row by row from the north-west (bin b has its south-west corner at lon (b % nx)·size,
 * lat 90 − (b / nx + 1)·size). Each bin lists segments (Id_of_first_segment_in_a_bin,
 * N_segments_in_a_bin); each segment packs npts << 9 | level << 6 | exit << 3 | entry and starts
 * at Id_of_first_point_in_a_segment; points are unsigned 16-bit offsets from the bin's SW corner
 * in units of size/65535. Segments are open polylines clipped to their bin, which is all a map
 * outline needs. Levels: 1 ocean/land, 2 lake, 3 island in lake, 4 pond, 6 Antarctic grounding
 * line (the Antarctic ice front is level 1, as GMT draws by default). */
#ifndef WX_COASTLINE_H
#define WX_COASTLINE_H

#include "core/wx_error.h"

typedef struct {
    int nseg;
    int *start, *count; /* [nseg] into lon/lat */
    int npts;
    float *lon, *lat;   /* [npts] degrees; lon in [0, 360], lat in [-90, 90] */
} wx_coastline;

/* Path of the GSHHG file for resolution 'c' (crude), 'l' (low) or 'i' (intermediate): the folder
 * is $WX_GSHHG_DIR when set, else /usr/share/gmt-gshhg. buf: at least 512 bytes. */
void wx_coastline_path(char res, char *buf, int len);
/* Loads the segments with 1 <= level <= max_level (1: coasts only; 2: also lake shores). */
wx_status wx_coastline_load(const char *path, int max_level, wx_coastline *out);
void wx_coastline_free(wx_coastline *c);

#endif
