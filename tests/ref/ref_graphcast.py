"""Reference fixtures for the GraphCast model (src/models/graphcast*.c), PyTorch float64.

Independent of the C code: the graphs are rebuilt here from the published algorithm
(shared/reference/graphcast.md §1.2–1.5: rotated icosahedron, 4-way splits, multi-mesh of all
levels, radius grid→mesh by brute force, mesh→grid from the Euclidean-closest flat face (trimesh's
rule, as DeepMind's grid_mesh_connectivity.py takes it), [sin lat, cos lon,
sin lon] nodes, receiver-frame [|d|, d]/s edges) and the network is written with nn.Linear,
nn.SiLU, nn.LayerNorm, index_select/index_add_ and torch.cat in the published orders (§1.6):
edge MLP on [e, sender, receiver], node MLP on [n, Σ received], residuals, orphan grid update in
the encoder, no LayerNorm on the output MLP. Gradients come from autograd. The loss is the
GraphCast weighted MSE (§1.10) written directly per variable: Σ_v w_v · mean(err² · w_lat · w_lev).

Writes tests/ref/fixtures/:
  gc_tiny.wxfx     grid 9x16 (22.5°), mesh M0..M1, latent 8, 2 processor steps, batch 2, 18 input
                   and 4 output channels: "param/<name>", x, t, y, loss, "grad/<name>", dx, and the
                   graph sizes (g2m/mesh/m2g edge counts) for the C test to compare. Grid points
                   equally near two finest faces with equally aligned normals (the icosahedron's
                   symmetry puts whole meridians on edges) are ties decided by rounding, so the reference's mesh→grid senders and features and a tie mask
                   (graph/m2g_*) are stored: the C test checks that it differs only at ties and
                   then uses these.
  gc_rollout.wxfx  same weights, batch 1, 3 autoregressive steps fed back through the normalised
                   residual rule (x_next[prev] = x[last]; x_next[last] = x[last] + scale·y; the
                   other channels from the data), loss averaged over the steps: x0, base1, base2,
                   t1..t3, scale, loss, "grad/<name>", dx0.
Run with /usr/bin/python3 (Debian python3-torch).
"""
import math

import torch
import torch.nn as nn

import wxfixture

torch.set_default_dtype(torch.float64)

M2G_NORM = 0.6180338738074472

# ---------------------------------------------------------------------------------------------
# Graphs (graphcast icosahedral_mesh.py / grid_mesh_connectivity.py / model_utils.py, restated)


def icosahedron():
    phi = (1 + math.sqrt(5)) / 2
    verts = []
    for c1 in (1.0, -1.0):
        for c2 in (phi, -phi):
            verts += [(c1, c2, 0.0), (0.0, c1, c2), (c2, 0.0, c1)]
    v = torch.tensor(verts)
    v = v / v.norm(dim=1, keepdim=True)
    faces = [(0, 1, 2), (0, 6, 1), (8, 0, 2), (8, 4, 0), (3, 8, 2), (3, 2, 7), (7, 2, 1),
             (0, 4, 6), (4, 11, 6), (6, 11, 5), (1, 5, 7), (4, 10, 11), (4, 8, 10), (10, 8, 3),
             (10, 3, 9), (11, 10, 9), (11, 9, 5), (5, 9, 7), (9, 3, 7), (1, 6, 5)]
    # scipy Rotation.from_euler("y", a).as_matrix(), applied as vertices @ R
    a = (math.pi - 2 * math.asin(phi / math.sqrt(3))) / 2
    rot = torch.tensor([[math.cos(a), 0, math.sin(a)], [0, 1, 0], [-math.sin(a), 0, math.cos(a)]])
    return v @ rot, faces


def refine(v, faces):
    verts = [tuple(p) for p in v.tolist()]
    mid = {}

    def midpoint(i, j):
        key = (min(i, j), max(i, j))
        if key not in mid:
            p = (torch.tensor(verts[i]) + torch.tensor(verts[j])) / 2
            verts.append(tuple((p / p.norm()).tolist()))
            mid[key] = len(verts) - 1
        return mid[key]

    out = []
    for (a, b, c) in faces:
        ab, bc, ca = midpoint(a, b), midpoint(b, c), midpoint(c, a)
        out += [(a, ab, ca), (ab, b, bc), (ca, bc, c), (ab, bc, ca)]
    return torch.tensor(verts), out


def latlon_xyz(lat_deg, lon_deg):
    la, lo = torch.deg2rad(lat_deg), torch.deg2rad(lon_deg)
    return torch.stack([torch.cos(la) * torch.cos(lo), torch.cos(la) * torch.sin(lo),
                        torch.sin(la)], dim=-1)


