"""Reference for wxcast's mesh->grid face choice (src/models/mesh_closest.c), made with DeepMind's
own code: graphcast/grid_mesh_connectivity.py `in_mesh_triangle_indices`, which takes each grid
point's face with `trimesh.proximity.closest_point` on the finest mesh (icosahedral_mesh.py).

Writes tests/ref/fixtures/gc_m2g_1deg.wxfx for the 1-degree grid (181 x 360, rows from the north
pole as in wxcast) and mesh M5 (20,480 faces), and gc_m2g_22p5deg.wxfx for the 22.5-degree grid
(9 x 16) and mesh M1 of test_weights_gc (same layout).

trimesh's answer is not a function of the geometry everywhere: where two faces' squared distances
are bit-equal (the nearest point is on their shared edge) and either both are <= tol.merge or
their normals are equally aligned, it returns whichever numpy's argsort puts first in the
R-tree's candidate list, and numpy's default sort is not stable (its AVX2/AVX512 kernels and the
pre-2.0 insertion sort order equal keys differently). Those points are found here with trimesh's
own pieces (nearby_faces, triangles.closest_point, face_normals) by trying every order of the
equal distances; there any of the possible faces is DeepMind's rule.

Storing all 65,160 sender triples would take ~1.5 MB, so the fixture keeps
  points (n,)        the grid points (wxcast order, row-major from the north) where DeepMind's
                     face is decided by the rule and is not the face whose gnomonic (radial)
                     projection contains the point (the old wxcast rule; n_differ of them), and
                     the points decided by sort order alone (n_tie)
  senders (n, 3)     the 3 mesh->grid senders (mesh vertex indices, face order) DeepMind's code
                     gave there on the machine that ran this script
  tied (n, k, 3)     at order-decided points, every face trimesh could return (-1 padding)
  n_differ, n_tie, n_grid (65,160 / 144)
  hash               polynomial hash of the senders of every point not decided by sort order,
                     in wxcast order: h = (h * 1000003 + s + 1) mod (2^31 - 1), from h = 0
so a test can check every decided point exactly through the hash, name failing points through
the list, and check that order-decided points take one of the possible faces.

Not run in CI (trimesh and DeepMind's graphcast are not on the machine); the fixture is
committed. To regenerate, in a virtual environment:

  python3 -m venv venv && venv/bin/pip install trimesh scipy rtree numpy
  PYTHONPATH=<a checkout of google-deepmind/graphcast> venv/bin/python tests/ref/ref_mesh_m2g.py

(make_fixtures.sh runs it with GRAPHCAST_PY set, like ref_graphcast_npz.py). Checked with
trimesh 4.x, numpy 2.4, and icosahedral_mesh.py / grid_mesh_connectivity.py of the v0.2 layout.
"""
import os
import struct

import numpy as np
import trimesh
from scipy.spatial import cKDTree

from graphcast import grid_mesh_connectivity, icosahedral_mesh

HASH_MUL, HASH_MOD = 1000003, 2**31 - 1
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
# (grid spacing in degrees, finest mesh level, fixture): the 1-degree grid on M5, and the 22.5-degree
# grid on M1 of configs/model/graphcast_tiny.yaml (test_weights_gc's gc_import fixture)
CASES = ((1.0, 5, "gc_m2g_1deg"), (22.5, 1, "gc_m2g_22p5deg"))


