"""Weights interchange with PyTorch (src/models/weights.c, wxcast import-weights/export-weights).

Default: builds the NVlabs-named tiny AFNONet of ref_fourcastnet.py in torch with random weights
(rounded to float32, so the file holds exactly the weights torch computes with), writes them as
W.safetensors BY HAND (struct + json: Debian has no python3-safetensors) with the DDP "module."
prefix on every key (as NVlabs checkpoints) and the unused norm.* keys, and writes the model
config, an input x and the float64 torch forward y:
  tests/ref/fixtures/weights_tiny.safetensors, weights_tiny.yaml, weights_tiny.wxfx (x, y)

--check W.safetensors IO.safetensors: the reverse direction. Reads wxcast's export W by hand into
the torch model (plain NVlabs names, load_state_dict strict), and IO (written by the C test:
tensors x and y = wxcast's forward, the config as JSON in metadata "config"); exits 0 when the
torch forward of x equals y within 1e-4 of max|y|, 1 otherwise.

--forecast W.safetensors INIT.nc FORECAST.nc MEANS.npy STDS.npy I,J,.. NAME,NAME,.. [CLAMPED]: published
weights run by `wxcast forecast` (import-weights --data) against the NVlabs inference loop
(forecast_check); exits 0 when every lead agrees within 1e-4 standard deviations.
Run with /usr/bin/python3.
"""
import json
import os
import struct
import sys

import torch

import ref_fourcastnet as fcn
import wxfixture

torch.set_default_dtype(torch.float64)

CFG = dict(img_h=16, img_w=32, in_chans=3, out_chans=3, patch_size=4, embed_dim=32, depth=2,
           mlp_ratio=4.0, num_blocks=4, sparsity_threshold=0.01, hard_thresholding_fraction=1.0,
           hidden_size_factor=1, two_sided=False)

DTYPES = {"F32": (torch.float32, 4), "F64": (torch.float64, 8)}


def write_safetensors(path, tensors, metadata):
    """tensors: ordered dict name -> float32 tensor. The layout of huggingface/safetensors."""
    header = {"__metadata__": metadata}
    blobs, off = [], 0
    for name, t in tensors.items():
        raw = t.detach().to(torch.float32).contiguous().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    hdr = json.dumps(header, separators=(",", ":")).encode()
    hdr += b" " * ((8 - (8 + len(hdr)) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hdr)))
        f.write(hdr)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def read_safetensors(path):
    with open(path, "rb") as f:
        buf = f.read()
    (n,) = struct.unpack("<Q", buf[:8])
    header = json.loads(buf[8:8 + n].decode())
    meta = header.pop("__metadata__", {})
    data = buf[8 + n:]
    out = {}
    for name, info in header.items():
        dtype, size = DTYPES[info["dtype"]]
        b, e = info["data_offsets"]
        t = torch.frombuffer(bytearray(data[b:e]), dtype=dtype) if e > b else torch.zeros(0, dtype=dtype)
        out[name] = t.reshape(info["shape"]).to(torch.float64)
    return out, meta


def yaml_config(cfg):
    return "\n".join([
        "# tests/ref/ref_weights.py: the tiny AFNONet of weights_tiny.safetensors",
        "type: fourcastnet",
        f"img_size: [{cfg['img_h']}, {cfg['img_w']}]",
        f"patch_size: {cfg['patch_size']}",
        f"in_channels: {cfg['in_chans']}",
        f"out_channels: {cfg['out_chans']}",
        f"embed_dim: {cfg['embed_dim']}",
        f"depth: {cfg['depth']}",
        f"mlp_ratio: {cfg['mlp_ratio']}",
        f"num_blocks: {cfg['num_blocks']}",
        f"sparsity_threshold: {cfg['sparsity_threshold']}",
        f"hard_thresholding_fraction: {cfg['hard_thresholding_fraction']}",
        f"hidden_size_factor: {cfg['hidden_size_factor']}",
        f"two_sided_modes: {'true' if cfg['two_sided'] else 'false'}",
        "count_unused_norm: true", ""])


