/* `wxcast inspect FILE`: the variables the GRIB/NetCDF readers see in a source file. */
#ifndef WX_INSPECT_SOURCE_H
#define WX_INSPECT_SOURCE_H

/* Prints one row per variable (text, or one JSON object); returns the exit code (an unreadable
 * file: its error on stderr, 1). */
int wx_inspect_source(const char *path, int json);

#endif
