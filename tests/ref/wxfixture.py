"""Writer for reference fixtures read by tests/support/wx_fixture.c.

Layout (little-endian): b"WXFX", u32 version 1, u32 count, then per tensor: u32 name length, name,
u32 ndim, i64 dims[ndim], f64 data. Every tensor is stored as float64 (indices as exact values).
"""
import os
import struct

import torch

FIXTURE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def write(name, tensors):
    """tensors: dict name -> torch tensor (any dtype) or python number."""
    os.makedirs(FIXTURE_DIR, exist_ok=True)
    path = os.path.join(FIXTURE_DIR, name + ".wxfx")
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(b"WXFX")
        f.write(struct.pack("<II", 1, len(tensors)))
        for key, value in tensors.items():
            t = torch.as_tensor(value).detach().to(torch.float64).contiguous().cpu()
            raw = key.encode()
            f.write(struct.pack("<I", len(raw)))
            f.write(raw)
            f.write(struct.pack("<I", t.dim()))
            for d in t.shape:
                f.write(struct.pack("<q", d))
            f.write(t.numpy().tobytes())
    os.replace(tmp, path)
    return path
