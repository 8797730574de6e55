/* Loading a model config file (the `type: fourcastnet|graphcast` schemas of models/) where a user
 * may hand over the wrong kind of file: a checkpoint, weights, or another wxcast YAML (training or
 * daily config, ingest recipe, synthetic-world config). Those are refused saying what the file is
 * and what was expected, instead of the YAML parser's or the schema's complaint about its bytes
 * or keys. Used by `info --model`, `import-weights --config` and a training config's `model:`. */
#ifndef WX_MODEL_CONFIG_FILE_H
#define WX_MODEL_CONFIG_FILE_H

#include "core/wx_yaml.h"

/* Parses path into *root (free with wx_yaml_free). Errors: WX_ERR_USAGE naming the file (the YAML
 * layer's syntax errors unchanged; a missing file as the YAML layer says it). */
wx_status wx_model_config_load(const char *path, wx_yaml **root);

#endif