def node_features(xyz):
    r = torch.sqrt(xyz[:, 0] ** 2 + xyz[:, 1] ** 2)
    return torch.stack([xyz[:, 2], xyz[:, 0] / r, xyz[:, 1] / r], dim=1)


def mesh_latlon(xyz):
    """Mesh nodes' lat/lon in degrees from their positions (graphcast.py _init_mesh_properties:
    phi = arctan2(y, x), theta = arccos(z))."""
    theta = torch.acos((xyz[:, 2] / xyz.norm(dim=1)).clamp(-1, 1))
    return 90.0 - torch.rad2deg(theta), torch.rad2deg(torch.atan2(xyz[:, 1], xyz[:, 0]))


def local_rotation(lat_deg, lon_deg):
    """R = R_y(π/2 − θ)·R_z(−φ) from the receiver's own lat/lon (model_utils.py
    get_rotation_matrices_to_local_coordinates: from_euler("zy", [−φ, π/2 − θ]), θ = 90° − lat,
    φ = lon): receiver → (1, 0, 0), north → +z, east → +y. A pole-row grid node keeps its grid
    longitude here; its position alone would not give one."""
    a = -math.radians(lon_deg)
    b = math.pi / 2 - math.radians(90.0 - lat_deg)
    rz = torch.tensor([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])
    ry = torch.tensor([[math.cos(b), 0, math.sin(b)], [0, 1, 0], [-math.sin(b), 0, math.cos(b)]])
    return ry @ rz


def edge_features(snd_xyz, rcv_xyz, rcv_lat, rcv_lon, snd, rcv, norm=None):
    d = []
    for s, r in zip(snd.tolist(), rcv.tolist()):
        rot = local_rotation(float(rcv_lat[r]), float(rcv_lon[r]))
        d.append(rot @ snd_xyz[s] - rot @ rcv_xyz[r])
    d = torch.stack(d)
    length = d.norm(dim=1, keepdim=True)
    s = norm if norm is not None else length.max()
    return torch.cat([length, d], dim=1) / s


