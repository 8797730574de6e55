"""Reference fixtures for the losses (src/ops/loss.c), computed independently with torch in
float64 and autograd.

mse_latw: (wlat[None,None,:,None] * wch[None,:,None,None] * (p - t)**2).mean()
rel_l2:   NVlabs LpLoss(p=2, size_average=True) = mean_b ||p_b - t_b|| / ||t_b||

Writes fixtures/loss_mse_latw.wxfx and fixtures/loss_rel_l2.wxfx."""
import math

import torch

import wxfixture

torch.set_default_dtype(torch.float64)


def mse_latw(gen):
    b, c, h, w = 2, 3, 5, 6
    lat = torch.linspace(-80, 80, h)
    wlat = torch.cos(lat * math.pi / 180)
    wlat = wlat / wlat.mean()
    wch = torch.rand(c, generator=gen) + 0.5
    pred = torch.randn(b, c, h, w, generator=gen)
    target = torch.randn(b, c, h, w, generator=gen)
    dloss = 0.7
    out = {"pred": pred, "target": target, "wlat": wlat, "wch": wch, "dloss": dloss}
    for suffix, weights in (("", wch), ("_nowch", torch.ones(c))):
        p = pred.clone().requires_grad_()
        loss = (wlat[None, None, :, None] * weights[None, :, None, None] * (p - target) ** 2).mean()
        (dpred,) = torch.autograd.grad(loss, p, torch.tensor(dloss))
        out["loss" + suffix] = loss
        out["dpred" + suffix] = dpred
    wxfixture.write("loss_mse_latw", out)


def rel_l2(gen):
    b, shape = 3, (4, 5)
    pred = torch.randn(b, *shape, generator=gen).requires_grad_()
    target = torch.randn(b, *shape, generator=gen)
    # LpLoss.rel: norms of the flattened samples, p = 2, then the mean over the batch.
    diff = torch.norm(pred.reshape(b, -1) - target.reshape(b, -1), 2, 1)
    ref = torch.norm(target.reshape(b, -1), 2, 1)
    loss = torch.mean(diff / ref)
    dloss = -1.3
    (dpred,) = torch.autograd.grad(loss, pred, torch.tensor(dloss))
    wxfixture.write("loss_rel_l2", {"pred": pred.reshape(b, -1), "target": target.reshape(b, -1),
                               "loss": loss, "dloss": dloss, "dpred": dpred.reshape(b, -1)})


if __name__ == "__main__":
    g = torch.Generator().manual_seed(4321)
    mse_latw(g)
    rel_l2(g)
