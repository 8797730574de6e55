"""PyTorch peer of tests/bench/bench_cuda.c on the same GPU: the tests/ref FourCastNet (AFNONet from
tests/ref/ref_fourcastnet.py, NVlabs structure) in bf16 autocast, fp32 master weights and AdamW
state, the same configuration, batch and step as bench_cuda's train mode; rollout at batch 1.

  bench_cuda_torch.py train   --batch N [--steps S] [--tiny] [--device cuda|cpu]
  bench_cuda_torch.py rollout [--steps 56] [--tiny] [--device cuda|cpu]
The AFNO filter runs in fp32 (autocast off inside it, as NVlabs casts to float before the FFT);
linear layers and the patch conv run in bf16 under autocast. Prints one JSON object; exit 1 with
"bench_cuda_torch: ..." on stderr when torch has no CUDA (the device check then reports wxcast
alone). --device cpu --tiny exercises the script without a GPU. Not a test.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ref"))
import ref_fourcastnet as ref  # noqa: E402  (sets float64 as the default dtype on import)

torch.set_default_dtype(torch.float32)

PAPER = dict(img_h=720, img_w=1440, in_chans=20, out_chans=20, patch_size=8, embed_dim=768,
             depth=12, mlp_ratio=4.0, num_blocks=8, sparsity_threshold=0.01,
             hard_thresholding_fraction=1.0, hidden_size_factor=1, two_sided=False)
TINY = dict(PAPER, img_h=32, img_w=64, in_chans=4, out_chans=4, patch_size=4, embed_dim=64,
            depth=2, num_blocks=4)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["train", "rollout"])
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    dev = a.device
    if dev == "cuda" and not torch.cuda.is_available():
        sys.exit("bench_cuda_torch: torch %s has no CUDA device" % torch.__version__)
    cfg = TINY if a.tiny else PAPER
    # The reference model makes its work tensors with torch.zeros(...): on the GPU they must be
    # created there too.
    if dev == "cuda":
        if hasattr(torch, "set_default_device"):
            torch.set_default_device("cuda")
        else:
            torch.set_default_tensor_type(torch.cuda.FloatTensor)
    orig = ref.AFNO2D.forward

    def afno_fp32(self, x):
        with torch.autocast(device_type=dev, enabled=False):
            return orig(self, x.float())
    ref.AFNO2D.forward = afno_fp32
    torch.manual_seed(1234)
    model = ref.AFNONet(cfg).to(dev)

    def sync():
        if dev == "cuda":
            torch.cuda.synchronize()

    def grid(b, c, seed):
        g = torch.Generator(device="cpu").manual_seed(seed)
        return (torch.rand(b, c, cfg["img_h"], cfg["img_w"], generator=g, device="cpu") * 2 - 1).to(dev)

    if a.mode == "train":
        steps = a.steps or 5
        b = a.batch
        x, tg = grid(b, cfg["in_chans"], 1), grid(b, cfg["out_chans"], 2)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), eps=1e-8,
                                weight_decay=0.1)
        ts = []
        for s in range(2 + steps):
            sync()
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            with torch.autocast(device_type=dev, dtype=torch.bfloat16):
                loss = ref.rel_l2(model(x).float(), tg)
            loss.backward()
            opt.step()
            sync()
            if s >= 2:
                ts.append(time.perf_counter() - t0)
        sec = statistics.median(ts)
        r = dict(mode="train", device=dev, precision="bf16-autocast", batch=b, steps=steps,
                 step_s=sec, samples_per_s=b / sec, loss=float(loss), torch=torch.__version__)
    else:
        steps = a.steps or 56
        a0 = grid(1, cfg["in_chans"], 3)
        with torch.inference_mode(), torch.autocast(device_type=dev, dtype=torch.bfloat16):
            model(a0)
            sync()
            t0 = time.perf_counter()
            s = a0
            for _ in range(steps):
                s = model(s).float()
            sync()
            sec = time.perf_counter() - t0
        r = dict(mode="rollout", device=dev, precision="bf16-autocast", steps=steps, total_s=sec,
                 step_ms=1e3 * sec / steps, finite=bool(torch.isfinite(s).all()),
                 torch=torch.__version__)
    print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
