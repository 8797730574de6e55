/* The key tables of training configs, shared by the loader (train_config.c) and the printer
 * (train_config_print.c) so that both follow one schema. */
#ifndef WX_TRAIN_CONFIG_PRIV_H
#define WX_TRAIN_CONFIG_PRIV_H

#include "core/wx_config.h"
#include "train/train_config.h"

extern const wx_cfg_field *const wx_train_root_fields;
extern const wx_cfg_field *const wx_train_data_fields;
extern const wx_cfg_field *const wx_train_valid_fields;
extern const wx_cfg_field *const wx_train_loss_fields;
const wx_cfg_field *wx_train_stage_fields(wx_train_stage s);
const wx_cfg_field *wx_train_stage_opt_fields(wx_train_stage s);

#endif
