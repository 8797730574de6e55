#define _GNU_SOURCE /* RTLD_DEFAULT */
#include "io/netcdf_open.h"

#include <dlfcn.h>
#include <netcdf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "io/netcdf_classic.h"

/* Little-endian unsigned of n bytes (HDF5 stores addresses that way). */
static uint64_t le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

unsigned long long wx_hdf5_recorded_size(const char *path) {
    static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    unsigned char b[96];
    uint64_t size = 0;
    for (long at = 0; at <= 2048 && !size; at = at ? at * 2 : 512) {
        size_t got = fseek(f, at, SEEK_SET) == 0 ? fread(b, 1, sizeof b, f) : 0;
        if (got < 16) break;
        if (memcmp(b, sig, 8) != 0) continue;
        /* HDF5 file format spec, "Superblock": versions 0 and 1 keep the sizes at bytes 13/14 and
         * the addresses (base, free space, end of file) after 16 (v0) or 20 (v1) more bytes;
         * versions 2 and 3 keep the sizes at 9/10 and base, extension, end of file from 12. */
        int ver = b[8], so, eof_at, base_at;
        if (ver <= 1) {
            so = b[13];
            base_at = ver == 0 ? 24 : 28;
            eof_at = base_at + 2 * so;
        } else if (ver <= 3) {
            so = b[9];
            base_at = 12;
            eof_at = base_at + 2 * so;
        } else {
            break;
        }
        if ((so != 4 && so != 8) || eof_at + so > (int)got) break;
        uint64_t base = le(b + base_at, so), eof = le(b + eof_at, so);
        /* the base is the superblock's own offset unless the file says otherwise */
        size = (base ? base : (uint64_t)at) + eof;
    }
    fclose(f);
    return (unsigned long long)size;
}

void wx_nc_quiet_hdf5(void) {
    /* H5Eset_auto2(H5E_DEFAULT, NULL, NULL) of the HDF5 netCDF-C itself loaded (looked up at run
     * time: linking an HDF5 of our own could pick another build, e.g. the MPI one, whose switch
     * netCDF never reads). hid_t is int64_t since HDF5 1.10; H5E_DEFAULT is 0. */
    typedef int (*set_auto_fn)(int64_t, void *, void *);
    static set_auto_fn set_auto;
    static int looked;
    static _Thread_local int done;
    if (done) return;
    done = 1;
    if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
        void *f = dlsym(RTLD_DEFAULT, "H5Eset_auto2");
        __atomic_store_n((void **)&set_auto, f, __ATOMIC_RELAXED);
        __atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
    }
    set_auto_fn fn = __atomic_load_n(&set_auto, __ATOMIC_RELAXED);
    if (fn) fn(0, NULL, NULL);
}

wx_status wx_nc_open_read(const char *path, int *ncid, int *nc_rc) {
    *ncid = -1;
    wx_nc_quiet_hdf5();
    int rc = nc_open(path, NC_NOWRITE, ncid);
    if (nc_rc) *nc_rc = rc;
    if (rc != NC_NOERR) {
        *ncid = -1;
        struct stat sb;
        unsigned long long want = wx_hdf5_recorded_size(path);
        if (want && stat(path, &sb) == 0 && (unsigned long long)sb.st_size < want)
            return wx_error_set(WX_ERR_RUN, "%s: truncated: %lld bytes, and its HDF5 superblock "
                                "records %llu (NetCDF-4 file cut short): download or copy it again",
                                path, (long long)sb.st_size, want);
        if (rc == NC_ENOTNC)
            return wx_error_set(WX_ERR_RUN, "%s: not a NetCDF file (%s)", path, nc_strerror(rc));
        return wx_error_set(WX_ERR_RUN, "%s: cannot open as NetCDF: %s", path, nc_strerror(rc));
    }
    wx_status st = wx_netcdf_classic_check_size(*ncid, path);
    if (st != WX_OK) {
        nc_close(*ncid);
        *ncid = -1;
    }
    return st;
}
