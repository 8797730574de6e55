"""Reference fixtures for the optimizer ops and helpers (src/ops/optim.c), from torch in float64:
torch.optim.AdamW, torch.linalg.vector_norm, torch.mul, torch.nn.utils.clip_grad_norm_, and the
warmup + cosine schedule evaluated with math.cos (warmup cross-checked against LinearLR).

Writes fixtures/optim_{adamw,grad_norm,scale,clip_grad_norm,lr_warmup_cosine}.wxfx."""
import math

import torch

import wxfixture

torch.set_default_dtype(torch.float64)


def adamw(gen):
    n, steps = 37, 10
    lr, beta1, beta2, eps, wd = 1e-3, 0.9, 0.95, 1e-8, 0.1
    p0 = torch.randn(n, generator=gen)
    grads = torch.randn(steps, n, generator=gen) * (torch.rand(steps, n, generator=gen) * 2)
    param = torch.nn.Parameter(p0.clone())
    opt = torch.optim.AdamW([param], lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=wd)
    after = []
    for s in range(steps):
        param.grad = grads[s].clone()
        opt.step()
        after.append(param.detach().clone())
    state = opt.state[param]
    wxfixture.write("optim_adamw", {"p0": p0, "grads": grads, "params": torch.stack(after),
                              "m": state["exp_avg"], "v": state["exp_avg_sq"], "lr": lr,
                              "beta1": beta1, "beta2": beta2, "eps": eps, "weight_decay": wd})


def grad_norm(gen):
    g = torch.randn(5000, generator=gen) * 3
    wxfixture.write("optim_grad_norm", {"g": g, "sumsq": torch.linalg.vector_norm(g) ** 2})


def scale(gen):
    x = torch.randn(257, generator=gen)
    s = -0.37
    wxfixture.write("optim_scale", {"x": x, "s": s, "y": torch.mul(x, s)})


def clip_grad_norm(gen):
    shapes = [(5, 4), (7,), (3, 2, 2)]
    grads = [torch.randn(*sh, generator=gen) for sh in shapes]
    out = {}
    for i, g in enumerate(grads):
        out["g%d" % i] = g
    for case, max_norm in (("clip", 0.5), ("noclip", 100.0)):
        params = [torch.nn.Parameter(torch.zeros(*sh)) for sh in shapes]
        for p, g in zip(params, grads):
            p.grad = g.clone()
        norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
        out[case + "_max_norm"] = max_norm
        out[case + "_norm"] = norm
        for i, p in enumerate(params):
            out["%s_g%d" % (case, i)] = p.grad
    wxfixture.write("optim_clip_grad_norm", out)


def lr_value(step, warmup, total, lr_max, lr_min):
    if step < warmup:
        return lr_max * (step + 1) / warmup
    if step < total:
        return lr_min + 0.5 * (lr_max - lr_min) * (1 + math.cos(math.pi * (step - warmup) / (total - warmup)))
    return lr_min


def lr_warmup_cosine():
    configs = [(5, 30, 1e-3, 1e-5), (0, 10, 2e-4, 0.0), (3, 3, 1e-3, 1e-4)]
    steps = list(range(36))
    vals = [[lr_value(s, *cfg) for s in steps] for cfg in configs]
    # The warmup part equals torch's LinearLR(start_factor=1/warmup, total_iters=warmup-1).
    for (warmup, _, lr_max, _), row in zip(configs, vals):
        if warmup < 2:
            continue
        opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=lr_max)
        sched = torch.optim.lr_scheduler.LinearLR(opt, start_factor=1 / warmup, total_iters=warmup - 1)
        for s in range(warmup):
            assert abs(sched.get_last_lr()[0] - row[s]) <= 1e-15 * lr_max, (s, sched.get_last_lr(), row[s])
            opt.step()
            sched.step()
    wxfixture.write("optim_lr_warmup_cosine", {"configs": torch.tensor(configs),
                                         "steps": torch.tensor(steps), "lr": torch.tensor(vals)})


if __name__ == "__main__":
    g = torch.Generator().manual_seed(2024)
    adamw(g)
    grad_norm(g)
    scale(g)
    clip_grad_norm(g)
    lr_warmup_cosine()
