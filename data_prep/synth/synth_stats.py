#!/usr/bin/python3
"""Measurements of the synthetic world from its NetCDF files (docs/synth.md). Run with Debian's
/usr/bin/python3 (numpy, netCDF4, matplotlib).

  synth_stats.py stats DIR            per-year z500 mean / spread, 24 h persistence, ranges
  synth_stats.py twin DIR_A DIR_B [CLIM_DIR] [--log TWIN_LOG]
                                      z500 twin difference vs time, doubling time, saturation;
                                      with --log also the same for a `twin_log` file (the twins
                                      on the model state in double precision)
  synth_stats.py twinlog TWIN_LOG CLIM_DIR|SAT
                                      the same for a `twin_log` file alone, the saturation level
                                      sqrt(2) x climatological std from CLIM_DIR's z500 files
                                      (streamed, any length) or given in m2 s-2
  synth_stats.py ke KE_TXT PNG        plot of the kinetic-energy spectrum and its slope
  synth_stats.py ranges DIR           min, max and (unweighted) mean of every variable over all
                                      monthly files; fails on a non-finite value

Averages over the regular grid are cos(latitude)-weighted; "spread" is the area mean of the
temporal variance at each point (about that point's mean over the period)."""
import glob
import math
import sys

import numpy as np


def months(d, group="pl500"):
    return sorted(glob.glob(f"{d}/*_{group}_??????.nc"))


def read(path, var):
    import netCDF4
    with netCDF4.Dataset(path) as nc:
        x = np.asarray(nc.variables[var][:], dtype=np.float64)
        lat = np.asarray(nc.variables["latitude"][:], dtype=np.float64)
        t = np.asarray(nc.variables["valid_time"][:], dtype=np.int64)
    if x.ndim == 4:
        x = x[:, 0]
    return t, lat, x


def weights(lat, nlon):
    w = np.cos(np.radians(lat))[:, None] * np.ones((1, nlon))
    return w / w.sum()


def stats(d):
    files = months(d)
    by_year = {}
    pers_num, n_pers, prev = 0.0, 0, None
    tot, tot2, ntot = 0.0, 0.0, 0
    w = None
    for f in files:
        t, lat, z = read(f, "z")
        if w is None:
            w = weights(lat, z.shape[2])
        year = int(f[-9:-5])
        s = by_year.setdefault(year, [0.0, 0.0, 0, 0.0])
        s[0] = s[0] + z.sum(0)
        s[1] = s[1] + (z * z).sum(0)
        s[2] += z.shape[0]
        tot, tot2, ntot = tot + z.sum(0), tot2 + (z * z).sum(0), ntot + z.shape[0]
        seq = z if prev is None else np.concatenate([prev, z])
        dz = seq[4:] - seq[:-4]  # 24 h at 6-hourly output
        pers_num += float((dz * dz * w).sum())
        n_pers += dz.shape[0]
        prev = z[-4:]
    print("year  mean z500 (m2 s-2)  spread (m2 s-2)^2  std (m2 s-2)")
    rows = {}
    for y, (s1, s2, n, _) in sorted(by_year.items()):
        mean = s1 / n
        var = s2 / n - mean * mean
        rows[y] = (float((mean * w).sum()), float((var * w).sum()))
        print(f"{y}  {rows[y][0]:12.1f}  {rows[y][1]:14.1f}  {math.sqrt(rows[y][1]):8.1f}")
    ys = sorted(rows)
    if len(ys) >= 5:
        a, b = rows[ys[1]], rows[ys[4]]
        print(f"year 2 vs year 5: mean differs by {100 * abs(a[0] - b[0]) / abs(b[0]):.3f} %, "
              f"spread by {100 * abs(a[1] - b[1]) / b[1]:.2f} %")
    mean = tot / ntot
    clim_std = math.sqrt(float(((tot2 / ntot - mean * mean) * w).sum()))
    pers = math.sqrt(pers_num / n_pers)
    print(f"24 h persistence RMSE {pers:.1f} m2 s-2, climatological std {clim_std:.1f} m2 s-2, "
          f"ratio {pers / clim_std:.3f}")


def twin(da, db, dclim=None, log=None):
    fa, fb = months(da), months(db)
    err, clim_src = [], []
    w = None
    for a, b in zip(fa, fb):
        ta, lat, za = read(a, "z")
        tb, _, zb = read(b, "z")
        assert (ta == tb).all(), f"{a} and {b} have different times"
        if w is None:
            w = weights(lat, za.shape[2])
        d = za - zb
        d = d - (d * w).sum((1, 2))[:, None, None]
        err.extend(np.sqrt((d * d * w).sum((1, 2))))
        clim_src.append(za)
    if dclim:
        z = np.concatenate([read(f, "z")[2] for f in months(dclim)])
    else:
        z = np.concatenate(clim_src)
    sat = math.sqrt(2 * float((z.var(0) * w).sum()))
    err = np.array(err)
    days = np.arange(len(err)) / 4.0
    print(f"saturation level sqrt(2) x climatological std = {sat:.1f} m2 s-2")
    print("float32 output files:")
    report(days, err, sat, 8)
    if log:
        d, e = np.loadtxt(log, unpack=True, ndmin=2)
        print(f"model state in double precision ({log}):")
        report(d, e, sat, 5)


