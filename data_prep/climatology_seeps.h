/* WeatherBench2's SEEPS climatology (the version-2 fields of climatology.wxc, io/climatology.h),
 * built by wx_climatology_build after the mean. For day of year d, hour h and point p, over the
 * same records as the mean (the window's years, hour h, day 365 of a non-leap year also counting
 * as its day 366) and the days d+k, k = -H..H of the 2H+1-day window (circular over 366 days):
 *   dry fraction(d, h) = #{x < dry} / #{x}   over k = -H..H, unweighted
 *       (weatherbench2 scripts/compute_climatology.py SEEPSThreshold: is_dry.mean over (year,
 *       window), whose end days have weight 0 in the mean but count here)
 *   wet threshold(d, h) = the 2/3 quantile of the values x >= dry, each weighted H - |k|
 *       (the same SEEPSThreshold: not_dry.weighted(window_weights).quantile(2/3)), computed as
 *       xarray's weighted quantile does (Kish's effective sample size nw = (Σw)²/Σw², the
 *       "linear" method: h = (nw-1)·q + 1 clipped to [1, nw], the weighted mean of the sorted
 *       values over the cumulative-weight interval [(h-1)/nw, h/nw] of the normalised weights);
 *       the end days k = ±H have weight 0 and drop out, as xarray drops zero weights.
 * The comparison with the dry threshold is in float32, as WB2's on float32 fields (x = 0.1 mm
 * exactly as a float is not dry). NaN values are left out of both (WB2 counts a missing value as not dry in the denominator of
 * the dry fraction; with complete years there is none). A threshold with no wet value is NaN; a
 * dry fraction with no value is NaN. The dry threshold is WB2's for the channel's accumulation
 * period (io/climatology.h wx_seeps_dry_threshold). */
#ifndef WX_CLIMATOLOGY_SEEPS_H
#define WX_CLIMATOLOGY_SEEPS_H

#include <stdint.h>
#include <stdio.h>

#include "climatology_build.h"
#include "io/climatology.h"

/* The channel of `m` SEEPS is built for: tp (catalogue match, single level), accumulated over
 * accum_s (or, when 0, over the archive's step, as forecast files take it) of 6 h or 24 h, in
 * units with a WB2 dry threshold, and a window of at most 365 days. Returns the channel and
 * sets *period_s and *dry, or -1 (with one info line saying why when there is a tp channel). */
int wx_clim_seeps_channel(const wx_archive_meta *m, int window, int64_t *period_s, double *dry);

/* Writes the SEEPS slabs of header h (seeps_chan, seeps_dry, seeps_offset, hours set) into fp
 * from records t0..t1 (those whose hour has hidx >= 0; hidx[hour of day] = index of the stored
 * hour), within budget_bytes of memory (points × every kept record), and sets crcs[0, 366·nhours)
 * to the slabs' crc32. */
wx_status wx_clim_seeps_build(FILE *fp, const char *path, const wx_archive_meta *m,
                              const wx_clim_header *h, int64_t t0, int64_t t1, const int hidx[24],
                              int64_t budget_bytes, wx_clim_fetch fetch, void *ctx, uint32_t *crcs);

#endif
