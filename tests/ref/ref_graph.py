"""Reference fixtures for the graph ops (src/ops/graph.c), computed independently with torch in
float64: gather = index_select, segment sum = index_add_, gradients by autograd.

Writes fixtures/graph_gather_rows.wxfx and fixtures/graph_segment_sum.wxfx."""
import torch

import wxfixture

torch.set_default_dtype(torch.float64)


def skewed_indices(gen, e, n, empty, hub, hub_count):
    """e indices in [0, n): node `empty` never appears, node `hub` appears hub_count times."""
    others = [i for i in range(n) if i not in (empty, hub)]
    pick = torch.randint(0, len(others), (e - hub_count,), generator=gen)
    idx = torch.cat([torch.tensor(others)[pick], torch.full((hub_count,), hub)])
    return idx[torch.randperm(e, generator=gen)]


def gather_rows(gen):
    n, e, d = 11, 40, 5
    idx = skewed_indices(gen, e, n, empty=3, hub=7, hub_count=15)
    x = torch.randn(n, d, generator=gen).requires_grad_()
    y = torch.index_select(x, 0, idx)
    dy = torch.randn(e, d, generator=gen)
    (dx,) = torch.autograd.grad(y, x, dy)
    wxfixture.write("graph_gather_rows", {"x": x, "idx": idx, "y": y, "dy": dy, "dx": dx})


def segment_sum(gen):
    n, e, d = 11, 40, 5
    receivers = skewed_indices(gen, e, n, empty=2, hub=9, hub_count=16)
    x = torch.randn(e, d, generator=gen).requires_grad_()
    y = torch.zeros(n, d).index_add(0, receivers, x)
    dy = torch.randn(n, d, generator=gen)
    (dx,) = torch.autograd.grad(y, x, dy)
    wxfixture.write("graph_segment_sum", {"x": x, "receivers": receivers, "y": y, "dy": dy, "dx": dx})


if __name__ == "__main__":
    g = torch.Generator().manual_seed(1234)
    gather_rows(g)
    segment_sum(g)
