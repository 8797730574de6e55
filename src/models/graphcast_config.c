#include "models/graphcast_config.h"

#include <math.h>
#include <string.h>

#include "meteo/wx_catalogue.h"
#include "models/forcings.h"

static const char *const model_types[] = {"graphcast", NULL};

/* Defaults: GraphCast_small (1°, 13 levels, mesh 5, precipitation input and output). Variable
 * names are GraphCast's (WeatherBench) names; the ERA5 short names (2t, msl, ...) work too. */
const wx_cfg_field wx_gc_config_fields[] = {
    {"type", WX_CFG_STR, 1, WX_CFG_NO_RANGE, NULL, "model family", model_types},
    {"resolution", WX_CFG_FLOAT, 0, 0.01, 90, "1.0",
     "global lat/lon grid spacing in degrees, both poles included (1.0: 181 x 360)", NULL},
    {"mesh_min_level", WX_CFG_INT, 0, 0, 8, "0",
     "coarsest icosahedral refinement whose edges join the multi-mesh (published: 0)", NULL},
    {"mesh_max_level", WX_CFG_INT, 0, 0, 8, "5", "finest refinement (mesh_size: 5 small, 6 full)",
     NULL},
    {"latent_size", WX_CFG_INT, 0, 1, 65536, "512", "node and edge latent width (= MLP hidden width)",
     NULL},
    {"gnn_msg_steps", WX_CFG_INT, 0, 1, 1024, "16", "processor message-passing steps, unshared weights",
     NULL},
    {"hidden_layers", WX_CFG_INT, 0, 1, WX_GC_MAX_HIDDEN_LAYERS, "1",
     "hidden layers per MLP (Linear -> SiLU repeated, then the output Linear)", NULL},
    {"radius_query_fraction_edge_length", WX_CFG_FLOAT, 0, 1e-6, 10, "0.6",
     "grid->mesh radius as a fraction of the longest finest-mesh edge", NULL},
    {"mesh2grid_edge_normalization_factor", WX_CFG_FLOAT, 0, 0, 10, "0.6180338738074472",
     "mesh->grid edge feature normaliser (published checkpoint constant); 0: longest edge", NULL},
    {"input_steps", WX_CFG_INT, 0, 1, 16, "2", "input frames (t-6h, t)", NULL},
    {"surface_variables", WX_CFG_LIST, 0, WX_CFG_NO_RANGE, "[2m_temperature, mean_sea_level_pressure, 10m_v_component_of_wind, "
     "10m_u_component_of_wind, total_precipitation_6hr]",
     "surface targets (inputs too unless listed in target_only_variables)", NULL},
    {"atmospheric_variables", WX_CFG_LIST, 0, WX_CFG_NO_RANGE, "[temperature, geopotential, u_component_of_wind, v_component_of_wind, "
     "vertical_velocity, specific_humidity]",
     "pressure-level targets and inputs", NULL},
    {"pressure_levels", WX_CFG_LIST, 0, WX_CFG_NO_RANGE,
     "[50, 100, 150, 200, 250, 300, 400, 500, 600, 700, 850, 925, 1000]",
     "pressure levels in hPa (loss level weights are proportional to them)", NULL},
    {"target_only_variables", WX_CFG_LIST, 0, WX_CFG_NO_RANGE, "[]",
     "targets not fed as inputs (GraphCast_operational: [total_precipitation_6hr])", NULL},
    {"forcings", WX_CFG_LIST, 0, WX_CFG_NO_RANGE,
     "[toa_incident_solar_radiation, year_progress_sin, year_progress_cos, day_progress_sin, day_progress_cos]",
     "forcings, at every input time and at the target time", NULL},
    {"static_variables", WX_CFG_LIST, 0, WX_CFG_NO_RANGE, "[geopotential_at_surface, land_sea_mask]",
     "static fields (surface geopotential, land-sea mask)", NULL},
    WX_CFG_END,
};

static const wx_cfg_field *field_of(const char *key) {
    for (const wx_cfg_field *f = wx_gc_config_fields; f->key; f++)
        if (strcmp(f->key, key) == 0) return f;
    WX_ASSERT(0);
    return NULL;
}

static void key_path(char *buf, size_t len, const char *path, const char *key) {
    if (path && path[0])
        snprintf(buf, len, "%s.%s", path, key);
    else
        snprintf(buf, len, "%s", key);
}