def clim_sat(d):
    s1 = s2 = w = None
    n = 0
    for f in months(d):
        _, lat, z = read(f, "z")
        if w is None:
            w, s1, s2 = weights(lat, z.shape[2]), 0.0, 0.0
        s1, s2, n = s1 + z.sum(0), s2 + (z * z).sum(0), n + z.shape[0]
    mean = s1 / n
    return math.sqrt(2 * float(((s2 / n - mean * mean) * w).sum()))


def twinlog(log, clim):
    try:
        sat = float(clim)
    except ValueError:
        sat = clim_sat(clim)
    d, e = np.loadtxt(log, unpack=True, ndmin=2)
    print(f"saturation level sqrt(2) x climatological std = {sat:.1f} m2 s-2")
    report(d, e, sat, 5)


def report(days, err, sat, every):
    print("day  z500 rms difference (m2 s-2)")
    for k in range(0, len(err), every):
        print(f"{days[k]:5.1f}  {err[k]:.4e}")
    def doubling(d0, d1):
        m = (days >= d0) & (days <= d1) & (err < 0.25 * sat)
        if m.sum() < 4:
            return float("nan")
        slope = np.polyfit(days[m], np.log2(err[m]), 1)[0]
        return 1 / slope if slope > 0 else float("inf")
    # only the windows the run covers (a 10-day run's "5-25" would be its 5-10 fit)
    wins = [(d0, d1) for d0, d1 in ((0, 10), (5, 15), (5, 25)) if d1 <= days[-1]]
    if days[-1] > 5 and (5, days[-1]) not in wins:
        wins.append((5, days[-1]))
    print("doubling time (fit of log2 error) days " +
          ", ".join(f"{d0:.0f}-{d1:.0f}: {doubling(d0, d1):.2f} d" for d0, d1 in wins) +
          " (points below a quarter of saturation)")
    half = np.nonzero(err >= 0.5 * sat)[0]
    print("error reaches half the saturation level at day " +
          (f"{days[half[0]]:.1f}" if len(half) else f"> {days[-1]:.0f} (last {err[-1] / sat:.2e} of it)"))


def ke(path, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    n, e = np.loadtxt(path, unpack=True)
    m = (n >= 8) & (n <= 0.75 * n.max())
    slope, icpt = np.polyfit(np.log(n[m]), np.log(e[m]), 1)
    fig, ax = plt.subplots(figsize=(6, 4.2))
    ax.loglog(n, e, "o-", ms=3, label="synthetic world (time mean)")
    ax.loglog(n[m], np.exp(icpt) * n[m] ** slope, "r--", label=f"fit n = {int(n[m][0])}..{int(n[m][-1])}: slope {slope:.2f}")
    ref = e[m][0] * (n[m] / n[m][0]) ** -3.0
    ax.loglog(n[m], ref * 0.5, "k:", label="n^-3 (enstrophy cascade)")
    ax.set_xlabel("total wavenumber n")
    ax.set_ylabel("kinetic energy E(n) (J/kg)")
    ax.set_title("Kinetic-energy spectrum, mass-weighted layers")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print(f"slope {slope:.2f} over n = {int(n[m][0])}..{int(n[m][-1])}; wrote {png}")


def ranges(d):
    import netCDF4
    lo, hi, tot, cnt = {}, {}, {}, {}
    for f in sorted(glob.glob(f"{d}/*_??????.nc")):
        with netCDF4.Dataset(f) as nc:
            lev = nc.variables.get("pressure_level")
            for v, var in nc.variables.items():
                if var.ndim < 3:
                    continue
                a = np.asarray(var[:], dtype=np.float64)
                if not np.isfinite(a).all():
                    sys.exit(f"{f}: {v}: non-finite values")
                k = v + (f"{int(lev[0])}" if lev is not None else "")
                lo[k] = min(lo.get(k, math.inf), a.min())
                hi[k] = max(hi.get(k, -math.inf), a.max())
                tot[k] = tot.get(k, 0.0) + a.sum()
                cnt[k] = cnt.get(k, 0) + a.size
    for k in sorted(lo):
        print(f"{k:8s} {lo[k]:.6g} .. {hi[k]:.6g}  mean {tot[k] / cnt[k]:.6g}")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "stats":
        stats(sys.argv[2])
    elif len(sys.argv) >= 4 and sys.argv[1] == "twin":
        args, log = sys.argv[2:], None
        if "--log" in args:
            i = args.index("--log")
            log = args[i + 1]
            del args[i:i + 2]
        twin(args[0], args[1], args[2] if len(args) > 2 else None, log)
    elif len(sys.argv) == 4 and sys.argv[1] == "twinlog":
        twinlog(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "ke":
        ke(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "ranges":
        ranges(sys.argv[2])
    else:
        sys.exit(__doc__)