def build_graphs(res, levels, fraction):
    nlat, nlon = int(round(180 / res)) + 1, int(round(360 / res))
    lat = 90.0 - res * torch.arange(nlat, dtype=torch.float64)
    lon = res * torch.arange(nlon, dtype=torch.float64)
    glat, glon = torch.meshgrid(lat, lon, indexing="ij")
    gxyz = latlon_xyz(glat.reshape(-1), glon.reshape(-1))
    v, f = icosahedron()
    all_faces = [f]
    for _ in range(levels):
        v, f = refine(v, f)
        all_faces.append(f)
    # multi-mesh: every level's faces give a→b, b→c, c→a
    ms, mr = [], []
    for fl in all_faces:
        for (a, b, c) in fl:
            ms += [a, b, c]
            mr += [b, c, a]
    ms, mr = torch.tensor(ms), torch.tensor(mr)
    finest = torch.tensor(all_faces[-1])
    fe = torch.cat([finest[:, [0, 1]], finest[:, [1, 2]], finest[:, [2, 0]]])
    max_edge = (v[fe[:, 0]] - v[fe[:, 1]]).norm(dim=1).max()
    radius = fraction * max_edge
    dist = torch.cdist(gxyz, v)
    gi, mi = torch.nonzero(dist <= radius, as_tuple=True)
    # mesh→grid: GraphCast's face (grid_mesh_connectivity.py in_mesh_triangle_indices, through
    # trimesh.proximity.closest_point): the finest flat face nearest in Euclidean distance; when
    # the two smallest squared distances differ by < 1e-8 (and both exceed 1e-8) the one whose
    # unit normal is better aligned with p − q (q the face's nearest point). The nearest point of
    # each face is found here as the plane projection if it falls inside, else the nearest point
    # of the three clamped edge segments.
    a, b, c = v[finest[:, 0]], v[finest[:, 1]], v[finest[:, 2]]
    nrm = torch.linalg.cross(b - a, c - b)
    nrm = nrm / nrm.norm(dim=1, keepdim=True)
    m2g_s, m2g_r, ties = [], [], []
    for g in range(gxyz.shape[0]):
        p = gxyz[g].expand_as(a)
        q = p - ((p - a) * nrm).sum(dim=1, keepdim=True) * nrm
        inside = torch.ones(a.shape[0], dtype=torch.bool)
        for (u, w) in ((a, b), (b, c), (c, a)):
            inside &= (torch.linalg.cross(w - u, q - u) * nrm).sum(dim=1) >= 0
        best_seg = None
        for (u, w) in ((a, b), (b, c), (c, a)):
            t = (((p - u) * (w - u)).sum(dim=1) / ((w - u) ** 2).sum(dim=1)).clamp(0, 1)
            s = u + t[:, None] * (w - u)
            if best_seg is None:
                best_seg = s
            else:
                closer = ((p - s) ** 2).sum(dim=1) < ((p - best_seg) ** 2).sum(dim=1)
                best_seg = torch.where(closer[:, None], s, best_seg)
        q = torch.where(inside[:, None], q, best_seg)
        d2 = ((p - q) ** 2).sum(dim=1)
        order = torch.argsort(d2)
        i0, i1 = int(order[0]), int(order[1])
        best, tie = i0, False
        if d2[i1] - d2[i0] < 1e-8 and d2[i0] > 1e-8:
            dot = [float((nrm[i] * (p[i] - q[i])).sum() / d2[i].sqrt()) for i in (i0, i1)]
            best = i0 if dot[0] >= dot[1] else i1
            # equal alignment (the point on the bisector of the two faces, e.g. a meridian on a
            # mesh edge by the icosahedron's symmetry): which face wins is a matter of rounding
            tie = abs(dot[0] - dot[1]) < 1e-9
        elif d2[i1] - d2[i0] < 1e-14:
            tie = True  # the same nearest point (a shared edge or vertex) by rounding alone
        ties.append(tie)
        m2g_s += finest[best].tolist()
        m2g_r += [g] * 3
    m2g_s, m2g_r = torch.tensor(m2g_s), torch.tensor(m2g_r)
    mlat, mlon = mesh_latlon(v)
    grid_feat = torch.stack([torch.sin(torch.deg2rad(glat.reshape(-1))),
                             torch.cos(torch.deg2rad(glon.reshape(-1))),
                             torch.sin(torch.deg2rad(glon.reshape(-1)))], dim=1)
    return dict(nlat=nlat, nlon=nlon, lat=lat, ng=gxyz.shape[0], nm=v.shape[0],
                grid_feat=grid_feat, mesh_feat=node_features(v),
                g2m=(gi, mi, edge_features(gxyz, v, mlat, mlon, gi, mi)),
                mesh=(ms, mr, edge_features(v, v, mlat, mlon, ms, mr)),
                m2g=(m2g_s, m2g_r, edge_features(v, gxyz, glat.reshape(-1), glon.reshape(-1),
                                                 m2g_s, m2g_r, M2G_NORM)),
                m2g_tie=torch.tensor(ties, dtype=torch.float64))


# ---------------------------------------------------------------------------------------------
# Network


class MLP(nn.Module):
    """Linear → SiLU → Linear (→ LayerNorm); parameter names = ours minus the module prefix."""

    def __init__(self, fin, hidden, fout, ln=True):
        super().__init__()
        self.lin = nn.ModuleList([nn.Linear(fin, hidden), nn.Linear(hidden, fout)])
        self.ln = nn.LayerNorm(fout, eps=1e-5) if ln else None

    def forward(self, x):
        y = self.lin[1](nn.functional.silu(self.lin[0](x)))
        return self.ln(y) if self.ln is not None else y

    def named(self, prefix):
        out = {}
        for i, l in enumerate(self.lin):
            out[f"{prefix}_mlp.linear_{i}.weight"] = l.weight
            out[f"{prefix}_mlp.linear_{i}.bias"] = l.bias
        if self.ln is not None:
            out[f"{prefix}_layer_norm.weight"] = self.ln.weight
            out[f"{prefix}_layer_norm.bias"] = self.ln.bias
        return out


def seg_sum(x, idx, n):
    """Σ of edge rows per receiver (index_add: independent of the C CSR order)."""
    out = torch.zeros(x.shape[:-2] + (n, x.shape[-1]))
    return out.index_add(-2, idx, x)


