/* import-weights --data for DeepMind GraphCast checkpoints (cmd_weights.c): what a forecast needs
 * besides the network, from DeepMind's normalisation files and a file with the static fields. */
#ifndef WX_WEIGHTS_GC_DATA_H
#define WX_WEIGHTS_GC_DATA_H

#include "core/wx_error.h"
#include "models/graphcast.h"

/* DATA.yaml (docs/weights.md): mean_by_level, stddev_by_level, diffs_stddev_by_level (NetCDF,
 * relative to DATA.yaml), statics (a GRIB or NetCDF file holding the model's static variables on
 * its grid), time_step (6h). *text: the checkpoint's DATA section (channels_in/out = the state in
 * wxcast's order with DeepMind's mean, std and diff_std; forcings with their mean and std; the
 * time step, window and grid); *fields (n_static, nlat, nlon): the static fields normalised by
 * DeepMind's statistics (the FLDS section). Config errors (unknown key, bad time step) are
 * WX_ERR_USAGE; a missing variable or level in a file, a std <= 0 and a statics file without a
 * variable or on another grid are WX_ERR_RUN, each naming the file, variable and level. */
wx_status wx_weights_gc_data(const char *path, const wx_gc_config *c, char **text, float **fields);

#endif
