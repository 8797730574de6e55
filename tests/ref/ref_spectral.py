"""Reference fixtures for the spectral ops (rfft2, irfft2, afno_filter) and the AFNO2D forward
composition irfft2(filter(rfft2(x))), from torch float64 autograd.

Independent of wxcast's C code: the FFTs are torch.fft with norm="ortho" on channels-last tensors
(dim=(1,2)); the filter is written like NVlabs AFNO2D (einsum '...bi,bio->...bo' with the
real/imaginary weight split, F.relu, F.softshrink, slicing of the kept modes), and every gradient
comes from autograd of sum(output * upstream). Run with /usr/bin/python3 (Debian's python3-torch).
"""
import torch
import torch.nn.functional as F

import wxfixture

torch.set_default_dtype(torch.float64)


def rand_spec(g, shape):
    """Random complex spectrum as (..., 2) reals, not Hermitian-consistent anywhere."""
    return torch.randn(*shape, 2, generator=g)


def nvlabs_rows_cols(h, frac):
    total = h // 2 + 1
    kept = int(total * frac)
    return slice(total - kept, total + kept), slice(None, kept)


def nvlabs_mask(h, wf, frac):
    rows, cols = nvlabs_rows_cols(h, frac)
    m = torch.zeros(h, wf)
    m[rows, cols] = 1
    return m