def make():
    gen = torch.Generator().manual_seed(4242)
    model = fcn.AFNONet(CFG)
    fcn.randomise(model, gen)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(torch.float32).to(torch.float64))
    x = torch.randn(2, CFG["in_chans"], CFG["img_h"], CFG["img_w"], generator=gen)
    x = x.to(torch.float32).to(torch.float64)
    with torch.no_grad():
        y = model(x)
    sd = model.state_dict()
    assert "norm.weight" in sd and "head.weight" in sd and "pos_embed" in sd
    d = wxfixture.FIXTURE_DIR
    write_safetensors(os.path.join(d, "weights_tiny.safetensors"),
                      {"module." + k: v for k, v in sd.items()}, {"format": "pt"})
    with open(os.path.join(d, "weights_tiny.yaml"), "w") as f:
        f.write(yaml_config(CFG))
    wxfixture.write("weights_tiny", dict(x=x, y=y))
    print(f"  weights_tiny: {len(sd)} tensors, {sum(v.numel() for v in sd.values())} values, "
          f"max|y| {y.abs().max().item():.3f}")


def check(wpath, iopath):
    weights, meta = read_safetensors(wpath)
    io, io_meta = read_safetensors(iopath)
    cfg = json.loads(io_meta["config"])
    model = fcn.AFNONet(cfg)
    model.load_state_dict(weights, strict=True)  # every NVlabs name present, none extra
    with torch.no_grad():
        y = model(io["x"])
    err = (y - io["y"]).abs().max().item() / io["y"].abs().max().item()
    print(f"torch forward of wxcast's exported weights vs wxcast forward: {err:.2e} relative "
          f"(max|y| {io['y'].abs().max().item():.3f}; metadata producer={meta.get('producer')})")
    return 0 if err <= 1e-4 else 1


def nc_field(ds, name, t):
    """Channel `name` (z500, t2m, ...) at time index t of a CDS-style or wxcast NetCDF file."""
    import numpy as np
    if name in ds.variables:
        return np.asarray(ds[name][t], dtype=np.float64)
    k = len(name.rstrip("0123456789"))
    v, level = ds[name[:k]], float(name[k:])
    axis = ds[v.dimensions[1]][:]
    return np.asarray(v[t, list(axis).index(level)], dtype=np.float64)


def forecast_check(wpath, init_nc, fc_nc, means, stds, index, names, clamped=""):
    """The NVlabs inference loop on the published-style weights (module. prefix, .npy statistics
    of shape (1, 21, 1, 1) indexed by in_channels): x = (state - mean)/std on the first 720 of
    721 rows (here 16 of 17), x <- model(x) per step, state = x*std + mean; against wxcast's
    forecast file (lead 0 = the initial state, leads 1.. the steps). Channels in `clamped`
    (comma-separated) are physically >= 0: the written leads are max(., 0), the state fed back
    the model's own output."""
    import netCDF4
    import numpy as np
    weights, _ = read_safetensors(wpath)
    weights = {k[len("module."):] if k.startswith("module.") else k: v for k, v in weights.items()}
    model = fcn.AFNONet(CFG)
    model.load_state_dict(weights, strict=True)
    idx = [int(i) for i in index.split(",")]
    names = names.split(",")
    mean = np.load(means).reshape(-1).astype(np.float64)[idx][:, None, None]
    std = np.load(stds).reshape(-1).astype(np.float64)[idx][:, None, None]
    init, fc = netCDF4.Dataset(init_nc), netCDF4.Dataset(fc_nc)
    when = lambda v: list(netCDF4.num2date(v[:], v.units))
    t0 = when(init["valid_time"]).index(when(fc["time"])[0])  # the forecast's initial time
    h = CFG["img_h"]
    state = np.stack([nc_field(init, n, t0)[:h] for n in names])
    worst = max(np.abs(nc_field(fc, n, 0) - state[c]).max() / std[c, 0, 0] for c, n in enumerate(names))
    x = torch.from_numpy((state - mean) / std)[None]
    steps = len(fc["time"]) - 1
    with torch.no_grad():
        for k in range(1, steps + 1):
            x = model(x)
            ref = x[0].numpy() * std + mean
            for c, n in enumerate(names):
                if n in clamped.split(","):
                    ref[c] = np.maximum(ref[c], 0)
            for c, n in enumerate(names):
                worst = max(worst, np.abs(nc_field(fc, n, k) - ref[c]).max() / std[c, 0, 0])
    print(f"wxcast forecast vs the NVlabs inference loop in torch, {steps} steps, {len(names)} "
          f"channels: max error {worst:.2e} standard deviations")
    return 0 if steps >= 1 and worst <= 1e-4 else 1


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--check":
        sys.exit(check(sys.argv[2], sys.argv[3]))
    if len(sys.argv) in (9, 10) and sys.argv[1] == "--forecast":
        sys.exit(forecast_check(*sys.argv[2:]))
    make()
