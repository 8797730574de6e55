"""PyTorch CPU peer for tests/bench/bench_graphcast.c (train mode): the GraphCast network and graphs
of tests/ref/ref_graphcast.py (imported, not copied: nn.Linear/SiLU/LayerNorm MLPs, index_select /
index_add_ message passing, the published concatenation orders), in float32, same configuration,
batch 1 and thread count.

  graphcast_torch_step.py RES LEVEL LATENT STEPS CIN COUT [n]
      one training step = zero_grad, forward, latitude-weighted MSE (weights 1, as the C side),
      autograd backward, torch.optim.AdamW (lr 1e-4, betas 0.9/0.95, wd 0.1) step; median of n
      (default 5) after 2 warm-up steps; cpu_s is the median process CPU time (all threads) of a
      step, less sensitive than wall time to other jobs on a shared machine.
Prints one JSON object; graph_s is the reference's (brute-force) graph build, not compared.
peak_rss_mb is the process maximum (interpreter and libtorch included; rss_base_mb is the resident
size after building the model, before the first step). Run with /usr/bin/python3.
"""
import json
import os
import resource
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ref"))
import ref_graphcast as ref  # noqa: E402  (sets float64 as the default dtype on import)

torch.set_default_dtype(torch.float32)
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
torch.manual_seed(1234)


def rss_now_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def to_f32(g):
    out = {}
    for k, v in g.items():
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            out[k] = v.float()
        elif isinstance(v, tuple):
            out[k] = tuple(t.float() if t.is_floating_point() else t for t in v)
        else:
            out[k] = v
    return out


def main():
    res, level, D, steps, cin, cout = (float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]),
                                       int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
    n = int(sys.argv[7]) if len(sys.argv) > 7 else 5
    t0 = time.perf_counter()
    torch.set_default_dtype(torch.float64)
    g = ref.build_graphs(res, level, 0.6)
    torch.set_default_dtype(torch.float32)
    graph_s = time.perf_counter() - t0
    g = to_f32(g)
    model = ref.GraphCast(g, cin, cout, D, steps).float()
    H, W = g["nlat"], g["nlon"]
    i = torch.arange(cin * H * W, dtype=torch.float32)
    x = (torch.sin(0.37 * i) * 0.8).reshape(1, cin, H, W)
    j = torch.arange(cout * H * W, dtype=torch.float32)
    t = (torch.cos(0.11 * j) * 0.5).reshape(1, cout, H, W)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1)
    nparams = sum(p.numel() for p in model.parameters())
    rss_base = rss_now_mb()
    times, cpus = [], []
    loss = None
    for it in range(n + 2):
        a = time.perf_counter()
        c = time.process_time()
        opt.zero_grad(set_to_none=False)
        y = model(x)
        loss = ((y - t) ** 2).mean()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - a)
        cpus.append(time.process_time() - c)
    steady = sorted(times[2:])
    print(json.dumps({"impl": "pytorch", "mode": "train", "torch": torch.__version__,
                      "threads": torch.get_num_threads(), "grid": [H, W],
                      "mesh_nodes": int(g["nm"]),
                      "edges": [int(g["g2m"][0].numel()), int(g["mesh"][0].numel()),
                                int(g["m2g"][0].numel())],
                      "params": nparams, "graph_s": round(graph_s, 3),
                      "step_s": round(statistics.median(steady), 4), "step_min_s": round(steady[0], 4),
                      "cpu_s": round(statistics.median(cpus[2:]), 4),
                      "loss": float(loss), "rss_base_mb": round(rss_base, 1),
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)}))


if __name__ == "__main__":
    main()
