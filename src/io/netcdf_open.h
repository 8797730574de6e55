/* Opening a NetCDF file for reading, one way for every reader (sources, forecast files, eval's
 * statistics, the coastline), so a damaged file gets the same actionable message everywhere:
 *   - NetCDF-4/HDF5 cut short: HDF5 refuses it and netCDF-C says only "NetCDF: HDF error"; the
 *     superblock's end-of-file address tells the size the file had, so the message names both;
 *   - classic formats cut short: they open and read the missing part as zeros
 *     (wx_netcdf_classic_check_size), so the size is checked after the open;
 *   - anything else: netCDF's own message. */
#ifndef WX_NETCDF_OPEN_H
#define WX_NETCDF_OPEN_H

#include "core/wx_error.h"

/* nc_open(path, NC_NOWRITE) into *ncid (-1 on error). WX_ERR_RUN "PATH: ..." on failure;
 * nc_rc (nullable) receives netCDF's status (NC_ENOTNC: not NetCDF at all, e.g. GRIB). */
wx_status wx_nc_open_read(const char *path, int *ncid, int *nc_rc);

/* Turns off HDF5's printing of its error stack (20 lines of HDF5-DIAG on stderr before our one
 * error line) for the calling thread. netCDF-C does this when it initialises, but HDF5 keeps the
 * setting per thread, and ingest and eval read NetCDF on worker threads. Cheap after the first
 * call on a thread; wx_nc_open_read and the readers call it. */
void wx_nc_quiet_hdf5(void);

/* The size an HDF5 file's superblock records (base + end-of-file address), 0 when `path` has no
 * HDF5 signature at 0, 512, 1024 or 2048 or its superblock cannot be read. */
unsigned long long wx_hdf5_recorded_size(const char *path);

#endif
