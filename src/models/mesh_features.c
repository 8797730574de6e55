/* Structural node and edge features (GraphCast model_utils.py, reference §1.5). */
#include <math.h>
#include <stdlib.h>

#include "models/mesh.h"

void wx_mesh_latlon_to_xyz(double lat, double lon, double *xyz) {
    double la = lat * (M_PI / 180.0), lo = lon * (M_PI / 180.0);
    xyz[0] = cos(la) * cos(lo);
    xyz[1] = cos(la) * sin(lo);
    xyz[2] = sin(la);
}

/* sin lat is z itself (GraphCast's "cos(colatitude)"), and cos/sin lon come from atan2 so that the
 * poles, where lon is undefined, get lon = 0 as numpy's arctan2(0, 0) gives. */
void wx_mesh_node_features(const double *xyz, int64_t n, float *feat) {
    for (int64_t i = 0; i < n; i++) {
        const double *p = xyz + 3 * i;
        double lon = atan2(p[1], p[0]);
        feat[3 * i] = (float)p[2];
        feat[3 * i + 1] = (float)cos(lon);
        feat[3 * i + 2] = (float)sin(lon);
    }
}

void wx_mesh_xyz_to_latlon(const double *xyz, int64_t n, double *latlon) {
    /* atan2(z, ρ) rather than GraphCast's arccos(z): the same angle on the unit sphere, and it
     * stays a true latitude for the float32 vertices, which are off the sphere by ~1e-7. */
    for (int64_t i = 0; i < n; i++) {
        const double *p = xyz + 3 * i;
        latlon[2 * i] = atan2(p[2], sqrt(p[0] * p[0] + p[1] * p[1])) * (180.0 / M_PI);
        latlon[2 * i + 1] = atan2(p[1], p[0]) * (180.0 / M_PI);
    }
}

void wx_mesh_local_rotation(double lat, double lon, double *rot) {
    /* R_z(−φ) then R_y(π/2 − θ): with cos θ = sin lat = z and sin θ = cos lat = ρ, R_y(π/2 − θ)
     * has cos = ρ and sin = z, so R = [[ρ cφ, ρ sφ, z], [−sφ, cφ, 0], [−z cφ, −z sφ, ρ]]. */
    double la = lat * (M_PI / 180.0), lo = lon * (M_PI / 180.0);
    double rho = cos(la), z = sin(la), cp = cos(lo), sp = sin(lo);
    double r[9] = {rho * cp, rho * sp, z, -sp, cp, 0.0, -z * cp, -z * sp, rho};
    for (int k = 0; k < 9; k++) rot[k] = r[k];
}

/* Receiver v's rotation from its own (lat, lon) when given, else from its position (mesh nodes,
 * whose lat/lon GraphCast derives from the vertex). */
static void receiver_rotation(const double *receiver_xyz, const double *receiver_latlon,
                              int32_t v, double *rot) {
    double ll[2];
    if (receiver_latlon) {
        ll[0] = receiver_latlon[2 * (int64_t)v];
        ll[1] = receiver_latlon[2 * (int64_t)v + 1];
    } else {
        wx_mesh_xyz_to_latlon(receiver_xyz + 3 * (int64_t)v, 1, ll);
    }
    wx_mesh_local_rotation(ll[0], ll[1], rot);
}

/* Edge k's [|d|, d] with d = R(receiver)·(sender − receiver), unnormalised. rot is the
 * receiver's rotation from `table` or, without one, `own`, recomputed when the receiver changes
 * (*last). R·s − R·r = R·(s − r): rotating the difference avoids cancelling two ~1 values. */
static inline void edge_vec(const wx_edge_set *set, int64_t k, const double *sender_xyz,
                            const double *receiver_xyz, const double *receiver_latlon,
                            const double *table, int32_t *last, double *own, double *out) {
    const double *s = sender_xyz + 3 * (int64_t)set->senders[k];
    const double *r = receiver_xyz + 3 * (int64_t)set->receivers[k];
    double rel[3] = {s[0] - r[0], s[1] - r[1], s[2] - r[2]};
    const double *rot = own;
    if (table) {
        rot = table + 9 * (int64_t)set->receivers[k];
    } else if (set->receivers[k] != *last) {
        receiver_rotation(receiver_xyz, receiver_latlon, set->receivers[k], own);
        *last = set->receivers[k];
    }
    for (int i = 0; i < 3; i++)
        out[1 + i] = rot[3 * i] * rel[0] + rot[3 * i + 1] * rel[1] + rot[3 * i + 2] * rel[2];
    out[0] = sqrt(out[1] * out[1] + out[2] * out[2] + out[3] * out[3]);
}

wx_status wx_mesh_edge_features(wx_edge_set *set, const double *sender_xyz,
                                const double *receiver_xyz, const double *receiver_latlon,
                                double norm) {
    int64_t e = set->n_edges;
    double longest = 0.0;
    /* The rotation depends on the receiver only: a table when receivers are few per edge
     * (g2m, the multi-mesh), else reuse along runs of one receiver (m2g: 3 edges per point). */
    int64_t nr = set->n_receivers;
    double *table = NULL;
    if (nr > 0 && nr * 4 <= e) {
        table = wx_malloc((size_t)nr * 9 * sizeof(double));
#pragma omp parallel for schedule(static)
        for (int32_t v = 0; v < nr; v++)
            receiver_rotation(receiver_xyz, receiver_latlon, v, table + 9 * (int64_t)v);
    }
    /* Two passes (the longest edge, then the features) instead of storing the double vectors:
     * recomputing is cheaper than writing and rereading 32 bytes per edge. */
#pragma omp parallel reduction(max : longest)
    {
        int32_t last = -1;
        double own[9], out[4];
#pragma omp for schedule(static)
        for (int64_t k = 0; k < e; k++) {
            edge_vec(set, k, sender_xyz, receiver_xyz, receiver_latlon, table, &last, own, out);
            if (out[0] > longest) longest = out[0];
        }
    }
    double s = norm > 0.0 ? norm : longest;
    if (!(s > 0.0)) {
        free(table);
        return wx_error_set(WX_ERR_RUN, "edge features: every edge has zero length (%lld edges)",
                            (long long)e);
    }
    free(set->features);
    set->features = wx_malloc((size_t)(e > 0 ? e : 1) * 4 * sizeof(float));
#pragma omp parallel
    {
        int32_t last = -1;
        double own[9], out[4];
#pragma omp for schedule(static)
        for (int64_t k = 0; k < e; k++) {
            edge_vec(set, k, sender_xyz, receiver_xyz, receiver_latlon, table, &last, own, out);
            for (int i = 0; i < 4; i++) set->features[4 * k + i] = (float)(out[i] / s);
        }
    }
    free(table);
    set->norm = s;
    set->max_length = longest;
    return WX_OK;
}
