"""Shared by the reference scripts that run DeepMind's GraphCast (ref_graphcast_npz.py,
ref_graphcast_forecast.py): the fixture writer without torch and the randomising of Haiku's
parameters. Plain numpy, so it imports in the JAX virtual environment as in /usr/bin/python3."""
import os
import struct

import numpy as np


def write_wxfx(path, tensors):
    """tests/ref/wxfixture.py's layout, without torch: every tensor as float64."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(b"WXFX" + struct.pack("<II", 1, len(tensors)))
        for key, value in tensors.items():
            a = np.ascontiguousarray(np.asarray(value, dtype=np.float64))
            raw = key.encode()
            f.write(struct.pack("<I", len(raw)) + raw + struct.pack("<I", a.ndim))
            for d in a.shape:
                f.write(struct.pack("<q", d))
            f.write(a.tobytes())
    os.replace(tmp, path)


def randomise_params(params, rng):
    """Random values for every parameter of Haiku's `params` (its init leaves biases 0 and
    LayerNorm 1/0, which would hide a swapped offset or scale): weights N(0, 1/fan_in), LayerNorm
    scales 1 + N(0, 0.2^2), biases and offsets N(0, 0.2^2); rounded to the float32 a checkpoint
    holds. Returns (float32 params for the checkpoint, the same values as float64 for the
    forward). Draws from rng module by module, key by key, in Haiku's order."""
    flat = {}
    for mod, ps in params.items():
        flat[mod] = {}
        for k, v in ps.items():
            v = np.asarray(v)
            if k == "w":
                new = rng.standard_normal(v.shape) / np.sqrt(v.shape[0])
            elif k == "scale":
                new = 1 + 0.2 * rng.standard_normal(v.shape)
            else:
                new = 0.2 * rng.standard_normal(v.shape)
            flat[mod][k] = new.astype(np.float32)
    params64 = {m: {k: np.asarray(v, np.float64) for k, v in ps.items()} for m, ps in flat.items()}
    return flat, params64
