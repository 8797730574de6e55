#include "wx_fcn_fixture.h"

#include <string.h>

wx_fcn_config wx_fixture_fcn_config(const wx_fixture *f) {
    wx_fcn_config c;
    memset(&c, 0, sizeof c);
    c.img_h = (int64_t)wx_fixture_scalar(f, "cfg/img_h");
    c.img_w = (int64_t)wx_fixture_scalar(f, "cfg/img_w");
    c.in_channels = (int64_t)wx_fixture_scalar(f, "cfg/in_chans");
    c.out_channels = (int64_t)wx_fixture_scalar(f, "cfg/out_chans");
    c.patch = (int64_t)wx_fixture_scalar(f, "cfg/patch_size");
    c.embed_dim = (int64_t)wx_fixture_scalar(f, "cfg/embed_dim");
    c.depth = (int64_t)wx_fixture_scalar(f, "cfg/depth");
    c.mlp_ratio = wx_fixture_scalar(f, "cfg/mlp_ratio");
    c.num_blocks = (int64_t)wx_fixture_scalar(f, "cfg/num_blocks");
    c.sparsity_threshold = wx_fixture_scalar(f, "cfg/sparsity_threshold");
    c.hard_thresholding_fraction = wx_fixture_scalar(f, "cfg/hard_thresholding_fraction");
    c.hidden_size_factor = (int64_t)wx_fixture_scalar(f, "cfg/hidden_size_factor");
    c.two_sided_modes = (int)wx_fixture_scalar(f, "cfg/two_sided");
    c.count_unused_norm = 1;
    return c;
}
