/* Helpers shared by the tests that compare wxcast's FourCastNet-family models with the PyTorch
 * fixtures of tests/ref (ref_fourcastnet.py, ref_precipnet.py). */
#ifndef WX_FCN_FIXTURE_H
#define WX_FCN_FIXTURE_H

#include "models/fourcastnet_config.h"
#include "wx_fixture.h"

/* The AFNO configuration stored under "cfg/..." by the reference scripts (NVlabs key names);
 * count_unused_norm is set, as the reference models build NVlabs' unused final norm. */
wx_fcn_config wx_fixture_fcn_config(const wx_fixture *f);

#endif