def write_wxfx(path, tensors):
    """tests/ref/wxfixture.py's format (that writer needs torch, absent from this venv)."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(b"WXFX")
        f.write(struct.pack("<II", 1, len(tensors)))
        for key, value in tensors.items():
            t = np.ascontiguousarray(np.asarray(value, dtype=np.float64))
            raw = key.encode()
            f.write(struct.pack("<I", len(raw)))
            f.write(raw)
            f.write(struct.pack("<I", t.ndim))
            for d in t.shape:
                f.write(struct.pack("<q", d))
            f.write(t.astype("<f8").tobytes())
    os.replace(tmp, path)


def order_free_winners(d, cand, normals, vec):
    """Every face trimesh.proximity.closest_point can return for one point, whatever order
    numpy's argsort gives bit-equal squared distances d (numpy's default sort is not stable and
    its SIMD kernels differ by CPU and version; the candidate order is the R-tree's): the first of
    the two smallest, unless they differ by < tol.merge and both exceed it, then the one whose
    unit normal has the larger dot with the unit vector from its nearest point (the first on a
    tie)."""
    merge = trimesh.tol.merge
    vals = np.unique(d)
    first = np.where(d == vals[0])[0]
    second = first if len(first) > 1 else np.where(d == vals[1])[0]
    out = set()
    for f in first:
        for s in second:
            if s == f:
                continue
            if abs(d[s] - d[f]) < merge and abs(d[f]) > merge and abs(d[s]) > merge:
                dots = [(normals[cand[k]] * vec[k] / d[k] ** 0.5).sum() for k in (f, s)]
                out.add(int(cand[s] if dots[1] > dots[0] else cand[f]))
            else:
                out.add(int(cand[f]))
    return out


def make(res, level, name):
    OUT = os.path.join(FIXTURES, name + ".wxfx")
    nlat, nlon = int(180 / res) + 1, int(360 / res)
    lat = np.linspace(-90, 90, nlat).astype(np.float32)  # GraphCast's order: south first
    lon = np.arange(0, 360, res).astype(np.float32)
    mesh = icosahedral_mesh.get_hierarchy_of_triangular_meshes_for_sphere(level)[-1]
    _, senders = grid_mesh_connectivity.in_mesh_triangle_indices(
        grid_latitude=lat, grid_longitude=lon, mesh=mesh)
    # wxcast's grid order: rows from the north pole
    senders = senders.reshape(nlat, nlon, 3)[::-1].reshape(-1, 3).astype(np.int64)
    pos = grid_mesh_connectivity._grid_lat_lon_to_coordinates(lat, lon)[::-1].reshape(-1, 3)
    pos = pos.astype(np.float64)
    faces = mesh.faces
    face_of = {tuple(f): k for k, f in enumerate(faces.tolist())}

    # trimesh's own pieces of closest_point (proximity.py), to find the points where its answer
    # is decided by sort order alone
    tm = trimesh.Trimesh(vertices=mesh.vertices, faces=faces)
    cands = trimesh.proximity.nearby_faces(tm, pos)
    tri = tm.triangles.view(np.ndarray)
    allc = np.concatenate(cands)
    qp = np.repeat(pos, [len(c) for c in cands], axis=0)
    vec = qp - trimesh.triangles.closest_point(tri[allc], qp)
    dist = np.dot(vec * vec, [1.0, 1.0, 1.0])
    starts = np.concatenate([[0], np.cumsum([len(c) for c in cands])])
    ties = {}
    for g in range(len(pos)):
        sl = slice(starts[g], starts[g + 1])
        win = order_free_winners(dist[sl], allc[sl], tm.face_normals, vec[sl])
        assert face_of[tuple(senders[g])] in win
        if len(win) > 1:
            ties[g] = sorted(win)

    # Gnomonic containment, independently: barycentric weights det(p, b, c) etc. over the 12
    # faces with the nearest centroids; the largest smallest weight wins.
    v = mesh.vertices.astype(np.float64)
    tv = v[faces]
    _, near = cKDTree(tv.mean(axis=1)).query(pos, k=12)
    a, b, c = (tv[near][:, :, k] for k in range(3))
    p = np.broadcast_to(pos[:, None, :], a.shape)
    w = np.stack([np.einsum("...i,...i", p, np.cross(b, c)),
                  np.einsum("...i,...i", a, np.cross(p, c)),
                  np.einsum("...i,...i", a, np.cross(b, p))], axis=-1)
    w = w / w.sum(axis=-1, keepdims=True)
    wmin = w.min(axis=-1)
    best = near[np.arange(len(pos)), wmin.argmax(axis=1)]
    differ = np.array([face_of[tuple(s)] != f for s, f in zip(senders.tolist(), best.tolist())])
    tie = np.zeros(len(pos), dtype=bool)
    tie[list(ties)] = True
    keep = np.where(differ | tie)[0]
    width = max([len(t) for t in ties.values()] + [1])
    tied = -np.ones((len(keep), width, 3))
    for k, g in enumerate(keep):
        for j, f in enumerate(ties.get(g, [])):
            tied[k, j] = faces[f]

    h = 0
    for g in np.where(~tie)[0].tolist():
        for s in senders[g].tolist():
            h = (h * HASH_MUL + s + 1) % HASH_MOD
    n_differ = int((differ & ~tie).sum())
    write_wxfx(OUT, {"points": keep, "senders": senders[keep], "tied": tied,
                     "n_differ": n_differ, "n_tie": int(tie.sum()), "n_grid": len(pos),
                     "hash": h})
    print("%s: %d grid points; %d where DeepMind's face is decided and is not the containing "
          "one; %d where it is decided by sort order alone (up to %d faces); %d stored; "
          "hash %d" % (OUT, len(pos), n_differ, int(tie.sum()), width, len(keep), h))


if __name__ == "__main__":
    for case in CASES:
        make(*case)
