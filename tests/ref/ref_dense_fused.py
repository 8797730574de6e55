"""Reference fixtures for the fused dense ops (src/ops/dense_fused.c), from PyTorch float64 autograd.

Independent of our C code: each fused op is written as the plain torch composition it replaces
(a + r, F.layer_norm, F.linear, F.gelu), and every gradient comes from autograd with random
upstream gradients (loss = Σ upstream ⊙ output over every output). Writes
tests/ref/fixtures/dense_fused_<op>.wxfx. Run with /usr/bin/python3 (Debian python3-torch).
"""
import torch
import torch.nn.functional as F

import wxfixture

torch.set_default_dtype(torch.float64)


def leaf(*shape, scale=1.0, shift=0.0):
    return (torch.randn(*shape) * scale + shift).requires_grad_(True)


def layernorm_residual():
    # 66 rows: more than one 64-row chunk of parameter partials and a partial 16-row block;
    # C = 20: not a multiple of the 8 vector lanes.
    n, c, eps = 66, 20, 1e-6
    a, r = leaf(n, c, scale=2.0, shift=1.5), leaf(n, c, scale=0.5)
    gamma, beta = leaf(c, shift=1.0), leaf(c)
    s = a + r
    y = F.layer_norm(s, (c,), gamma, beta, eps)
    z = s + y
    dy, dz, dres = torch.randn_like(y), torch.randn_like(z), torch.randn_like(s)
    # s's other consumers are modelled by Σ dres ⊙ s in the loss.
    loss = (dy * y).sum() + (dz * z).sum() + (dres * s).sum()
    da, dr, dgamma, dbeta = torch.autograd.grad(loss, (a, r, gamma, beta), retain_graph=True)
    assert torch.equal(da, dr)
    # Without dz and dres: y only.
    da_y, dgamma_y, dbeta_y = torch.autograd.grad((dy * y).sum(), (a, gamma, beta))
    mean = s.mean(dim=1)
    rstd = 1.0 / torch.sqrt(s.var(dim=1, unbiased=False) + eps)
    wxfixture.write("dense_fused_layernorm_residual",
                    dict(a=a, r=r, gamma=gamma, beta=beta, eps=eps, s=s, y=y, z=z, mean=mean,
                         rstd=rstd, dy=dy, dz=dz, dres=dres, ds=da, dgamma=dgamma, dbeta=dbeta,
                         ds_y=da_y, dgamma_y=dgamma_y, dbeta_y=dbeta_y))


def linear_gelu():
    # 70 rows: two 64-row chunks of bias partials, the second partial.
    n, fin, fout = 70, 13, 9
    x, w, b = leaf(n, fin), leaf(fout, fin, scale=0.4), leaf(fout)
    h = F.linear(x, w, b)
    g = F.gelu(h, approximate="none")
    dg = torch.randn_like(g)
    dx, dw, db = torch.autograd.grad((dg * g).sum(), (x, w, b), retain_graph=True)
    h0 = F.linear(x, w)
    wxfixture.write("dense_fused_linear_gelu",
                    dict(x=x, w=w, b=b, h=h, g=g, h_nobias=h0, g_nobias=F.gelu(h0), dg=dg, dx=dx,
                         dw=dw, db=db, dh=torch.autograd.grad((dg * g).sum(), h)[0]))


def main():
    torch.manual_seed(20261130)
    layernorm_residual()
    linear_gelu()


if __name__ == "__main__":
    main()