class GraphCast(nn.Module):
    def __init__(self, g, cin, cout, D, steps):
        super().__init__()
        fin = cin + 3
        self.g, self.cin, self.cout, self.D, self.steps = g, cin, cout, D, steps
        self.m = {
            "grid2mesh_gnn.encoder_edges_grid2mesh": MLP(4, D, D),
            "grid2mesh_gnn.encoder_nodes_grid_nodes": MLP(fin, D, D),
            "grid2mesh_gnn.encoder_nodes_mesh_nodes": MLP(fin, D, D),
            "grid2mesh_gnn.processor_edges_0_grid2mesh": MLP(3 * D, D, D),
            "grid2mesh_gnn.processor_nodes_0_grid_nodes": MLP(D, D, D),
            "grid2mesh_gnn.processor_nodes_0_mesh_nodes": MLP(2 * D, D, D),
            "mesh_gnn.encoder_edges_mesh": MLP(4, D, D),
        }
        for s in range(steps):
            self.m[f"mesh_gnn.processor_edges_{s}_mesh"] = MLP(3 * D, D, D)
            self.m[f"mesh_gnn.processor_nodes_{s}_mesh_nodes"] = MLP(2 * D, D, D)
        self.m["mesh2grid_gnn.encoder_edges_mesh2grid"] = MLP(4, D, D)
        self.m["mesh2grid_gnn.processor_edges_0_mesh2grid"] = MLP(3 * D, D, D)
        self.m["mesh2grid_gnn.processor_nodes_0_grid_nodes"] = MLP(2 * D, D, D)
        self.m["mesh2grid_gnn.processor_nodes_0_mesh_nodes"] = MLP(D, D, D)
        self.m["mesh2grid_gnn.decoder_nodes_grid_nodes"] = MLP(D, D, cout, ln=False)
        self.mods = nn.ModuleList(self.m.values())

    def params(self):
        out = {}
        for k, mod in self.m.items():
            out.update(mod.named(k))
        return out

    def step(self, mlp_e, mlp_n, e, vs, vr, snd, rcv):
        """One InteractionNetwork step: returns updated edges e' and the receivers' update."""
        e_new = mlp_e(torch.cat([e, vs.index_select(-2, snd), vr.index_select(-2, rcv)], dim=-1))
        agg = seg_sum(e_new, rcv, vr.shape[-2])
        return e_new, mlp_n(torch.cat([vr, agg], dim=-1))

    def forward(self, x):
        g, m, B = self.g, self.m, x.shape[0]
        xg = x.reshape(B, self.cin, -1).transpose(1, 2)                       # (B, Ng, Cin)
        gin = torch.cat([xg, g["grid_feat"].expand(B, -1, -1)], dim=-1)
        min_ = torch.cat([torch.zeros(B, g["nm"], self.cin), g["mesh_feat"].expand(B, -1, -1)],
                         dim=-1)
        gs, gr, gf = g["g2m"]
        vg = m["grid2mesh_gnn.encoder_nodes_grid_nodes"](gin)
        vm = m["grid2mesh_gnn.encoder_nodes_mesh_nodes"](min_)
        eg = m["grid2mesh_gnn.encoder_edges_grid2mesh"](gf.expand(B, -1, -1))
        _, dvm = self.step(m["grid2mesh_gnn.processor_edges_0_grid2mesh"],
                           m["grid2mesh_gnn.processor_nodes_0_mesh_nodes"], eg, vg, vm, gs, gr)
        dvg = m["grid2mesh_gnn.processor_nodes_0_grid_nodes"](vg)               # orphan update
        vm, vg = vm + dvm, vg + dvg
        ms, mr, mf = g["mesh"]
        em = m["mesh_gnn.encoder_edges_mesh"](mf.expand(B, -1, -1))
        for s in range(self.steps):
            de, dvm = self.step(m[f"mesh_gnn.processor_edges_{s}_mesh"],
                                m[f"mesh_gnn.processor_nodes_{s}_mesh_nodes"], em, vm, vm, ms, mr)
            em, vm = em + de, vm + dvm
        ds, dr, df = g["m2g"]
        ed = m["mesh2grid_gnn.encoder_edges_mesh2grid"](df.expand(B, -1, -1))
        _, dvg = self.step(m["mesh2grid_gnn.processor_edges_0_mesh2grid"],
                           m["mesh2grid_gnn.processor_nodes_0_grid_nodes"], ed, vm, vg, ds, dr)
        # the published decoder also updates the mesh nodes (orphans); nothing reads the result
        vm = vm + m["mesh2grid_gnn.processor_nodes_0_mesh_nodes"](vm)
        vg = vg + dvg
        out = m["mesh2grid_gnn.decoder_nodes_grid_nodes"](vg)                   # (B, Ng, Cout)
        return out.transpose(1, 2).reshape(B, self.cout, g["nlat"], g["nlon"])


# ---------------------------------------------------------------------------------------------
# Loss (graphcast losses.py weighted_mse_per_level, restated)


