"""Reference fixtures for the conv op family (src/ops/conv.c), from PyTorch float64 autograd.

conv3x3 is NVlabs FourCastNet's precipitation head (utils/img_utils.py PeriodicPad2d(1), then
nn.Conv2d(padding=0)), restated with torch ops: circular padding of 1 in longitude (last axis),
zero padding of 1 in latitude, then F.conv2d. Gradients from autograd with a random upstream
gradient dy. Writes tests/ref/fixtures/conv_<case>.wxfx. Run with /usr/bin/python3.
"""
import torch
import torch.nn.functional as F

import wxfixture

torch.set_default_dtype(torch.float64)


def periodic_pad(x):
    x = F.pad(x, (1, 1, 0, 0), mode="circular")
    return F.pad(x, (0, 0, 1, 1), mode="constant", value=0.0)


def case(name, b, cin, h, w, cout, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(b, cin, h, w, generator=gen).requires_grad_(True)
    wt = (torch.randn(cout, cin, 3, 3, generator=gen) / 3.0).requires_grad_(True)
    bias = torch.randn(cout, generator=gen).requires_grad_(True)
    y = F.conv2d(periodic_pad(x), wt, bias)
    assert y.shape == (b, cout, h, w)
    dy = torch.randn(y.shape, generator=gen)
    dx, dwt, dbias = torch.autograd.grad(y, (x, wt, bias), dy)
    y_nobias = F.conv2d(periodic_pad(x), wt)
    wxfixture.write("conv_" + name, dict(x=x, wt=wt, bias=bias, y=y, y_nobias=y_nobias, dy=dy,
                                         dx=dx, dwt=dwt, dbias=dbias))


def main():
    case("main", 2, 3, 5, 7, 4, 11)     # several channels, odd sizes
    case("narrow", 1, 2, 3, 2, 1, 12)   # W = 2: both neighbours of a column are the same column
    case("head", 2, 1, 6, 8, 1, 13)     # the precipitation head's 1 -> 1 shape


if __name__ == "__main__":
    main()
