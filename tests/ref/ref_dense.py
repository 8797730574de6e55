"""Reference fixtures for the dense op family (src/ops/dense.c), from PyTorch float64 autograd.

Independent of our C code: forward values come from torch.nn.functional / torch ops, gradients from
autograd with a random upstream gradient dy (loss = Σ dy ⊙ y). Writes tests/ref/fixtures/dense_<op>.wxfx.
Run with /usr/bin/python3 (Debian python3-torch).
"""
import torch
import torch.nn.functional as F

import wxfixture

torch.set_default_dtype(torch.float64)


def leaf(*shape, scale=1.0, shift=0.0):
    return (torch.randn(*shape) * scale + shift).requires_grad_(True)


def backward(y, *leaves):
    dy = torch.randn_like(y)
    grads = torch.autograd.grad(y, leaves, dy)
    return dy, grads


def away_from(x, kinks, gap):
    """Moves entries within `gap` of any kink out to kink ± gap (FD/ref stay off the kinks)."""
    x = x.clone()
    for k in kinks:
        d = x - k
        near = d.abs() < gap
        x[near] = k + torch.where(d[near] >= 0, torch.tensor(gap), torch.tensor(-gap))
    return x


def linear():
    n, fin, fout = 7, 13, 5
    x, w, b = leaf(n, fin), leaf(fout, fin, scale=0.3), leaf(fout)
    y = F.linear(x, w, b)
    dy, (dx, dw, db) = backward(y, x, w, b)
    wxfixture.write("dense_linear", dict(x=x, w=w, b=b, y=y, y_nobias=F.linear(x, w), dy=dy, dx=dx,
                                         dw=dw, db=db))


def layernorm():
    n, c, eps = 6, 24, 1e-6
    # A non-zero mean and a non-unit spread, as real activations have.
    x, gamma, beta = leaf(n, c, scale=2.0, shift=3.0), leaf(c, shift=1.0), leaf(c)
    y = F.layer_norm(x, (c,), gamma, beta, eps)
    dy, (dx, dgamma, dbeta) = backward(y, x, gamma, beta)
    mean = x.mean(dim=1)
    rstd = 1.0 / torch.sqrt(x.var(dim=1, unbiased=False) + eps)
    wxfixture.write("dense_layernorm", dict(x=x, gamma=gamma, beta=beta, eps=eps, y=y, mean=mean,
                                            rstd=rstd, dy=dy, dx=dx, dgamma=dgamma, dbeta=dbeta))


def activation(name, fn, kinks=(), extra=(), **scalars):
    base = torch.randn(251) * 2.5
    if kinks:
        base = away_from(base, kinks, 0.05)
    x = torch.cat([base, torch.tensor(extra, dtype=torch.float64)]).requires_grad_(True)
    y = fn(x)
    dy, (dx,) = backward(y, x)
    wxfixture.write("dense_" + name, dict(x=x, y=y, dy=dy, dx=dx, **scalars))


def add():
    a, b = leaf(50), leaf(50)
    y = a + b
    dy, (da, db) = backward(y, a, b)
    wxfixture.write("dense_add", dict(a=a, b=b, y=y, dy=dy, da=da, db=db))


def concat():
    n, cs = 5, (3, 1, 4)
    xs = [leaf(n, c) for c in cs]
    y = torch.cat(xs, dim=-1)
    dy, dxs = backward(y, *xs)
    t = dict(cs=torch.tensor(cs), y=y, dy=dy)
    for i in range(len(cs)):
        t["x%d" % i], t["dx%d" % i] = xs[i], dxs[i]
    wxfixture.write("dense_concat", t)


def patch_embed():
    b, cin, h, w, p, d = 2, 3, 8, 12, 4, 10
    x, wt, bias = leaf(b, cin, h, w), leaf(d, cin, p, p, scale=0.2), leaf(d)
    # As NVlabs PatchEmbed: Conv2d(kernel = stride = p), then flatten(2).transpose(1, 2).
    y = F.conv2d(x, wt, bias, stride=p).flatten(2).transpose(1, 2)
    dy, (dx, dw, dbias) = backward(y, x, wt, bias)
    wxfixture.write("dense_patch_embed", dict(x=x, w=wt, bias=bias, p=p, y=y, dy=dy, dx=dx, dw=dw,
                                              dbias=dbias))


def unpatchify():
    b, c, hp, wp, p = 2, 3, 2, 3, 2
    y = leaf(b, hp, wp, p * p * c)
    # As NVlabs AFNONet.forward: rearrange "b h w (p1 p2 c_out) -> b c_out (h p1) (w p2)".
    out = y.reshape(b, hp, wp, p, p, c).permute(0, 5, 1, 3, 2, 4).reshape(b, c, hp * p, wp * p)
    dout, (dy,) = backward(out, y)
    wxfixture.write("dense_unpatchify", dict(y=y, c=c, p=p, out=out, dout=dout, dy=dy))


def pos_embed():
    b, n, d = 3, 5, 4
    x, pos = leaf(b, n, d), leaf(1, n, d)
    y = x + pos
    dy, (dx, dpos) = backward(y, x, pos)
    wxfixture.write("dense_pos_embed", dict(x=x, pos=pos[0], y=y, dy=dy, dx=dx, dpos=dpos[0]))


def main():
    torch.manual_seed(20240611)
    linear()
    layernorm()
    # Extremes check that gelu/silu neither overflow nor lose their asymptotes.
    extremes = (-40.0, -12.0, 12.0, 40.0)
    activation("gelu", lambda x: F.gelu(x, approximate="none"), extra=extremes)
    activation("silu", F.silu, extra=extremes)
    activation("relu", F.relu, kinks=(0.0,), extra=extremes)
    lam = 0.3
    activation("softshrink", lambda x: F.softshrink(x, lam), kinks=(-lam, lam), extra=extremes,
               **{"lambda": lam})
    add()
    concat()
    patch_embed()
    unpatchify()
    pos_embed()


if __name__ == "__main__":
    main()