/* The names training can find, checked where they are written (so `info --model` refuses what
 * `train` would): an atmospheric variable is read from an archive only through its catalogue
 * entry (a pressure-level channel is matched by parameter and level, never by a free name), and a
 * forcing is computed, so it must be one wx_forcing_fill computes. Surface and static variables
 * may be any archive channel's name: those are checked against the archive at training. */
static wx_status check_name(const char *key, const char *name) {
    if (strcmp(key, "forcings") == 0) {
        double lat = 0, lon = 0;
        float v;
        return wx_forcing_fill(name, 0, &lat, 1, &lon, 1, &v); /* its error names what it knows */
    }
    if (strcmp(key, "atmospheric_variables") != 0) return WX_OK;
    char base[WX_GC_VAR_NAME];
    wx_catalogue_strip_period(name, base, sizeof base);
    if (wx_catalogue_find_kind(base, WX_LEVEL_PRESSURE)) return WX_OK;
    char known[512] = "";
    size_t used = 0;
    for (int i = 0; i < wx_catalogue_count() && used < sizeof known - 64; i++) {
        const wx_catalogue_entry *e = wx_catalogue_at(i);
        if (e->level_kind != WX_LEVEL_PRESSURE) continue;
        size_t n = strcspn(e->aliases, ",");
        used += (size_t)snprintf(known + used, sizeof known - used, "%s%.*s (%s)", used ? ", " : "",
                                 (int)n, e->aliases, e->short_name);
    }
    return wx_error_set(WX_ERR_USAGE, "'%s' is not a pressure-level variable of the catalogue "
                        "(expected one of %s)", name, known);
}

/* The list at `key` (or its default) as names (levels == NULL) or numbers. */
static wx_status get_list(const wx_yaml *map, const char *path, const char *key,
                          char (*names)[WX_GC_VAR_NAME], double *levels, int max, int *count) {
    const wx_yaml *node = map && map->kind == WX_YAML_MAP ? wx_yaml_get(map, key) : NULL;
    wx_yaml *def = NULL;
    char full[256];
    key_path(full, sizeof full, path, key);
    if (!node) {
        WX_TRY(wx_yaml_load_string(field_of(key)->def, "<defaults>", &def));
        node = def;
    }
    wx_status st = WX_OK;
    const char *file = node->file ? node->file : "<defaults>";
    if (node->kind != WX_YAML_SEQ) {
        st = wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s': expected a list", file, node->line,
                          full);
    } else if (node->count > max) {
        st = wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s': %d items; at most %d", file,
                          node->line, full, node->count, max);
    }
    for (int i = 0; st == WX_OK && i < node->count; i++) {
        char item[280];
        snprintf(item, sizeof item, "%s[%d]", full, i);
        if (levels) {
            st = wx_yaml_as_double(node->items[i], item, &levels[i]);
            if (st == WX_OK && !(levels[i] > 0 && levels[i] <= 1100))
                st = wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s': %g hPa is outside (0, 1100]",
                                  file, node->items[i]->line, item, levels[i]);
            /* a level twice makes two output channels of one archive channel: the checkpoint's
             * data section then cannot be matched to the model's outputs */
            for (int j = 0; st == WX_OK && j < i; j++)
                if (levels[j] == levels[i])
                    st = wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s': %g hPa is listed twice "
                                      "(also item %d); each level once", file,
                                      node->items[i]->line, item, levels[i], j);
        } else {
            const char *s = NULL;
            st = wx_yaml_as_string(node->items[i], item, &s);
            if (st == WX_OK && (strlen(s) == 0 || strlen(s) >= WX_GC_VAR_NAME))
                st = wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s': name must have 1..%d "
                                  "characters", file, node->items[i]->line, item,
                                  WX_GC_VAR_NAME - 1);
            for (int j = 0; st == WX_OK && j < i; j++)
                if (strcmp(names[j], s) == 0)
                    st = wx_error_set(WX_ERR_USAGE, "%s: line %d: key '%s': '%s' is listed twice "
                                      "(also item %d); each name once", file,
                                      node->items[i]->line, item, s, j);
            if (st == WX_OK && check_name(key, s) != WX_OK)
                st = wx_error_wrap(WX_ERR_USAGE, "%s: line %d: key '%s': ", file,
                                   node->items[i]->line, item);
            if (st == WX_OK) snprintf(names[i], WX_GC_VAR_NAME, "%s", s);
        }
    }
    *count = node->count;
    wx_yaml_free(def);
    return st;
}

