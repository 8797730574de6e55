/* wxcast info: what this binary is (version, build, the libraries it runs with, devices, ops),
 * and with --model a model config checked against its schema, with its parameter count. */
#include <eccodes.h>
#include <fftw3.h>
#include <netcdf.h>
#include <omp.h>
#include <png.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>
#include <zlib.h>

#include <cblas.h>

#include "backend/wx_backend.h"
#include "cli/wx_args.h"
#include "cli/wx_cli.h"
#include "core/wx_json.h"
#include "models/fourcastnet_config.h"
#include "models/graphcast_config.h"
#include "train/model_config_file.h"
#include "wx_build_config.h"
#if WX_HAVE_MPI
#include <mpi.h>
#endif
#include "backend/wx_cuda_api.h"

typedef struct {
    char eccodes[32], netcdf[128], mpi[256], cuda_devices[1024];
    const char *fftw, *openblas, *yaml, *png, *zlib;
    int openblas_threads, omp_threads, cuda_runtime, cuda_driver, cuda_count;
} lib_info;

#if WX_HAVE_MPI
static void first_line(char *s) {
    char *nl = strchr(s, '\n');
    if (nl) *nl = 0;
}
#endif

static void lib_info_get(lib_info *li) {
    memset(li, 0, sizeof *li);
    long v = codes_get_api_version();
    snprintf(li->eccodes, sizeof li->eccodes, "%ld.%ld.%ld", v / 10000, v / 100 % 100, v % 100);
    /* nc_inq_libvers() says "4.9.0 of Aug  7 2022 23:41:41 $": keep the words before the '$'. */
    snprintf(li->netcdf, sizeof li->netcdf, "%s", nc_inq_libvers());
    char *dollar = strchr(li->netcdf, '$');
    if (dollar) *dollar = 0;
    for (size_t n = strlen(li->netcdf); n && li->netcdf[n - 1] == ' ';) li->netcdf[--n] = 0;
    li->fftw = fftwf_version;
    li->openblas = openblas_get_config();
    li->openblas_threads = openblas_get_num_threads();
    li->yaml = yaml_get_version_string();
    li->png = png_get_libpng_ver(NULL);
    li->zlib = zlibVersion();
    li->omp_threads = omp_get_max_threads();
#if WX_HAVE_MPI
    int len = 0;
    /* Allowed before MPI_Init (MPI-3.0 §8.1.1). */
    if (MPI_Get_library_version(li->mpi, &len) != MPI_SUCCESS) snprintf(li->mpi, sizeof li->mpi, "?");
    first_line(li->mpi);
#endif
#if WX_HAVE_CUDA
    /* The only command that loads the CUDA module without being asked for a device: it reports it. */
    const wx_cuda_api *cuda = wx_cuda();
    if (!cuda) {
        snprintf(li->cuda_devices, sizeof li->cuda_devices, "%s", wx_error_message());
        return;
    }
    cuda->versions(&li->cuda_runtime, &li->cuda_driver);
    li->cuda_count = cuda->device_report(li->cuda_devices, sizeof li->cuda_devices);
    /* Trailing newline off; inner newlines stay (one line per device). */
    size_t n = strlen(li->cuda_devices);
    while (n && li->cuda_devices[n - 1] == '\n') li->cuda_devices[--n] = 0;
#endif
}

static void cuda_version_str(char *buf, size_t len, int v) {
    if (v > 0)
        snprintf(buf, len, "%d.%d", v / 1000, v % 1000 / 10);
    else
        snprintf(buf, len, "none");
}

