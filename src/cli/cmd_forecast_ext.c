#include "cli/cmd_forecast_ext.h"

#include <string.h>

#include "io/grib_write.h"

wx_status wx_forecast_ext_from_args(const wx_args *a, wx_forecast_ext *x) {
    memset(x, 0, sizeof *x);
    x->has_time = wx_args_get(a, "time") != NULL;
    if (wx_args_get(a, "lead"))
        WX_TRY(wx_time_parse_duration(wx_args_get(a, "lead"), "--lead", &x->lead_s));
    x->grib_dir = wx_args_get(a, "grib");
    int64_t bits = 0, members = 0, seed = 1;
    WX_TRY(wx_args_int(a, "grib-bits", 0, &bits));
    WX_TRY(wx_args_int(a, "members", 0, &members));
    WX_TRY(wx_args_int(a, "seed", 1, &seed));
    WX_TRY(wx_args_double(a, "amplitude", 0.05, &x->amplitude));
    if (wx_args_get(a, "grib-bits") && (bits < 1 || bits > 32))
        return wx_error_set(WX_ERR_USAGE, "--grib-bits %lld: expected 1..32", (long long)bits);
    if (seed < 0) /* daily's ensemble.seed takes the same 0..9e18 */
        return wx_error_set(WX_ERR_USAGE, "--seed %lld: expected 0 or more", (long long)seed);
    if (wx_args_get(a, "members") && (members < 1 || members > 1024))
        return wx_error_set(WX_ERR_USAGE, "--members %lld: expected 1..1024", (long long)members);
    if (!(x->amplitude > 0 && x->amplitude <= WX_AMPLITUDE_MAX))
        return wx_error_set(WX_ERR_USAGE, "--amplitude %g: expected > 0 and <= %g (channel standard "
                            "deviations)", x->amplitude, WX_AMPLITUDE_MAX);
    /* options that only mean something with another one: refused rather than ignored */
    static const char *const ens_only[] = {"seed", "amplitude", "perturbation"};
    for (int i = 0; i < 3; i++)
        if (wx_args_get(a, ens_only[i]) && members < 2)
            return wx_error_set(WX_ERR_USAGE, "--%s is for ensembles: it needs --members N with N >= 2%s",
                                ens_only[i], wx_args_get(a, "members") ? " (--members is 1)" : "");
    static const char *const grib_only[] = {"grib-bits", "grib-packing"};
    for (int i = 0; i < 2; i++)
        if (wx_args_get(a, grib_only[i]) && !x->grib_dir)
            return wx_error_set(WX_ERR_USAGE, "--%s is for GRIB2 output: it needs --grib DIR", grib_only[i]);
    if (wx_args_flag(a, "compress") && !wx_args_get(a, "output"))
        return wx_error_set(WX_ERR_USAGE, "--compress is for NetCDF output: it needs --output FILE.nc");
    if (wx_args_get(a, "lead") && wx_args_get(a, "steps"))
        return wx_error_set(WX_ERR_USAGE, "--steps and --lead both give the forecast length: give one");
    x->grib_bits = (int)bits, x->members = (int)members, x->seed = (uint64_t)seed;
    const char *pk = wx_args_get(a, "grib-packing");
    if (pk && !strcmp(pk, "ccsds")) x->grib_packing = WX_GRIB_CCSDS;
    else if (pk && strcmp(pk, "simple"))
        return wx_error_set(WX_ERR_USAGE, "--grib-packing %s: expected simple or ccsds", pk);
    if (wx_args_flag(a, "compress")) x->deflate = 4;
    if (wx_args_get(a, "perturbation"))
        WX_TRY(wx_perturbation_parse(wx_args_get(a, "perturbation"), &x->perturbation));
    return WX_OK;
}

wx_status wx_forecast_device_from_args(const wx_args *a, const char **device, const char **precision) {
    *device = wx_args_get(a, "device");
    *precision = wx_args_get(a, "precision");
    if (*device && strcmp(*device, "cpu") && strcmp(*device, "cuda"))
        return wx_error_set(WX_ERR_USAGE, "--device %s: expected cpu or cuda", *device);
    if (*precision && strcmp(*precision, "fp32") && strcmp(*precision, "bf16"))
        return wx_error_set(WX_ERR_USAGE, "--precision %s: expected fp32 or bf16", *precision);
    return WX_OK;
}
