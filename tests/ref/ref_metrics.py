"""Independent numpy implementation of the WeatherBench2 scores (weatherbench2/metrics.py and
utils.py as described in shared/reference/products-and-metrics.md §2) for test_metrics.c.

Written the xarray way WB2 does it: latitude made increasing first, cell bounds
[-90, midpoints, 90], weights sin(upper) - sin(lower) divided by their mean, weighted means over
(lat, lon) skipping points where the truth (or, for ACC, the climatology) is missing (WB2
aggregates with skipna=False; wxcast skips them so padded rows do not poison a score), while a
missing forecast value where the truth is present makes that time's score NaN, as in WB2 (a model
that breaks down must not score better), CRPS spread as the plain double sum over member pairs (not the rank form the
C code uses), variance with ddof=1, RMSE as the square root after the time mean. Also NVlabs
FourCastNet's latitude weights and per-time RMSE/ACC, written the way its numpy code is, and WB2's
wind-vector RMSE.
"""
import numpy as np

import wxfixture


def lat_weights(lat):
    lat = np.sort(lat)
    mids = (lat[:-1] + lat[1:]) / 2
    bounds = np.concatenate([[-90.0], mids, [90.0]])
    w = np.sin(np.deg2rad(bounds[1:])) - np.sin(np.deg2rad(bounds[:-1]))
    return lat, w / w.mean()


def wmean(x, w):
    """xarray DataArray.weighted(w).mean(('latitude','longitude')) with skipna."""
    ww = np.broadcast_to(w[:, None], x.shape)
    ok = np.isfinite(x)
    return np.sum(np.where(ok, x, 0) * ww) / np.sum(np.where(ok, ww, 0))


def case(rng, lat_desc, nlon, T, M, prefix, out):
    H = lat_desc.size
    q = lambda a: a.astype(np.float32).astype(np.float64)  # exactly representable in float32
    o = q(rng.normal(280, 10, (T, H, nlon)))
    c = q(o + rng.normal(0, 4, (T, H, nlon)) - 1.0)
    f = q(o + rng.normal(0.5, 2, (T, H, nlon)))
    ens = q(o[:, None] + rng.normal(0.3, 2.5, (T, M, H, nlon)))
    o[1, 2, 3] = np.nan          # a missing truth point: skipped by every score at that time
    ens[1, 1, 2, 3] = np.nan     # a member missing where the truth is too: skipped as well
    lat_inc, w = lat_weights(lat_desc)
    flip = lambda a: a[..., ::-1, :]  # north→south storage → increasing latitude, as WB2 does
    mse, bias, mae, acc, crps, var, emse = [], [], [], [], [], [], []
    for t in range(T):
        ft, ot, ct, et = flip(f[t]), flip(o[t]), flip(c[t]), flip(ens[t])
        scored = np.isfinite(ot)
        poison = np.nan if np.any(~np.isfinite(ft) & scored) else 0.0  # NaN + x = NaN
        d = np.where(scored, ft - ot, np.nan)
        mse.append(wmean(d ** 2, w) + poison)
        bias.append(wmean(d, w) + poison)
        mae.append(wmean(np.abs(d), w) + poison)
        # One point set for all three means: a point missing in f, o or c leaves every term
        # (WB2 itself aggregates with skipna=False, so any NaN makes its score NaN).
        fa, oa = ft - ct, ot - ct
        joint = np.isfinite(oa)
        apoison = np.nan if np.any(~np.isfinite(fa) & joint) else 0.0
        fa, oa = np.where(joint, fa, np.nan), np.where(joint, oa, np.nan)
        acc.append(wmean(fa * oa, w) / np.sqrt(wmean(fa ** 2, w) * wmean(oa ** 2, w)) + apoison)
        epoison = np.nan if np.any(np.any(~np.isfinite(et), axis=0) & scored) else 0.0
        mask = lambda a: np.where(scored, a, np.nan)
        skill = np.mean(np.abs(et - ot[None]), axis=0)
        pair = np.abs(et[:, None] - et[None, :]).sum(axis=(0, 1)) / (M * (M - 1))
        crps.append(wmean(mask(skill), w) - 0.5 * wmean(mask(pair), w) + epoison)
        var.append(wmean(mask(np.var(et, axis=0, ddof=1)), w) + epoison)
        emse.append(wmean(mask((et.mean(axis=0) - ot) ** 2), w) + epoison)
    ssr = np.sqrt(np.mean(var)) / np.sqrt(np.mean(emse))
    out.update({
        prefix + "lat": lat_desc, prefix + "weights_increasing": w, prefix + "lat_increasing": lat_inc,
        prefix + "f": f, prefix + "o": o, prefix + "c": c, prefix + "ens": ens,
        prefix + "mse_t": np.array(mse), prefix + "bias_t": np.array(bias),
        prefix + "acc_t": np.array(acc), prefix + "crps_t": np.array(crps),
        prefix + "var_t": np.array(var), prefix + "emse_t": np.array(emse),
        prefix + "rmse": np.sqrt(np.mean(mse)), prefix + "bias": np.mean(bias),
        prefix + "mae": np.mean(mae), prefix + "acc": np.mean(acc), prefix + "crps": np.mean(crps),
        prefix + "ssr": ssr, prefix + "ssr_fair": np.sqrt((M + 1) / M) * ssr,
    })