static void print_text(const lib_info *li) {
    printf("wxcast %s (%s build, %s)\n", WX_VERSION, WX_BUILD_TYPE, WX_C_COMPILER);
    printf("build: MPI %s, CUDA %s", WX_HAVE_MPI ? "yes" : "no", WX_HAVE_CUDA ? "yes" : "no");
    if (WX_HAVE_CUDA) printf(" (architectures %s)", WX_CUDA_ARCHS);
    printf("\nlibraries:\n");
    printf("  eccodes   %s (built with %s)\n", li->eccodes, ECCODES_VERSION_STR);
    printf("  netCDF    %s\n", li->netcdf);
    printf("  FFTW      %s\n", li->fftw);
    printf("  OpenBLAS  %s, %d threads\n", li->openblas, li->openblas_threads);
    printf("  libyaml   %s\n", li->yaml);
    printf("  libpng    %s\n", li->png);
    printf("  zlib      %s\n", li->zlib);
    if (WX_HAVE_MPI) printf("  MPI       %s\n", li->mpi);
    if (WX_HAVE_CUDA) {
        char rt[16], drv[16];
        cuda_version_str(rt, sizeof rt, li->cuda_runtime);
        cuda_version_str(drv, sizeof drv, li->cuda_driver);
        printf("  CUDA      runtime %s, driver %s\n", rt, drv);
        printf("devices:\n  %s\n", li->cuda_devices);
    }
    printf("OpenMP threads: %d\n", li->omp_threads);
    printf("ops:");
    int n = 0;
    for (const char *const *op = wx_op_names; *op; op++, n++) printf("%s%s", n % 8 ? " " : "\n  ", *op);
    printf("\n");
}

static void print_json_libs(wx_json *j, const lib_info *li) {
    wx_json_kv_string(j, "version", WX_VERSION);
    wx_json_kv_string(j, "build_type", WX_BUILD_TYPE);
    wx_json_kv_string(j, "compiler", WX_C_COMPILER);
    wx_json_kv_bool(j, "mpi", WX_HAVE_MPI);
    wx_json_kv_bool(j, "cuda", WX_HAVE_CUDA);
    wx_json_key(j, "libraries");
    wx_json_object_begin(j);
    wx_json_kv_string(j, "eccodes", li->eccodes);
    wx_json_kv_string(j, "eccodes_built", ECCODES_VERSION_STR);
    wx_json_kv_string(j, "netcdf", li->netcdf);
    wx_json_kv_string(j, "fftw", li->fftw);
    wx_json_kv_string(j, "openblas", li->openblas);
    wx_json_kv_int(j, "openblas_threads", li->openblas_threads);
    wx_json_kv_string(j, "libyaml", li->yaml);
    wx_json_kv_string(j, "libpng", li->png);
    wx_json_kv_string(j, "zlib", li->zlib);
    if (WX_HAVE_MPI) wx_json_kv_string(j, "mpi", li->mpi);
    wx_json_object_end(j);
    if (WX_HAVE_CUDA) {
        wx_json_key(j, "cuda_info");
        wx_json_object_begin(j);
        wx_json_kv_string(j, "architectures", WX_CUDA_ARCHS);
        wx_json_kv_int(j, "runtime_version", li->cuda_runtime);
        wx_json_kv_int(j, "driver_version", li->cuda_driver);
        wx_json_kv_int(j, "device_count", li->cuda_count);
        wx_json_kv_string(j, "devices", li->cuda_devices);
        wx_json_object_end(j);
    }
    wx_json_kv_int(j, "openmp_threads", li->omp_threads);
    wx_json_key(j, "ops");
    wx_json_array_begin(j);
    for (const char *const *op = wx_op_names; *op; op++) wx_json_string(j, *op);
    wx_json_array_end(j);
}

