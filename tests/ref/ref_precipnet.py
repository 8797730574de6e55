"""Reference fixture for PrecipNet (src/models/precipnet.c), PyTorch float64 autograd.

An independent re-statement of NVlabs FourCastNet `networks/afnonet.py` PrecipNet: backbone =
AFNONet (the module definitions of ref_fourcastnet.py, imported), ppad = PeriodicPad2d(1)
(utils/img_utils.py: circular pad in longitude, zero pad in latitude), conv = Conv2d(C, C, 3,
padding 0, bias), ReLU. state_dict() gives the NVlabs names (backbone.*, conv.weight, conv.bias).
Loss = Σ dy ⊙ y with a random dy; gradients from autograd. Also the target transform
log1p(tp/1e-5) and its inverse 1e-5·(exp(x) − 1) (NVlabs reshape_precip / unlog_tp).

Writes tests/ref/fixtures/precip_tiny.wxfx: cfg/*, param/<name>, x, y, dy, grad/<name>, dx,
tp, logtp, unlog. Run with /usr/bin/python3.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import ref_fourcastnet as fcn
import wxfixture

torch.set_default_dtype(torch.float64)

EPS = 1e-5
CFG = dict(img_h=16, img_w=24, in_chans=3, out_chans=1, patch_size=4, embed_dim=16, depth=1,
           mlp_ratio=4.0, num_blocks=2, sparsity_threshold=0.05, hard_thresholding_fraction=1.0,
           hidden_size_factor=1, two_sided=False)
MARGIN = 1e-4  # every ReLU/softshrink input this far from its kink: float32 takes the same branch


class PeriodicPad2d(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.width = width

    def forward(self, x):
        out = F.pad(x, (self.width, self.width, 0, 0), mode="circular")
        return F.pad(out, (0, 0, self.width, self.width), mode="constant", value=0.0)


class PrecipNet(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        c = cfg["out_chans"]
        self.backbone = fcn.AFNONet(cfg)
        self.ppad = PeriodicPad2d(1)
        self.conv = nn.Conv2d(c, c, kernel_size=3, stride=1, padding=0, bias=True)
        self.act = nn.ReLU()
        self.pre_act = None

    def forward(self, x):
        x = self.conv(self.ppad(self.backbone(x)))
        self.pre_act = x.detach()
        return self.act(x)


def main():
    for seed in range(700, 900):
        gen = torch.Generator().manual_seed(seed)
        model = PrecipNet(CFG)
        fcn.randomise(model.backbone, gen)
        with torch.no_grad():
            model.conv.weight.copy_(torch.randn(model.conv.weight.shape, generator=gen) / 3.0)
            model.conv.bias.copy_(torch.randn(model.conv.bias.shape, generator=gen) * 0.1)
        x = torch.randn(2, CFG["in_chans"], CFG["img_h"], CFG["img_w"], generator=gen)
        rec = []
        model.backbone.set_record(rec)
        with torch.no_grad():
            model(x)
        model.backbone.set_record(None)
        margin = min(fcn.kink_margin(rec, CFG["sparsity_threshold"]),
                     model.pre_act.abs().min().item())
        if margin > MARGIN:
            break
    else:
        raise RuntimeError("no seed kept the activations away from the kinks")
    names = [k for k, _ in model.named_parameters()]
    assert "backbone.pos_embed" in names and names[-2:] == ["conv.weight", "conv.bias"], names
    x.requires_grad_(True)
    y = model(x)
    dy = torch.randn(y.shape, generator=gen)
    (y * dy).sum().backward()
    positive = (y > 0).double().mean().item()
    data = fcn.cfg_tensors(CFG)
    data.update(fcn.params_dict(model))
    data.update(dict(x=x.detach(), y=y.detach(), dy=dy, dx=x.grad))
    data.update(fcn.grads_dict(model))
    # Transform: accumulations from 0 to 50 mm (m of water), including exact zeros.
    tp = torch.cat([torch.zeros(3), torch.rand(60, generator=gen) ** 4 * 0.05])
    logtp = torch.log1p(tp / EPS)
    data.update(dict(tp=tp, logtp=logtp, unlog=EPS * (torch.exp(logtp) - 1.0)))
    print(f"  precip_tiny: seed {seed}, kink margin {margin:.2e}, {positive:.0%} of y > 0, "
          f"{sum(p.numel() for p in model.parameters())} params")
    wxfixture.write("precip_tiny", data)


if __name__ == "__main__":
    main()