/* *key: the config key a failure is about (parse points at its line). */
static wx_status derive(wx_gc_config *c, const char **key) {
#define BAD(k, ...) return *key = (k), wx_error_set(WX_ERR_USAGE, __VA_ARGS__)
    if (!(c->resolution > 0)) BAD("resolution", "resolution %g: expected > 0", c->resolution);
    double nl = 180.0 / c->resolution, nw = 360.0 / c->resolution;
    if (fabs(nl - floor(nl + 0.5)) > 1e-9 || fabs(nw - floor(nw + 0.5)) > 1e-9)
        BAD("resolution", "resolution %g: expected a divisor of 180 degrees", c->resolution);
    c->nlat = (int64_t)floor(nl + 0.5) + 1;
    c->nlon = (int64_t)floor(nw + 0.5);
    if (c->mesh_min_level < 0 || c->mesh_min_level > c->mesh_max_level || c->mesh_max_level > 8)
        BAD(c->mesh_min_level < 0 || c->mesh_min_level > c->mesh_max_level ? "mesh_min_level"
                                                                            : "mesh_max_level",
            "mesh levels %lld..%lld: expected 0 <= min <= max <= 8", (long long)c->mesh_min_level,
            (long long)c->mesh_max_level);
    if (c->latent_size < 1 || c->gnn_msg_steps < 1 || c->input_steps < 1)
        BAD(c->latent_size < 1     ? "latent_size"
            : c->gnn_msg_steps < 1 ? "gnn_msg_steps"
                                   : "input_steps",
            "latent_size, gnn_msg_steps and input_steps must be >= 1");
    if (c->hidden_layers < 1 || c->hidden_layers > WX_GC_MAX_HIDDEN_LAYERS)
        BAD("hidden_layers", "hidden_layers %lld: expected 1..%d", (long long)c->hidden_layers,
            WX_GC_MAX_HIDDEN_LAYERS);
    if (c->n_surface + c->n_atmos < 1)
        BAD("surface_variables", "no target variables (surface_variables and "
                                 "atmospheric_variables are both empty)");
    if (c->n_atmos > 0 && c->n_levels < 1)
        BAD("pressure_levels", "atmospheric variables need pressure levels (the list is empty)");
    int surf_in = c->n_surface, atm_in = c->n_atmos;
    for (int i = 0; i < c->n_target_only; i++) {
        int found = 0;
        for (int k = 0; k < c->n_surface; k++) found |= strcmp(c->surface[k], c->target_only[i]) == 0;
        if (found) { surf_in--; continue; }
        for (int k = 0; k < c->n_atmos; k++) found |= strcmp(c->atmos[k], c->target_only[i]) == 0;
        if (!found)
            BAD("target_only_variables", "'%s' is not a surface or atmospheric variable",
                c->target_only[i]);
        atm_in--;
    }
    c->out_channels = c->n_surface + (int64_t)c->n_atmos * c->n_levels;
    c->in_channels = c->input_steps * (surf_in + (int64_t)atm_in * c->n_levels + c->n_forcings) +
                     c->n_static + c->n_forcings;
    if (c->in_channels < 1) BAD("input_steps", "no input channels");
    return WX_OK;
#undef BAD
}

wx_status wx_gc_config_derive(wx_gc_config *c) {
    const char *key = NULL;
    wx_status st = derive(c, &key);
    return st == WX_OK ? WX_OK : wx_error_wrap(st, "graphcast config: ");
}

