/* A truncated classic-format NetCDF file (CDF-1, CDF-2, CDF-5) opens without complaint and reads
 * as zeros (netCDF-C pads short reads), so a cut download would be ingested as data. This checks
 * the file's size against the least its header allows: the header's own bytes (the format's
 * encoding of dimensions, attributes and variables, computed through the public API) plus every
 * variable's data, records included, without alignment padding. NetCDF-4/HDF5 files are refused
 * by HDF5 itself; io/netcdf_open.c names their sizes. */
#ifndef WX_NETCDF_CLASSIC_H
#define WX_NETCDF_CLASSIC_H

#include "core/wx_error.h"

/* WX_ERR_RUN naming the file, its size and the least size its header needs; WX_OK for a file
 * that is long enough or not classic. */
wx_status wx_netcdf_classic_check_size(int ncid, const char *path);

#endif
