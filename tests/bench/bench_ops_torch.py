"""PyTorch CPU peer for tests/bench/bench_ops.c: the same ops, shapes and thread count, float32.
Prints one JSON object per op with median forward and backward (autograd) times in ms."""
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
torch.manual_seed(0)
REPS = 15


def median_ms(fn):
    for _ in range(3):
        fn()
    ts = []
    for _ in range(REPS):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)


def bench(op, shape, forward, inputs):
    """forward() builds the output from `inputs` (leaf tensors with requires_grad)."""
    with torch.no_grad():
        fwd = median_ms(forward)
    out = forward()
    dy = torch.randn_like(out)

    def fwd_bwd():
        for t in inputs:
            t.grad = None
        forward().backward(dy)

    both = median_ms(fwd_bwd)
    print(json.dumps({"op": op, "shape": shape, "fwd_ms": fwd, "bwd_ms": max(both - fwd, 0.0)}), flush=True)


def leaf(*shape, scale=1.0):
    return (torch.rand(*shape) * 2 - 1).mul_(scale).requires_grad_()


n, i, o = 1024, 256, 1024
x, w, b = leaf(n, i), leaf(o, i, scale=0.05), leaf(o, scale=0.1)
bench("linear", "1024x256->1024", lambda: F.linear(x, w, b), [x, w, b])

x, g, be = leaf(2048, 256), leaf(256), leaf(256)
bench("layernorm", "2048x256", lambda: F.layer_norm(x, (256,), g, be, 1e-6), [x, g, be])
bench("gelu", "2048x256", lambda: F.gelu(x), [x])

B, H, W, C, nb = 2, 32, 64, 256, 8
bs, Wf, kept = C // nb, W // 2 + 1, H // 2 + 1
u = leaf(B, H, W, C)
bench("rfft2", "2x32x64x256", lambda: torch.view_as_real(torch.fft.rfft2(u, dim=(1, 2), norm="ortho")), [u])
Xc = leaf(B, H, Wf, C, 2)
bench("irfft2", "2x32x64x256", lambda: torch.fft.irfft2(torch.view_as_complex(Xc), s=(H, W), dim=(1, 2), norm="ortho"), [Xc])

# The AFNO filter as NVlabs AFNO2D writes it (einsum over blocks), on an rfft2 output.
w1, b1 = leaf(2, nb, bs, bs, scale=0.02), leaf(2, nb, bs, scale=0.02)
w2, b2 = leaf(2, nb, bs, bs, scale=0.02), leaf(2, nb, bs, scale=0.02)
Xr, Xi = leaf(B, H, Wf, nb, bs), leaf(B, H, Wf, nb, bs)


def afno_filter():
    xr, xi = Xr[:, :, :kept], Xi[:, :, :kept]
    o1r = F.relu(torch.einsum("...bi,bio->...bo", xr, w1[0]) - torch.einsum("...bi,bio->...bo", xi, w1[1]) + b1[0])
    o1i = F.relu(torch.einsum("...bi,bio->...bo", xi, w1[0]) + torch.einsum("...bi,bio->...bo", xr, w1[1]) + b1[1])
    o2r = torch.einsum("...bi,bio->...bo", o1r, w2[0]) - torch.einsum("...bi,bio->...bo", o1i, w2[1]) + b2[0]
    o2i = torch.einsum("...bi,bio->...bo", o1i, w2[0]) + torch.einsum("...bi,bio->...bo", o1r, w2[1]) + b2[1]
    y = torch.stack([F.softshrink(o2r, 0.01), F.softshrink(o2i, 0.01)], dim=-1)
    return F.pad(y, (0, 0, 0, 0, 0, 0, 0, Wf - kept))  # zeros on the modes not kept


bench("afno_filter", "2x32x64x256/8", afno_filter, [Xr, Xi, w1, b1, w2, b2])

n_nodes, e, d = 40962, 163848, 128
recv = torch.randint(0, n_nodes, (e,))
xe = leaf(e, d)
bench("segment_sum", "E163848->N40962xD128", lambda: torch.zeros(n_nodes, d).index_add(0, recv, xe), [xe])
xn = leaf(n_nodes, d)
bench("gather_rows", "N40962->E163848xD128", lambda: xn.index_select(0, recv), [xn])
