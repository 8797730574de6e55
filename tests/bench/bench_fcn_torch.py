"""PyTorch CPU peer for tests/bench/bench_fcn.c: the same FourCastNet (AFNONet from
tests/ref/ref_fourcastnet.py, NVlabs structure), configuration, batch and thread count, float32.

  bench_fcn_torch.py train   [steps]  zero_grad, forward, rel-L2 loss, autograd backward,
                                      torch.optim.AdamW step; median of `steps` after 3 warm-up
  bench_fcn_torch.py rollout [reps]   40 autoregressive steps under torch.inference_mode(), batch 1
CPU times (step_cpu_ms, rollout_cpu_ms) are the process's CPU time over the same span, all threads
(time.process_time), a figure that load from other jobs disturbs much less than wall time.
Run one mode per process so that its peak RSS (resource.getrusage ru_maxrss) is its own. Prints one
JSON object; rss_base_mb is the resident size after importing torch and building the model, before
the first step (the interpreter and libtorch account for most of it). Run with /usr/bin/python3.
"""
import json
import os
import resource
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ref"))
import ref_fourcastnet as ref  # noqa: E402  (sets float64 as the default dtype on import)

torch.set_default_dtype(torch.float32)
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
torch.manual_seed(1234)

CFG = dict(img_h=64, img_w=128, in_chans=20, out_chans=20, patch_size=4, embed_dim=256, depth=6,
           mlp_ratio=4.0, num_blocks=8, sparsity_threshold=0.01, hard_thresholding_fraction=1.0,
           hidden_size_factor=1, two_sided=False)
ROLLOUT_STEPS = 40


def rss_now_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def rss_peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def grid(b, c, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(b, c, CFG["img_h"], CFG["img_w"], generator=g) * 2 - 1


def train(steps):
    model = ref.AFNONet(CFG)
    b = 2
    x, tg = grid(b, CFG["in_chans"], 1), grid(b, CFG["out_chans"], 2)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.01)
    base = rss_now_mb()
    ts, tf, tb, tc = [], [], [], []
    for s in range(3 + steps):
        t0, c0 = time.perf_counter(), time.process_time()
        opt.zero_grad(set_to_none=True)
        loss = ref.rel_l2(model(x), tg)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        t3, c3 = time.perf_counter(), time.process_time()
        if s >= 3:
            ts.append((t3 - t0) * 1e3)
            tc.append((c3 - c0) * 1e3)
            tf.append((t1 - t0) * 1e3)
            tb.append((t2 - t1) * 1e3)
    return dict(mode="train", batch=b, params=sum(p.numel() for p in model.parameters()),
                step_ms=statistics.median(ts), fwd_loss_ms=statistics.median(tf),
                bwd_ms=statistics.median(tb), step_cpu_ms=statistics.median(tc), steps=steps,
                loss=float(loss),
                rss_base_mb=base, peak_rss_mb=rss_peak_mb())


def rollout(reps):
    model = ref.AFNONet(CFG)
    x0 = grid(1, CFG["in_chans"], 3)
    base = rss_now_mb()
    ts, tc = [], []
    with torch.inference_mode():
        model(x0)
        for _ in range(reps):
            a = x0
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(ROLLOUT_STEPS):
                a = model(a)
            ts.append((time.perf_counter() - t0) * 1e3)
            tc.append((time.process_time() - c0) * 1e3)
    return dict(mode="rollout", batch=1, steps=ROLLOUT_STEPS, rollout_ms=statistics.median(ts),
                rollout_cpu_ms=statistics.median(tc),
                reps=reps, mean_abs=float(a.abs().mean()), rss_base_mb=base,
                peak_rss_mb=rss_peak_mb())


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    k = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    if mode == "train":
        r = train(k or 10)
    elif mode == "rollout":
        r = rollout(k or 3)
    else:
        sys.exit("usage: bench_fcn_torch.py train [steps] | rollout [reps]")
    print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