wx_status wx_gc_config_parse(const wx_yaml *map, const char *path, wx_gc_config *c) {
    const wx_cfg_field *f = wx_gc_config_fields;
    memset(c, 0, sizeof *c);
    WX_TRY(wx_cfg_validate(map, path, f));
    WX_TRY(wx_cfg_double(map, f, "resolution", &c->resolution));
    WX_TRY(wx_cfg_int(map, f, "mesh_min_level", &c->mesh_min_level));
    WX_TRY(wx_cfg_int(map, f, "mesh_max_level", &c->mesh_max_level));
    WX_TRY(wx_cfg_int(map, f, "latent_size", &c->latent_size));
    WX_TRY(wx_cfg_int(map, f, "gnn_msg_steps", &c->gnn_msg_steps));
    WX_TRY(wx_cfg_int(map, f, "hidden_layers", &c->hidden_layers));
    WX_TRY(wx_cfg_double(map, f, "radius_query_fraction_edge_length", &c->radius_fraction));
    WX_TRY(wx_cfg_double(map, f, "mesh2grid_edge_normalization_factor", &c->m2g_norm));
    WX_TRY(wx_cfg_int(map, f, "input_steps", &c->input_steps));
    WX_TRY(get_list(map, path, "surface_variables", c->surface, NULL, WX_GC_MAX_VARS, &c->n_surface));
    WX_TRY(get_list(map, path, "atmospheric_variables", c->atmos, NULL, WX_GC_MAX_VARS, &c->n_atmos));
    WX_TRY(get_list(map, path, "pressure_levels", NULL, c->levels, WX_GC_MAX_LEVELS, &c->n_levels));
    WX_TRY(get_list(map, path, "target_only_variables", c->target_only, NULL, WX_GC_MAX_VARS,
                    &c->n_target_only));
    WX_TRY(get_list(map, path, "forcings", c->forcings, NULL, WX_GC_MAX_VARS, &c->n_forcings));
    WX_TRY(get_list(map, path, "static_variables", c->statics, NULL, WX_GC_MAX_VARS, &c->n_static));
    const char *key = NULL;
    wx_status st = derive(c, &key);
    if (st == WX_OK) return WX_OK;
    /* (wrap, not wx_error_set with wx_error_message() as an argument: that formats the message
     * into its own buffer) */
    const char *file = map && map->file ? map->file : path && path[0] ? path : "<defaults>";
    if (map && key && wx_yaml_get(map, key))
        return wx_error_wrap(st, "%s: line %d: key '%s': ", file, wx_yaml_key_line(map, key), key);
    return wx_error_wrap(st, "%s: key '%s' (default): ", file, key);
    return WX_OK;
}

int64_t wx_gc_mlp_param_count(int64_t in, int64_t hidden, int64_t out, int64_t hidden_layers,
                              int ln) {
    int64_t n = in * hidden + hidden;                     /* linear_0 */
    n += (hidden_layers - 1) * (hidden * hidden + hidden); /* linear_1 .. linear_{k-1} */
    n += hidden * out + out;                              /* linear_k */
    return n + (ln ? 2 * out : 0);                        /* LayerNorm scale + offset */
}

/* Reference §1.6–1.7: the encoder embeds grid nodes, mesh nodes (zeros + structural) and
 * grid→mesh edges, then one step (edge MLP on [e, sender, receiver], mesh-node MLP on
 * [n, Σe'], grid-node orphan MLP on [n]); the processor embeds mesh edges and runs
 * gnn_msg_steps steps; the decoder embeds mesh→grid edges, runs one step (grid-node MLP on
 * [n, Σe'], mesh-node orphan MLP) and the output MLP without LayerNorm. */
void wx_gc_param_count(const wx_gc_config *c, wx_gc_param_counts *n) {
    const int64_t D = c->latent_size, k = c->hidden_layers, fin = c->in_channels + 3;
    n->mlp_node_embed = wx_gc_mlp_param_count(fin, D, D, k, 1);
    n->mlp_edge_embed = wx_gc_mlp_param_count(4, D, D, k, 1);
    n->mlp_edge = wx_gc_mlp_param_count(3 * D, D, D, k, 1);
    n->mlp_node = wx_gc_mlp_param_count(2 * D, D, D, k, 1);
    n->mlp_orphan = wx_gc_mlp_param_count(D, D, D, k, 1);
    n->mlp_out = wx_gc_mlp_param_count(D, D, c->out_channels, k, 0);
    n->encoder = 2 * n->mlp_node_embed + n->mlp_edge_embed + n->mlp_edge + n->mlp_node +
                 n->mlp_orphan;
    n->processor = n->mlp_edge_embed + c->gnn_msg_steps * (n->mlp_edge + n->mlp_node);
    n->decoder = n->mlp_edge_embed + n->mlp_edge + n->mlp_node + n->mlp_orphan + n->mlp_out;
    n->total = n->encoder + n->processor + n->decoder;
}

void wx_gc_config_print(FILE *out, const wx_yaml *map, int indent) {
    wx_cfg_print(out, map, wx_gc_config_fields, indent);
}
