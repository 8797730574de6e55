"""Writes an ERA5-like GRIB1 file for tests/bench/bench_ingest.sh: 0.25-degree global fields
(721 x 1440, north->south, 0..359.75), hourly 2t and msl for 2017-01-01 00..(hours-1) UTC, 16-bit
simple packing as ERA5 delivers it. Usage: python3 bench_ingest_make_grib.py OUT.grib HOURS"""
import sys

import eccodes
import numpy as np

out, hours = sys.argv[1], int(sys.argv[2])
lat = np.linspace(90, -90, 721)[:, None]
lon = np.linspace(0, 359.75, 1440)[None, :]
rng = np.random.default_rng(0)
with open("/usr/share/eccodes/samples/GRIB1.tmpl", "rb") as f:
    sample = eccodes.codes_grib_new_from_file(f)
with open(out, "wb") as fo:
    for h in range(hours):
        for sn in ("2t", "msl"):
            g = eccodes.codes_clone(sample)
            eccodes.codes_set(g, "typeOfLevel", "surface")
            eccodes.codes_set(g, "shortName", sn)
            eccodes.codes_set(g, "dataDate", 20170101)
            eccodes.codes_set(g, "dataTime", h * 100)
            for k, v in (("Ni", 1440), ("Nj", 721), ("latitudeOfFirstGridPointInDegrees", 90),
                         ("latitudeOfLastGridPointInDegrees", -90),
                         ("longitudeOfFirstGridPointInDegrees", 0),
                         ("longitudeOfLastGridPointInDegrees", 359.75),
                         ("iDirectionIncrementInDegrees", 0.25), ("jDirectionIncrementInDegrees", 0.25),
                         ("bitsPerValue", 16)):
                eccodes.codes_set(g, k, v)
            base = 250 + 40 * np.cos(np.radians(lat)) + 5 * np.sin(np.radians(lon) * 3 + h / 4)
            if sn == "msl":
                base = 101325 + 1500 * np.sin(np.radians(lat) * 2) * np.cos(np.radians(lon) * 2 - h / 6)
            vals = base + rng.normal(0, 0.5 if sn == "2t" else 50, (721, 1440))
            eccodes.codes_set_values(g, vals.ravel())
            eccodes.codes_write(g, fo)
            eccodes.codes_release(g)
eccodes.codes_release(sample)
