"""Reference for conservative regridding (src/meteo/wx_regrid.c): WeatherBench2's own
ConservativeRegridder (weatherbench2/regridding.py, the code that makes WB2's 240x121 headline
data), run in float64 on random fields with NaNs.

Cases (each: source grid, target grid, in, out; rows from the north pole as wxcast stores them,
WB2 itself takes latitudes ascending and (lon, lat) order, converted here):
  coarse      2.5 deg with poles (73x144) -> 7.5 deg with poles (25x48): WB2's 0.25 -> 1.5 shape
  ratio       2.5 deg -> 4.0 deg (46x90): a ratio that is not an integer
  fcn         2.5 deg without the south pole (72x144, FourCastNet's cut) -> 7.5 deg with poles
  finer       7.5 deg -> 2.5 deg
Each field holds NaNs at 3 % of the points (WB2 skips them) and one all-NaN 7.5-degree cell
area in the coarse case (its target is NaN). <case>_count is the weight of the finite sources
under each target cell (WB2 divides by it): WB2 computes cell bounds in radians, so two cells
that only touch can overlap by ~1e-17 of a cell; where that is all the finite weight, WB2
returns the touching neighbour's value and wxcast (bounds in degrees, exact) NaN.

Not run in CI (JAX, WB2's module): tests/ref/fixtures/regrid.wxfx is committed. To regenerate:
WB2_PY=venv/bin/python with jax and numpy, PYTHONPATH holding google-research/weatherbench2
(only regridding.py's conservative part is used; sklearn, imported at its top for the nearest
neighbour regridder, can be a stub) — see make_fixtures.sh.
"""
import os

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402

from weatherbench2 import regridding  # noqa: E402
from gc_ref_common import write_wxfx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def grid(res, drop_south=False):
    lat = np.linspace(90, -90, int(round(180 / res)) + 1)  # north -> south (wxcast)
    if drop_south:
        lat = lat[:-1]
    lon = np.arange(0, 360, res)
    return lat, lon


def wb2(src, dst, field):
    """field (nlat, nlon) north->south -> WB2's regrid and the weight of its finite sources
    (`_mean` of the not-NaN mask, as its NaN-skipping mean divides by), north->south."""
    slat, slon = src
    dlat, dlon = dst
    r = regridding.ConservativeRegridder(regridding.Grid.from_degrees(slon, slat[::-1]),
                                         regridding.Grid.from_degrees(dlon, dlat[::-1]))
    wb = lambda a: np.ascontiguousarray(a[::-1].T)  # (lon, lat), latitudes ascending
    out = np.asarray(r.regrid_array(wb(field)))
    count = np.asarray(r._mean(wb((~np.isnan(field)).astype(np.float64))))
    return out.T[::-1], count.T[::-1]


def main():
    rng = np.random.default_rng(20261130)
    cases = {"coarse": (grid(2.5), grid(7.5)), "ratio": (grid(2.5), grid(4.0)),
             "fcn": (grid(2.5, True), grid(7.5)), "finer": (grid(7.5), grid(2.5))}
    out = {}
    for name, (src, dst) in cases.items():
        slat, slon = src
        la, lo = np.meshgrid(np.deg2rad(slat), np.deg2rad(slon), indexing="ij")
        f = (np.cos(la) * np.sin(3 * lo) + 0.3 * np.sin(2 * la) + 0.2 * rng.standard_normal(la.shape))
        f[rng.uniform(size=f.shape) < 0.03] = np.nan
        if name == "coarse":
            f[20:23, 29:32] = np.nan  # every source cell under target (7, 10): 37.5 N, 75 E
        f = f.astype(np.float32).astype(np.float64)  # what wxcast reads
        y, count = wb2(src, dst, f)
        out[name + "_in"] = f
        out[name + "_out"] = y
        out[name + "_count"] = count
        out[name + "_grids"] = np.array([len(slat), len(slon), slat[0], slat[0] - slat[1],
                                         len(dst[0]), len(dst[1]), dst[0][0],
                                         dst[0][0] - dst[0][1]])
        print(name, f.shape, "->", y.shape, "NaN out", int(np.isnan(y).sum()))
    write_wxfx(os.path.join(HERE, "fixtures", "regrid.wxfx"), out)


if __name__ == "__main__":
    main()
