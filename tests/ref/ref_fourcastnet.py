"""Reference fixtures for the FourCastNet (AFNO) model (src/models/fourcastnet*.c), PyTorch float64.

An independent re-statement of NVlabs FourCastNet `networks/afnonet.py` (AFNONet, PatchEmbed,
Block with double skip, AFNO2D with rfft2 / block-diagonal complex MLP / softshrink / irfft2, Mlp,
bias-free head, unpatchify by rearrange), written with torch modules so that state_dict() gives the
NVlabs parameter names. Gradients come from autograd; the loss is NVlabs LpLoss (relative L2).

Writes tests/ref/fixtures/:
  fcn_tiny.wxfx      config A (NVlabs mode slicing), weights "param/<name>", x, t, y, loss,
                     "grad/<name>" for every parameter, dx.
  fcn_finetune.wxfx  config A, same weights (read from fcn_tiny), two autoregressive steps:
                     y1 = f(x), y2 = f(y1), loss = l(y1, t1) + l(y2, t2); grads through both.
  fcn_variant.wxfx   config B (two-sided truncation, hidden_size_factor 2, depth 1): weights,
                     x, t, y, loss, grads, dx.
  fcn_masks.wxfx     kept-mode masks (Hp, Wf) for several (Hp, Wp, fraction, mode) cases, made by
                     applying each slicing rule to a tensor of ones.
Run with /usr/bin/python3 (Debian python3-torch).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import wxfixture

torch.set_default_dtype(torch.float64)


# ---------------------------------------------------------------------------------------------
# Model (module names = NVlabs state_dict names)

def kept_region(h, wf, fraction, two_sided):
    """(row slices, column slice) of the spectrum (h, wf) that goes through the spectral MLP."""
    if not two_sided:
        # NVlabs: total/kept from the H axis, applied to the rfft (last) axis; rows are
        # [total - kept, total + kept), which Python slicing clips to the existing rows.
        total = h // 2 + 1
        kept = int(total * fraction)
        return [slice(total - kept, total + kept)], slice(0, kept)
    # Two-sided: ky with |frequency| < kept_y (rows 0..kept_y-1 and H-kept_y+1..H-1), kx < kept_x.
    kept_y = int((h // 2 + 1) * fraction)
    kept_x = int(wf * fraction)
    rows = [slice(0, kept_y)]
    if kept_y > 1:
        rows.append(slice(max(h - kept_y + 1, kept_y), h))
    return rows, slice(0, kept_x)


class AFNO2D(nn.Module):
    def __init__(self, hidden_size, num_blocks, sparsity_threshold, fraction, factor, two_sided):
        super().__init__()
        self.hidden_size, self.num_blocks = hidden_size, num_blocks
        self.block_size = hidden_size // num_blocks
        self.factor, self.lam = factor, sparsity_threshold
        self.fraction, self.two_sided = fraction, two_sided
        bs, hid = self.block_size, self.block_size * factor
        self.w1 = nn.Parameter(0.02 * torch.randn(2, num_blocks, bs, hid))
        self.b1 = nn.Parameter(0.02 * torch.randn(2, num_blocks, hid))
        self.w2 = nn.Parameter(0.02 * torch.randn(2, num_blocks, hid, bs))
        self.b2 = nn.Parameter(0.02 * torch.randn(2, num_blocks, bs))
        self.record = None  # list collecting pre-activation values (kink-distance check)

    def forward(self, x):
        bias = x
        B, H, W, C = x.shape
        x = torch.fft.rfft2(x, dim=(1, 2), norm="ortho")
        wf = W // 2 + 1
        x = x.reshape(B, H, wf, self.num_blocks, self.block_size)
        hid = self.block_size * self.factor
        o2r = torch.zeros(B, H, wf, self.num_blocks, self.block_size)
        o2i = torch.zeros(B, H, wf, self.num_blocks, self.block_size)
        rows, cols = kept_region(H, wf, self.fraction, self.two_sided)
        for rs in rows:
            xs = x[:, rs, cols]
            pre_r = (torch.einsum('...bi,bio->...bo', xs.real, self.w1[0])
                     - torch.einsum('...bi,bio->...bo', xs.imag, self.w1[1]) + self.b1[0])
            pre_i = (torch.einsum('...bi,bio->...bo', xs.imag, self.w1[0])
                     + torch.einsum('...bi,bio->...bo', xs.real, self.w1[1]) + self.b1[1])
            h_r, h_i = F.relu(pre_r), F.relu(pre_i)
            out_r = (torch.einsum('...bi,bio->...bo', h_r, self.w2[0])
                     - torch.einsum('...bi,bio->...bo', h_i, self.w2[1]) + self.b2[0])
            out_i = (torch.einsum('...bi,bio->...bo', h_i, self.w2[0])
                     + torch.einsum('...bi,bio->...bo', h_r, self.w2[1]) + self.b2[1])
            # Scatter through index_put on fresh tensors so autograd tracks the kept region.
            o2r = o2r.clone()
            o2i = o2i.clone()
            o2r[:, rs, cols] = out_r
            o2i[:, rs, cols] = out_i
            if self.record is not None:
                self.record.append(("relu", torch.cat([pre_r.flatten(), pre_i.flatten()]).detach()))
                self.record.append(("shrink", torch.cat([out_r.flatten(), out_i.flatten()]).detach()))
            assert hid == pre_r.shape[-1]
        x = torch.stack([o2r, o2i], dim=-1)
        x = F.softshrink(x, lambd=self.lam)
        x = torch.view_as_complex(x)
        x = x.reshape(B, H, wf, C)
        x = torch.fft.irfft2(x, s=(H, W), dim=(1, 2), norm="ortho")
        return x + bias


class Mlp(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, hidden), nn.Linear(hidden, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["embed_dim"]
        self.norm1 = nn.LayerNorm(d, eps=1e-6)
        self.filter = AFNO2D(d, cfg["num_blocks"], cfg["sparsity_threshold"],
                             cfg["hard_thresholding_fraction"], cfg["hidden_size_factor"],
                             cfg["two_sided"])
        self.norm2 = nn.LayerNorm(d, eps=1e-6)
        self.mlp = Mlp(d, int(d * cfg["mlp_ratio"]))

    def forward(self, x):
        residual = x
        x = self.filter(self.norm1(x))
        x = x + residual          # double skip
        residual = x
        x = self.mlp(self.norm2(x))
        return x + residual


class PatchEmbed(nn.Module):
    def __init__(self, cin, d, p):
        super().__init__()
        self.proj = nn.Conv2d(cin, d, kernel_size=p, stride=p)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class AFNONet(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        p, d = cfg["patch_size"], cfg["embed_dim"]
        self.h, self.w = cfg["img_h"] // p, cfg["img_w"] // p
        self.patch_embed = PatchEmbed(cfg["in_chans"], d, p)
        self.pos_embed = nn.Parameter(torch.zeros(1, self.h * self.w, d))
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg["depth"])])
        self.norm = nn.LayerNorm(d, eps=1e-6)  # built, never applied (as NVlabs)
        self.head = nn.Linear(d, cfg["out_chans"] * p * p, bias=False)

    def forward(self, x):
        B = x.shape[0]
        p, c = self.cfg["patch_size"], self.cfg["out_chans"]
        x = self.patch_embed(x) + self.pos_embed
        x = x.reshape(B, self.h, self.w, self.cfg["embed_dim"])
        for blk in self.blocks:
            x = blk(x)
        x = self.head(x)
        # rearrange "b h w (p1 p2 c_out) -> b c_out (h p1) (w p2)"
        x = x.reshape(B, self.h, self.w, p, p, c).permute(0, 5, 1, 3, 2, 4)
        return x.reshape(B, c, self.h * p, self.w * p)

    def set_record(self, rec):
        for blk in self.blocks:
            blk.filter.record = rec


def rel_l2(pred, tar):
    """NVlabs LpLoss(p=2, size_average=True).rel."""
    n = pred.shape[0]
    diff = torch.norm(pred.reshape(n, -1) - tar.reshape(n, -1), 2, 1)
    ref = torch.norm(tar.reshape(n, -1), 2, 1)
    return torch.mean(diff / ref)


# ---------------------------------------------------------------------------------------------
# Fixtures

CFG_A = dict(img_h=16, img_w=24, in_chans=3, out_chans=3, patch_size=4, embed_dim=16, depth=2,
             mlp_ratio=4.0, num_blocks=2, sparsity_threshold=0.05, hard_thresholding_fraction=1.0,
             hidden_size_factor=1, two_sided=False)
CFG_B = dict(img_h=16, img_w=24, in_chans=2, out_chans=3, patch_size=4, embed_dim=12, depth=1,
             mlp_ratio=2.0, num_blocks=3, sparsity_threshold=0.05, hard_thresholding_fraction=1.0,
             hidden_size_factor=2, two_sided=True)
KINK_MARGIN = 1e-4  # float32 runs must see the same side of every ReLU/softshrink kink


def randomise(model, gen):
    """Weights of order-one effect (not the tiny 0.02 init), so every path carries signal."""
    def rn(*shape, s=1.0, m=0.0):
        return torch.randn(*shape, generator=gen) * s + m
    with torch.no_grad():
        for name, prm in model.named_parameters():
            shape = prm.shape
            if name.endswith("norm1.weight") or name.endswith("norm2.weight") or name == "norm.weight":
                prm.copy_(rn(*shape, s=0.2, m=1.0))
            elif "filter.w" in name:
                prm.copy_(rn(*shape, s=0.6 / math.sqrt(shape[2])))
            elif "filter.b" in name:
                prm.copy_(rn(*shape, s=0.1))
            elif name == "pos_embed":
                prm.copy_(rn(*shape, s=0.5))
            elif name == "patch_embed.proj.weight":
                fan_in = shape[1] * shape[2] * shape[3]
                prm.copy_(rn(*shape, s=1.0 / math.sqrt(fan_in)))
            elif name.endswith(".weight"):
                prm.copy_(rn(*shape, s=1.0 / math.sqrt(shape[1])))
            else:  # remaining biases
                prm.copy_(rn(*shape, s=0.1))


def kink_margin(rec, lam):
    m = math.inf
    for kind, v in rec:
        if kind == "relu":
            m = min(m, v.abs().min().item())
        else:
            m = min(m, (v.abs() - lam).abs().min().item())
    return m


def make_model(cfg, seed, steps):
    """A randomised model and inputs whose forward passes stay KINK_MARGIN away from every kink."""
    for attempt in range(200):
        gen = torch.Generator().manual_seed(seed + attempt)
        model = AFNONet(cfg)
        randomise(model, gen)
        x = torch.randn(2, cfg["in_chans"], cfg["img_h"], cfg["img_w"], generator=gen)
        rec = []
        model.set_record(rec)
        with torch.no_grad():
            y = x
            for _ in range(steps):
                y = model(y)
        model.set_record(None)
        if kink_margin(rec, cfg["sparsity_threshold"]) > KINK_MARGIN:
            print(f"  seed {seed + attempt}: kink margin {kink_margin(rec, cfg['sparsity_threshold']):.2e}")
            return model, x, gen
    raise RuntimeError("no seed kept the activations away from the kinks")


def cfg_tensors(cfg):
    return {"cfg/" + k: float(v) for k, v in cfg.items()}


def params_dict(model):
    return {"param/" + k: v.detach() for k, v in model.state_dict().items()}


def grads_dict(model):
    out = {}
    for k, prm in model.named_parameters():
        g = prm.grad if prm.grad is not None else torch.zeros_like(prm)
        out["grad/" + k] = g.detach()
    return out


def one_step(name, cfg, seed, steps):
    """steps: forward passes whose kink margin make_model guarantees (2 when finetune follows)."""
    model, x, gen = make_model(cfg, seed, steps)
    t = torch.randn(2, cfg["out_chans"], cfg["img_h"], cfg["img_w"], generator=gen)
    x.requires_grad_(True)
    y = model(x)
    loss = rel_l2(y, t)
    loss.backward()
    data = cfg_tensors(cfg)
    data.update(params_dict(model))
    data.update(dict(x=x.detach(), t=t, y=y.detach(), loss=loss.detach(), dx=x.grad))
    data.update(grads_dict(model))
    print(f"  {name}: loss {loss.item():.6f}, {sum(p.numel() for p in model.parameters())} params")
    wxfixture.write(name, data)
    return model, x.detach()


def finetune(model, x, seed):
    gen = torch.Generator().manual_seed(seed)
    cfg = model.cfg
    rec = []
    model.set_record(rec)
    with torch.no_grad():
        model(model(x))
    model.set_record(None)
    margin = kink_margin(rec, cfg["sparsity_threshold"])
    assert margin > KINK_MARGIN, f"two-step pass comes within {margin} of a kink"
    t1 = torch.randn(2, cfg["out_chans"], cfg["img_h"], cfg["img_w"], generator=gen)
    t2 = torch.randn(2, cfg["out_chans"], cfg["img_h"], cfg["img_w"], generator=gen)
    model.zero_grad()
    y1 = model(x)
    y2 = model(y1)
    loss = rel_l2(y1, t1) + rel_l2(y2, t2)
    loss.backward()
    data = dict(t1=t1, t2=t2, y1=y1.detach(), y2=y2.detach(), loss=loss.detach())
    data.update(grads_dict(model))
    print(f"  fcn_finetune: loss {loss.item():.6f} (margin {margin:.2e})")
    wxfixture.write("fcn_finetune", data)


def masks():
    cases = [(4, 8, 1.0, 0), (90, 180, 1.0, 0), (6, 12, 0.5, 0), (5, 16, 0.7, 0), (4, 8, 1.0, 1),
             (6, 12, 0.5, 1), (7, 10, 0.8, 1)]
    data = {}
    for i, (h, w, frac, two) in enumerate(cases):
        wf = w // 2 + 1
        ones = torch.ones(h, wf)
        mask = torch.zeros(h, wf)
        rows, cols = kept_region(h, wf, frac, bool(two))
        for rs in rows:
            mask[rs, cols] = ones[rs, cols]
        data[f"case{i}/dims"] = torch.tensor([h, w, frac, two], dtype=torch.float64)
        data[f"case{i}/mask"] = mask
    data["count"] = float(len(cases))
    wxfixture.write("fcn_masks", data)


def main():
    model_a, x_a = one_step("fcn_tiny", CFG_A, 100, 2)
    finetune(model_a, x_a, 500)
    one_step("fcn_variant", CFG_B, 300, 1)
    masks()


if __name__ == "__main__":
    main()
