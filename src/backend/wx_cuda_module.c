/* Loading the CUDA module (wx_cuda_api.h says why it is a module). */
#include "backend/wx_cuda_api.h"

#include "wx_build_config.h"

#if WX_HAVE_CUDA
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const wx_cuda_api *loaded;
static char load_error[1024];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Where to look, in order: *n paths into (3, PATH_MAX + 64), the first *explicit of them given by
 * the user (tried even when absent, so the loader's message names them). */
static void candidates(char paths[][PATH_MAX + 64], int *n, int *explicit) {
    *n = *explicit = 0;
    const char *env = getenv("WXCAST_CUDA_MODULE");
    if (env && *env) snprintf(paths[(*n)++], PATH_MAX + 64, "%s", env), *explicit = 1;
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return;
    exe[len] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash) return;
    *slash = 0;
    snprintf(paths[(*n)++], PATH_MAX + 64, "%s/%s", exe, WX_CUDA_MODULE_FILE);
    snprintf(paths[(*n)++], PATH_MAX + 64, "%s/../lib/%s", exe, WX_CUDA_MODULE_FILE);
}

static const wx_cuda_api *check_abi(const wx_cuda_api *api, const char *where) {
    if (api->abi == WX_CUDA_API_ABI) return api;
    snprintf(load_error, sizeof load_error, "%.900s: CUDA module of another wxcast build (interface %d, "
             "this program expects %d)", where, api->abi, WX_CUDA_API_ABI);
    return NULL;
}

static void load(void) {
    /* Linked in already (CUDA tests and benchmarks)? */
    const wx_cuda_api *api = dlsym(RTLD_DEFAULT, WX_CUDA_MODULE_SYMBOL);
    if (api) {
        loaded = check_abi(api, "linked-in module");
        return;
    }
    char paths[3][PATH_MAX + 64];
    int n, explicit;
    candidates(paths, &n, &explicit);
    size_t used = 0;
    load_error[0] = 0;
    for (int i = 0; i < n; i++) {
        if (i >= explicit && access(paths[i], F_OK) != 0) continue;
        void *h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) { /* a module that is there but does not load (missing libcublas...) says why */
            used += (size_t)snprintf(load_error + used, sizeof load_error - used, "%s%s",
                                     used ? "; " : "", dlerror());
            if (used >= sizeof load_error) used = sizeof load_error - 1;
            continue;
        }
        api = dlsym(h, WX_CUDA_MODULE_SYMBOL);
        if (api && (loaded = check_abi(api, paths[i]))) return;
        if (!api) snprintf(load_error, sizeof load_error, "%.900s: no symbol %s", paths[i], WX_CUDA_MODULE_SYMBOL);
        dlclose(h);
        return;
    }
    if (!load_error[0])
        snprintf(load_error, sizeof load_error, "%s is neither next to the program nor in ../lib from "
                 "it (%.800s; set WXCAST_CUDA_MODULE to its path)", WX_CUDA_MODULE_FILE,
                 n > explicit ? paths[explicit] : "the program's path is unknown");
}

const wx_cuda_api *wx_cuda(void) {
    pthread_once(&once, load);
    if (!loaded) wx_error_set(WX_ERR_RUN, "CUDA backend: cannot load its module: %s", load_error);
    return loaded;
}

#else

const wx_cuda_api *wx_cuda(void) {
    wx_error_set(WX_ERR_USAGE, "this wxcast was built without CUDA (configure with -DWX_CUDA=ON on a "
                 "machine with nvcc)");
    return NULL;
}

#endif