/* "74691840" -> "74,691,840" */
static void thousands(char *buf, size_t len, int64_t v) {
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%lld", (long long)v), o = 0;
    for (int i = 0; i < n && (size_t)o + 2 < len; i++) {
        if (i && digits[i - 1] != '-' && (n - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = 0;
}

/* type: graphcast — GraphCast schema and count (models/graphcast_config.h). */
static int info_graphcast(const char *path, wx_yaml *root, int json, int print_config) {
    wx_gc_config cfg;
    wx_status s = wx_gc_config_parse(root, "", &cfg);
    if (s) {
        wx_yaml_free(root);
        return wx_cli_error(s);
    }
    wx_gc_param_counts n;
    wx_gc_param_count(&cfg, &n);
    char total[40];
    thousands(total, sizeof total, n.total);
    if (print_config) {
        printf("# effective model config of %s (defaults filled in)\n", path);
        printf("# parameters: %s\n", total);
        wx_gc_config_print(stdout, root, 0);
    } else if (json) {
        wx_json j;
        wx_json_init(&j, stdout);
        wx_json_object_begin(&j);
        wx_json_kv_string(&j, "config", path);
        wx_json_kv_string(&j, "type", "graphcast");
        wx_json_kv_int(&j, "parameters", n.total);
        wx_json_key(&j, "breakdown");
        wx_json_object_begin(&j);
        wx_json_kv_int(&j, "encoder", n.encoder);
        wx_json_kv_int(&j, "processor", n.processor);
        wx_json_kv_int(&j, "decoder", n.decoder);
        wx_json_object_end(&j);
        wx_json_kv_int(&j, "in_channels", cfg.in_channels);
        wx_json_kv_int(&j, "out_channels", cfg.out_channels);
        wx_json_object_end(&j);
        printf("\n");
    } else {
        printf("model %s: graphcast, %gx%g deg grid (%lldx%lld), mesh %lld..%lld, latent %lld, "
               "%lld processor steps, %lld -> %lld channels (+3 structural)\n",
               path, cfg.resolution, cfg.resolution, (long long)cfg.nlat, (long long)cfg.nlon,
               (long long)cfg.mesh_min_level, (long long)cfg.mesh_max_level,
               (long long)cfg.latent_size, (long long)cfg.gnn_msg_steps,
               (long long)cfg.in_channels, (long long)cfg.out_channels);
        printf("parameters: %s\n", total);
        printf("  encoder    %lld\n  processor  %lld\n  decoder    %lld\n", (long long)n.encoder,
               (long long)n.processor, (long long)n.decoder);
    }
    wx_yaml_free(root);
    return 0;
}

static int info_model(const char *path, int json, int print_config) {
    wx_yaml *root = NULL;
    wx_status s = wx_model_config_load(path, &root);
    if (s) return wx_cli_error(s);
    const wx_yaml *type = root && root->kind == WX_YAML_MAP ? wx_yaml_get(root, "type") : NULL;
    if (type && type->kind == WX_YAML_SCALAR && strcmp(type->scalar, "graphcast") == 0)
        return info_graphcast(path, root, json, print_config);
    if (type && type->kind == WX_YAML_SCALAR && strcmp(type->scalar, "fourcastnet") != 0) {
        /* neither family: say both, not the FourCastNet schema's one choice */
        s = wx_error_set(WX_ERR_USAGE, "%s: line %d: key 'type': expected fourcastnet or graphcast, "
                         "got '%s'", path, type->line, type->scalar);
        wx_yaml_free(root);
        return wx_cli_error(s);
    }
    wx_fcn_config cfg;
    s = wx_fcn_config_parse(root, "", &cfg);
    if (s) {
        wx_yaml_free(root);
        return wx_cli_error(s);
    }
    wx_fcn_param_counts n;
    wx_fcn_param_count(&cfg, &n);
    char total[40];
    thousands(total, sizeof total, n.total);
    if (print_config) {
        /* Valid YAML: re-reading it gives the same model (tested by cli_basics). */
        printf("# effective model config of %s (defaults filled in)\n", path);
        printf("# parameters: %s\n", total);
        wx_fcn_config_print(stdout, root, 0);
    } else if (json) {
        wx_json j;
        wx_json_init(&j, stdout);
        wx_json_object_begin(&j);
        wx_json_kv_string(&j, "config", path);
        wx_json_kv_string(&j, "type", "fourcastnet");
        wx_json_kv_int(&j, "parameters", n.total);
        wx_json_key(&j, "breakdown");
        wx_json_object_begin(&j);
        wx_json_kv_int(&j, "pos_embed", n.pos_embed);
        wx_json_kv_int(&j, "patch_embed", n.patch_embed);
        wx_json_kv_int(&j, "per_block", n.per_block);
        wx_json_kv_int(&j, "blocks", n.blocks);
        wx_json_kv_int(&j, "norm", n.norm);
        wx_json_kv_int(&j, "head", n.head);
        wx_json_object_end(&j);
        wx_json_kv_int(&j, "tokens", cfg.h_tokens * cfg.w_tokens);
        wx_json_object_end(&j);
        printf("\n");
    } else {
        printf("model %s: fourcastnet, %lldx%lld grid, patch %lld (%lldx%lld tokens), %lld -> %lld "
               "channels, embed_dim %lld, depth %lld, %lld blocks of %lld\n",
               path, (long long)cfg.img_h, (long long)cfg.img_w, (long long)cfg.patch,
               (long long)cfg.h_tokens, (long long)cfg.w_tokens, (long long)cfg.in_channels,
               (long long)cfg.out_channels, (long long)cfg.embed_dim, (long long)cfg.depth,
               (long long)cfg.num_blocks, (long long)cfg.block_size);
        printf("parameters: %s\n", total);
        printf("  pos_embed    %lld\n  patch_embed  %lld\n  blocks       %lld (%lld x %lld: norms %lld, "
               "filter %lld, mlp %lld)\n  norm         %lld%s\n  head         %lld\n",
               (long long)n.pos_embed, (long long)n.patch_embed, (long long)n.blocks,
               (long long)cfg.depth, (long long)n.per_block, (long long)n.block_norms,
               (long long)n.block_filter, (long long)n.block_mlp, (long long)n.norm,
               cfg.count_unused_norm ? " (built but unused, as NVlabs)" : "", (long long)n.head);
    }
    wx_yaml_free(root);
    return 0;
}

int wx_cmd_info(int argc, char **argv) {
    static const wx_arg_option opts[] = {
        {"json", 0, "print everything as one JSON object", NULL},
        {"model", 1, "load and check a model config; print its parameter count", "CONFIG.yaml"},
        {"print-config", 0, "with --model: print the effective config (defaults filled in)", NULL},
        {NULL, 0, NULL, NULL},
    };
    static const wx_arg_spec spec = {
        "info", "[--json] [--model CONFIG.yaml [--print-config]]",
        "Shows the version, build options, the versions of the libraries in use (read from the\n"
        "libraries at run time), CUDA devices, OpenMP threads and the op list. With --model,\n"
        "validates a model config against its schema and prints its parameter count.",
        opts, 0, 0};
    wx_args a;
    int rc = wx_args_parse(&spec, argc, argv, &a);
    if (rc != WX_ARGS_CONTINUE) return rc;
    const char *model = wx_args_get(&a, "model");
    int json = wx_args_flag(&a, "json"), print_config = wx_args_flag(&a, "print-config");
    if (print_config && !model)
        return wx_cli_error(wx_error_set(WX_ERR_USAGE, "info: --print-config needs --model"));
    if (print_config && json)
        return wx_cli_error(wx_error_set(WX_ERR_USAGE, "info: --print-config prints YAML; "
                                         "it cannot be combined with --json"));
    if (model) return info_model(model, json, print_config);

    lib_info li;
    lib_info_get(&li);
    if (json) {
        wx_json j;
        wx_json_init(&j, stdout);
        wx_json_object_begin(&j);
        print_json_libs(&j, &li);
        wx_json_object_end(&j);
        printf("\n");
    } else {
        print_text(&li);
    }
    if (fflush(stdout) != 0) return wx_cli_error(wx_error_set(WX_ERR_RUN, "info: cannot write output"));
    return 0;
}