def afno_filter(xr, w1, b1, w2, b2, nb, frac, lam, margins=None):
    """xr: (B,H,Wf,C,2) real view of the spectrum. Returns (B,H,Wf,C,2)."""
    b, h, wf, c, _ = xr.shape
    x = torch.view_as_complex(xr.contiguous()).reshape(b, h, wf, nb, c // nb)
    hid = w1.shape[-1]
    rows, cols = nvlabs_rows_cols(h, frac)
    o1r = torch.zeros(b, h, wf, nb, hid)
    o1i = torch.zeros(b, h, wf, nb, hid)
    o2r = torch.zeros(b, h, wf, nb, c // nb)
    o2i = torch.zeros(b, h, wf, nb, c // nb)
    xk = x[:, rows, cols]
    pre_r = (torch.einsum('...bi,bio->...bo', xk.real, w1[0])
             - torch.einsum('...bi,bio->...bo', xk.imag, w1[1]) + b1[0])
    pre_i = (torch.einsum('...bi,bio->...bo', xk.imag, w1[0])
             + torch.einsum('...bi,bio->...bo', xk.real, w1[1]) + b1[1])
    o1r[:, rows, cols] = F.relu(pre_r)
    o1i[:, rows, cols] = F.relu(pre_i)
    o2r[:, rows, cols] = (torch.einsum('...bi,bio->...bo', o1r[:, rows, cols], w2[0])
                          - torch.einsum('...bi,bio->...bo', o1i[:, rows, cols], w2[1]) + b2[0])
    o2i[:, rows, cols] = (torch.einsum('...bi,bio->...bo', o1i[:, rows, cols], w2[0])
                          + torch.einsum('...bi,bio->...bo', o1r[:, rows, cols], w2[1]) + b2[1])
    o = torch.stack([o2r, o2i], dim=-1)
    if margins is not None:
        margins.append(min(pre_r.abs().min().item(), pre_i.abs().min().item()))
        ok = o[:, rows, cols]
        margins.append(((ok.abs() - lam).abs()).min().item())
    return F.softshrink(o, lam).reshape(b, h, wf, c, 2)


def afno_params(g, c, nb, factor, scale):
    bs = c // nb
    hid = bs * factor
    w1 = scale * torch.randn(2, nb, bs, hid, generator=g) / bs ** 0.5
    b1 = scale * torch.randn(2, nb, hid, generator=g)
    w2 = scale * torch.randn(2, nb, hid, bs, generator=g) / hid ** 0.5
    b2 = scale * torch.randn(2, nb, bs, generator=g)
    return [p.requires_grad_() for p in (w1, b1, w2, b2)]


def case_rfft2(name, seed, b, h, w, c):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, h, w, c, generator=g, requires_grad=True)
    X = torch.view_as_real(torch.fft.rfft2(x, dim=(1, 2), norm="ortho"))
    dX = rand_spec(g, X.shape[:-1])
    (X * dX).sum().backward()
    wxfixture.write(name, {"x": x, "X": X, "dX": dX, "dx": x.grad})


def case_irfft2(name, seed, b, h, w, c):
    g = torch.Generator().manual_seed(seed)
    Xr = rand_spec(g, (b, h, w // 2 + 1, c)).requires_grad_()
    y = torch.fft.irfft2(torch.view_as_complex(Xr), s=(h, w), dim=(1, 2), norm="ortho")
    dy = torch.randn(b, h, w, c, generator=g)
    (y * dy).sum().backward()
    wxfixture.write(name, {"X": Xr, "y": y, "dy": dy, "dX": Xr.grad})


def params_dict(params, grads=True):
    out = {}
    for key, p in zip(("w1", "b1", "w2", "b2"), params):
        out[key] = p
        if grads:
            out["d" + key] = p.grad
    return out


def case_afno(name, seed, b, h, w, c, nb, factor, frac, lam, scale, min_margin=1e-4):
    """Seeds are searched from `seed` until every pre-activation is at least min_margin from its
    kink, so float32 rounding cannot flip a ReLU or softshrink branch in the C comparison."""
    wf = w // 2 + 1
    while True:
        g = torch.Generator().manual_seed(seed)
        X = rand_spec(g, (b, h, wf, c)).requires_grad_()
        params = afno_params(g, c, nb, factor, scale)
        margins = []
        Y = afno_filter(X, *params, nb, frac, lam, margins)
        if min(margins) > min_margin:
            break
        seed += 1
    dY = rand_spec(g, (b, h, wf, c))
    (Y * dY).sum().backward()
    t = {"X": X, "Y": Y, "dY": dY, "dX": X.grad, "mask": nvlabs_mask(h, wf, frac),
         "sizes": torch.tensor([b, h, wf, c, nb, factor]), "lambda": lam}
    t.update(params_dict(params))
    wxfixture.write(name, t)
    print(f"{name}: seed {seed}, kink margins {margins}, "
          f"{(Y != 0).double().mean().item():.2f} of Y nonzero")


def case_afno2d(name, seed, b, h, w, c, nb, factor, frac, lam, scale, min_margin=1e-4):
    """y = irfft2(filter(rfft2(x))) with all gradients: the AFNO2D spectral path end to end."""
    wf = w // 2 + 1
    while True:
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(b, h, w, c, generator=g, requires_grad=True)
        params = afno_params(g, c, nb, factor, scale)
        margins = []
        X = torch.view_as_real(torch.fft.rfft2(x, dim=(1, 2), norm="ortho"))
        Y = afno_filter(X, *params, nb, frac, lam, margins)
        y = torch.fft.irfft2(torch.view_as_complex(Y.contiguous()), s=(h, w), dim=(1, 2),
                             norm="ortho")
        if min(margins) > min_margin:
            break
        seed += 1
    dy = torch.randn(b, h, w, c, generator=g)
    (y * dy).sum().backward()
    t = {"x": x, "y": y, "dy": dy, "dx": x.grad, "mask": nvlabs_mask(h, wf, frac),
         "sizes": torch.tensor([b, h, w, c, nb, factor]), "lambda": lam}
    t.update(params_dict(params))
    wxfixture.write(name, t)
    print(f"{name}: seed {seed}, kink margins {margins}")


if __name__ == "__main__":
    case_rfft2("spectral_rfft2_even", 11, 2, 6, 8, 3)
    case_rfft2("spectral_rfft2_odd", 12, 1, 5, 7, 2)
    case_irfft2("spectral_irfft2_even", 13, 2, 6, 8, 3)
    case_irfft2("spectral_irfft2_odd", 14, 1, 5, 7, 2)
    case_afno("spectral_afno_full", 15, 2, 8, 12, 16, 4, 1, 1.0, 0.05, 1.0)
    case_afno("spectral_afno_half", 16, 2, 8, 12, 16, 2, 2, 0.5, 0.05, 1.0)
    case_afno2d("spectral_afno2d", 17, 2, 8, 12, 16, 4, 1, 1.0, 0.05, 1.0)
