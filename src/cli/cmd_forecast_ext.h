/* The product, lead and ensemble options of `wxcast forecast` (kept apart from cmd_forecast.c). */
#ifndef WX_CMD_FORECAST_EXT_H
#define WX_CMD_FORECAST_EXT_H

#include "cli/wx_args.h"
#include "infer/forecast.h"

#define WX_FORECAST_EXT_OPTIONS                                                                   \
    {"lead", 1, "forecast length instead of --steps, not with it (\"240h\")", "DURATION"},              \
    {"grib", 1, "also (or only) write GRIB2: DIR/forecast_<init>_sfc.grib2 and _pl.grib2", "DIR"}, \
    {"grib-bits", 1, "GRIB2 bits per value, 1..32 (default 16; with --grib)", "N"},                                   \
    {"grib-packing", 1, "GRIB2 packing: simple (default) or ccsds (with --grib)", "KIND"},                       \
    {"compress", 0, "deflate the NetCDF variables (level 4, shuffle)", NULL},                      \
    {"members", 1, "ensemble members run as one batch (member 0 unperturbed)", "N"},               \
    {"perturbation", 1, "gaussian (default), spherical-gaussian or bred (with --members)", "KIND"},                \
    {"amplitude", 1, "perturbation size (> 0) in channel std deviations (default 0.05)", "A"},      \
    {"seed", 1, "ensemble random seed (default 1; with --members)", "S"},

/* The backend options of `wxcast forecast` and `wxcast daily`. */
#define WX_FORECAST_DEVICE_OPTIONS                                                                \
    {"device", 1, "backend of the rollout: cpu (default) or cuda (GPU 0)", "DEV"},                \
    {"precision", 1, "cuda GEMMs: fp32 (default) or bf16 inputs with fp32 accumulation", "P"},

/* --device and --precision: *device NULL when absent (cpu, or the config's), *precision NULL when
 * absent; usage errors name the option and the values it takes. */
wx_status wx_forecast_device_from_args(const wx_args *a, const char **device, const char **precision);

/* Fills x from the parsed options; usage errors name the option. */
wx_status wx_forecast_ext_from_args(const wx_args *a, wx_forecast_ext *x);

#endif