def fourcastnet_weights(num_lat):
    """NVlabs FourCastNet utils/weighted_acc_rmse.py: lat(j) = 90 - j*180/(num_lat-1),
    weight = num_lat * cos(lat) / sum(cos(lat)) (written as there, per row index)."""
    lat = lambda j: 90.0 - j * 180.0 / float(num_lat - 1)
    s = np.sum(np.cos(np.pi / 180.0 * lat(np.arange(0, num_lat))))
    return np.array([num_lat * np.cos(np.pi / 180.0 * lat(j)) / s for j in range(num_lat)])


def wind_case(rng, lat_desc, nlon, T, out):
    """WB2 WindVectorRMSE: sqrt(mean_t <(fu-ou)^2 + (fv-ov)^2>), cell-area weights, NaN skipped;
    and NVlabs-style scores of u with the FourCastNet weights: the mean over t of the per-time
    RMSE sqrt(mean(w*(f-o)^2)), and ACC sum(w f'o')/sqrt(sum(w f'^2) sum(w o'^2)) against a fixed
    (time-mean) climatology cm."""
    H = lat_desc.size
    q = lambda a: a.astype(np.float32).astype(np.float64)
    ou, ov = q(rng.normal(0, 8, (T, H, nlon))), q(rng.normal(0, 6, (T, H, nlon)))
    fu, fv = q(ou + rng.normal(0.4, 2, (T, H, nlon))), q(ov + rng.normal(-0.2, 3, (T, H, nlon)))
    ov[1, 3, 2] = np.nan  # a missing truth point: skipped for the vector at that time
    _, w = lat_weights(lat_desc)
    flip = lambda a: a[..., ::-1, :]
    vmse = []
    for t in range(T):
        d2 = flip(fu[t] - ou[t]) ** 2 + flip(fv[t] - ov[t]) ** 2
        vmse.append(wmean(d2, w))
    cm = q(rng.normal(0, 3, (H, nlon)))
    wf = fourcastnet_weights(H)[:, None]
    rm, ac = [], []
    for t in range(T):
        rm.append(np.sqrt(np.mean(wf * (fu[t] - ou[t]) ** 2)))
        fa, oa = fu[t] - cm, ou[t] - cm
        ac.append(np.sum(wf * fa * oa) / np.sqrt(np.sum(wf * fa ** 2) * np.sum(wf * oa ** 2)))
    out.update({"w_lat": lat_desc, "w_fu": fu, "w_fv": fv, "w_ou": ou, "w_ov": ov,
                "w_vector_rmse": np.sqrt(np.mean(vmse)), "w_cm": cm,
                "w_fcn_rmse": np.mean(rm), "w_fcn_acc": np.mean(ac)})


def main():
    rng = np.random.default_rng(20240601)
    out = {}
    # Global 30° grid with both poles (rows north→south as archives store them).
    case(rng, np.arange(90.0, -90.1, -30.0), 8, 4, 5, "a_", out)
    # A 720-row-style grid without the south pole: 10 rows 90..-72 step 18.
    case(rng, 90.0 - 18.0 * np.arange(10), 12, 3, 4, "b_", out)
    # FourCastNet's weights on NVlabs' 720 rows, ERA5's 721 and a small odd grid.
    for n in (720, 721, 19):
        out["fcn_weights_%d" % n] = fourcastnet_weights(n)
    wind_case(rng, np.arange(90.0, -90.1, -22.5), 16, 3, out)
    print(wxfixture.write("metrics", out))


if __name__ == "__main__":
    main()
