"""Peers of bench_products (docs/benchmarks.md): the same forecast fields written by netCDF4-python
or by eccodes' Python bindings, timing only the writing.

The fields are read (untimed) time by time from the plain NetCDF that `bench_products write nc`
made, so both writers get identical values.

  nc IN OUT [--deflate]     netCDF4: the same variables and dimensions as wxcast's file
                            (float32, chunks of one field, zlib level 4 with shuffle as wxcast)
  grib IN OUT simple|ccsds  eccodes: one GRIB2 message per field from the GRIB2 sample, the keys
                            wxcast sets (grid, date, step, level, paramId), 16 bits per value
Prints one JSON line like bench_products: mode, MB of float32 fields, wall and CPU seconds, MB/s,
bytes.
"""
import json
import os
import sys
import time

import eccodes
import netCDF4
import numpy as np

class Timer:
    """Wall and CPU seconds of the timed sections (CPU is the steadier figure on a loaded machine)."""

    def __init__(self):
        self.wall = self.cpu = 0.0

    def start(self):
        self.w0, self.c0 = time.perf_counter(), time.process_time()

    def stop(self):
        self.wall += time.perf_counter() - self.w0
        self.cpu += time.process_time() - self.c0


PARAM_ID = {"u10": 165, "v10": 166, "t2m": 167, "sp": 134, "msl": 151, "tcwv": 137,
            "u": 131, "v": 132, "z": 129, "t": 130, "r": 157}

HEIGHT = {"u10": 10, "v10": 10, "t2m": 2}


def fields(src):
    """(variable name, level or None, per-time reader) for every field of one time."""
    out = []
    for name, var in src.variables.items():
        if var.ndim == 3 and name not in ("time",):
            out.append((name, None, var))
        elif var.ndim == 4:
            lev = src.variables[var.dimensions[1]][:]
            for k, level in enumerate(lev):
                out.append((name, (k, float(level)), var))
    return out


def peer_nc(inp, outp, deflate):
    src = netCDF4.Dataset(inp)
    nt = len(src.dimensions["time"])
    tmp = outp + ".tmp"
    tm = Timer()
    tm.start()
    dst = netCDF4.Dataset(tmp, "w", format="NETCDF4")
    for dname, dim in src.dimensions.items():
        dst.createDimension(dname, None if dim.isunlimited() else len(dim))
    for name, var in src.variables.items():
        kw = {}
        if var.ndim >= 3:
            kw = dict(chunksizes=(1,) * (var.ndim - 2) + var.shape[-2:])
            if deflate:
                kw.update(zlib=True, complevel=4, shuffle=True)
        v = dst.createVariable(name, var.dtype, var.dimensions, **kw)
        v.setncatts({k: var.getncattr(k) for k in var.ncattrs() if k != "_FillValue"})
        if var.ndim < 3:
            v[...] = var[...]
    dst.setncatts({k: src.getncattr(k) for k in src.ncattrs()})
    tm.stop()
    big = [(n, v) for n, v in src.variables.items() if v.ndim >= 3]
    for t in range(nt):
        for name, var in big:
            x = var[t]  # untimed read
            tm.start()
            dst.variables[name][t] = x
            tm.stop()
    tm.start()
    dst.close()
    fd = os.open(tmp, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    os.rename(tmp, outp)
    tm.stop()
    n = sum(v[0].size for _, v in big) * nt
    return nt, n, tm


def peer_grib(inp, outp, packing):
    src = netCDF4.Dataset(inp)
    nt = len(src.dimensions["time"])
    lat = src.variables["latitude"][:]
    lon = src.variables["longitude"][:]
    ref = netCDF4.num2date(src.variables["forecast_reference_time"][...],
                           src.variables["forecast_reference_time"].units)
    fp_ = src.variables["forecast_period"][:]
    flds = fields(src)
    tm = Timer()
    tm.start()
    f = open(outp + ".tmp", "wb")
    tm.stop()
    n = 0
    for t in range(nt):
        for name, lev, var in flds:
            x32 = np.ma.getdata(var[t] if lev is None else var[t, lev[0]])  # untimed read
            tm.start()
            x = x32.astype(np.float64).ravel()  # eccodes takes doubles: part of writing float32
            h = eccodes.codes_grib_new_from_samples("GRIB2")
            eccodes.codes_set(h, "centre", 98)
            eccodes.codes_set(h, "Ni", len(lon))
            eccodes.codes_set(h, "Nj", len(lat))
            eccodes.codes_set(h, "latitudeOfFirstGridPointInDegrees", float(lat[0]))
            eccodes.codes_set(h, "longitudeOfFirstGridPointInDegrees", float(lon[0]))
            eccodes.codes_set(h, "latitudeOfLastGridPointInDegrees", float(lat[-1]))
            eccodes.codes_set(h, "longitudeOfLastGridPointInDegrees", float(lon[-1]))
            eccodes.codes_set(h, "iDirectionIncrementInDegrees", 0.25)
            eccodes.codes_set(h, "jDirectionIncrementInDegrees", 0.25)
            eccodes.codes_set(h, "jScansPositively", 0)
            eccodes.codes_set(h, "dataDate", int(ref.strftime("%Y%m%d")))
            eccodes.codes_set(h, "dataTime", ref.hour * 100)
            eccodes.codes_set(h, "typeOfProcessedData", 1)
            if lev is not None:
                eccodes.codes_set(h, "typeOfLevel", "isobaricInhPa")
                eccodes.codes_set(h, "level", int(lev[1]))
            elif name in HEIGHT:
                eccodes.codes_set(h, "typeOfLevel", "heightAboveGround")
                eccodes.codes_set(h, "level", HEIGHT[name])
            else:
                eccodes.codes_set(h, "typeOfLevel", "surface")
            eccodes.codes_set(h, "paramId", PARAM_ID[name])
            eccodes.codes_set(h, "stepUnits", 1)
            eccodes.codes_set(h, "step", int(fp_[t]))
            eccodes.codes_set(h, "packingType", "grid_" + packing)
            eccodes.codes_set(h, "bitsPerValue", 16)
            eccodes.codes_set_values(h, x)
            eccodes.codes_write(h, f)
            eccodes.codes_release(h)
            tm.stop()
            n += x.size
    tm.start()
    f.flush()
    os.fsync(f.fileno())
    f.close()
    os.rename(outp + ".tmp", outp)
    tm.stop()
    return nt, n, tm


def main():
    mode, inp, outp = sys.argv[1:4]
    if mode == "nc":
        deflate = "--deflate" in sys.argv[4:]
        nt, n, tm = peer_nc(inp, outp, deflate)
        label = "netCDF4-python" + (" deflate 4" if deflate else "")
    else:
        packing = sys.argv[4]
        nt, n, tm = peer_grib(inp, outp, packing)
        label = "eccodes-python grid_" + packing
    mb = n * 4 / 1e6
    print(json.dumps({"mode": label, "times": nt, "mb_float32": round(mb, 1), "seconds": round(tm.wall, 2),
                      "mb_s": round(mb / tm.wall, 1), "cpu_seconds": round(tm.cpu, 2),
                      "mb_per_cpu_s": round(mb / tm.cpu, 1), "bytes_out": os.path.getsize(outp)}))


if __name__ == "__main__":
    main()