def lat_weights(lat_deg):
    """cos(lat)·sin(Δ/2) inside, sin²(Δ/4) at the pole rows, normalised to mean 1."""
    d = math.radians(abs(float(lat_deg[1] - lat_deg[0])))
    w = torch.cos(torch.deg2rad(lat_deg)) * math.sin(d / 2)
    pole = (lat_deg.abs() - 90).abs() < 1e-9
    w[pole] = math.sin(d / 4) ** 2
    return w / w.mean()


# Output channels of the tiny config: [2t, msl, z500, z850]
VARS = [("2m_temperature", 1.0, [None]), ("mean_sea_level_pressure", 0.1, [None]),
        ("geopotential", 1.0, [500.0, 850.0])]


def gc_loss(pred, target, wlat):
    total, c = 0.0, 0
    for _, wvar, levels in VARS:
        n = len(levels)
        err = (pred[:, c:c + n] - target[:, c:c + n]) ** 2 * wlat[None, None, :, None]
        if levels[0] is not None:
            lev = torch.tensor(levels)
            err = err * (lev / lev.mean())[None, :, None, None]
        total = total + wvar * err.mean()
        c += n
    return total


# ---------------------------------------------------------------------------------------------


def init_weights(model, gen):
    for name, p in model.params().items():
        with torch.no_grad():
            if name.endswith("layer_norm.weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=gen))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(torch.randn(p.shape, generator=gen) / math.sqrt(p.shape[1]))


def main():
    gen = torch.Generator().manual_seed(20261130)
    res, levels, fraction, D, steps, cin, cout = 22.5, 1, 0.6, 8, 2, 18, 4
    g = build_graphs(res, levels, fraction)
    model = GraphCast(g, cin, cout, D, steps)
    init_weights(model, gen)
    params = model.params()
    wlat = lat_weights(g["lat"])
    H, W = g["nlat"], g["nlon"]
    common = {"cfg/resolution": res, "cfg/mesh_max_level": levels, "cfg/fraction": fraction,
              "cfg/latent": D, "cfg/steps": steps, "cfg/cin": cin, "cfg/cout": cout,
              "graph/g2m_edges": g["g2m"][0].numel(), "graph/mesh_edges": g["mesh"][0].numel(),
              "graph/m2g_edges": g["m2g"][0].numel(), "graph/m2g_senders": g["m2g"][0],
              "graph/m2g_features": g["m2g"][2], "graph/m2g_tie": g["m2g_tie"], "wlat": wlat}

    # one step, batch 2
    x = torch.randn(2, cin, H, W, generator=gen).requires_grad_(True)
    t = torch.randn(2, cout, H, W, generator=gen)
    y = model(x)
    loss = gc_loss(y, t, wlat)
    model.zero_grad()
    loss.backward()
    out = dict(common)
    out.update({f"param/{k}": v for k, v in params.items()})
    out.update({"x": x, "t": t, "y": y, "loss": loss})
    out.update({f"grad/{k}": (v.grad if v.grad is not None else torch.zeros_like(v))
                for k, v in params.items()})
    out["dx"] = x.grad
    print("gc_tiny:", wxfixture.write("gc_tiny", out), "loss", float(loss))

    # three-step rollout, batch 1 (weights from the same model)
    x0 = torch.randn(1, cin, H, W, generator=gen).requires_grad_(True)
    bases = [torch.randn(1, cin, H, W, generator=gen) for _ in range(2)]
    targets = [torch.randn(1, cout, H, W, generator=gen) for _ in range(3)]
    scale = 0.5 + torch.rand(cout, generator=gen)
    prev, last = list(range(0, 4)), list(range(4, 8))
    model.zero_grad()
    xk, total = x0, 0.0
    for k in range(3):
        yk = model(xk)
        total = total + gc_loss(yk, targets[k], wlat)
        if k < 2:
            nxt = bases[k].clone()
            nxt[:, prev] = xk[:, last]
            nxt[:, last] = xk[:, last] + scale[None, :, None, None] * yk
            xk = nxt
    total = total / 3
    total.backward()
    out = {"cfg/steps_rollout": 3, "x0": x0, "base1": bases[0], "base2": bases[1],
           "t1": targets[0], "t2": targets[1], "t3": targets[2], "scale": scale, "loss": total}
    out.update({f"grad/{k}": (v.grad if v.grad is not None else torch.zeros_like(v))
                for k, v in params.items()})
    out["dx0"] = x0.grad
    print("gc_rollout:", wxfixture.write("gc_rollout", out), "loss", float(total))


if __name__ == "__main__":
    main()
