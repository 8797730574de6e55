#include "cli/wx_args.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wx_log.h"
#include "ops/wx_ctx.h"

int wx_cli_error(wx_status s) {
    fprintf(stderr, "wxcast: error: %s\n", wx_error_message());
    return s == WX_OK ? WX_ERR_RUN : (int)s;
}

int wx_args_global(const char *arg) {
    if (!strcmp(arg, "--quiet") || !strcmp(arg, "-q")) {
        wx_log_set_level(WX_LOG_WARN);
        return 1;
    }
    if (!strcmp(arg, "--verbose") || !strcmp(arg, "-v")) {
        wx_log_set_level(WX_LOG_DEBUG);
        return 1;
    }
    return 0;
}

static int usage_error(const wx_arg_spec *spec, const char *fmt, const char *arg) {
    char msg[512];
    snprintf(msg, sizeof msg, fmt, arg);
    fprintf(stderr, "wxcast: error: %s: %s (see 'wxcast %s --help')\n", spec->cmd, msg, spec->cmd);
    return WX_ERR_USAGE;
}

void wx_args_print_help(const wx_arg_spec *spec) {
    printf("usage: wxcast %s %s\n", spec->cmd, spec->usage ? spec->usage : "[options]");
    if (spec->about) printf("\n%s\n", spec->about);
    printf("\noptions:\n");
    for (const wx_arg_option *o = spec->options; o && o->name; o++) {
        char left[96];
        if (o->has_value)
            snprintf(left, sizeof left, "--%s %s", o->name, o->value_name ? o->value_name : "VALUE");
        else
            snprintf(left, sizeof left, "--%s", o->name);
        if (strlen(left) > 26)
            printf("  %s\n  %-26s %s\n", left, "", o->help ? o->help : "");
        else
            printf("  %-26s %s\n", left, o->help ? o->help : "");
    }
    printf("  %-26s %s\n", "-h, --help", "show this help");
    printf("\nglobal options: -q/--quiet (warnings and errors only), -v/--verbose (debug output)\n");
}

static int option_index(const wx_arg_spec *spec, const char *name, size_t len) {
    int i = 0;
    for (const wx_arg_option *o = spec->options; o && o->name; o++, i++)
        if (strlen(o->name) == len && !strncmp(o->name, name, len)) return i;
    return -1;
}

int wx_args_parse(const wx_arg_spec *spec, int argc, char **argv, wx_args *out) {
    memset(out, 0, sizeof *out);
    out->spec = spec;
    int nopt = 0;
    while (spec->options && spec->options[nopt].name) nopt++;
    WX_ASSERT(nopt <= WX_ARGS_MAX_OPTIONS);
    int only_positionals = 0;
    for (int i = 1; i < argc; i++) {
        char *arg = argv[i];
        if (!only_positionals && !strcmp(arg, "--")) {
            only_positionals = 1;
            continue;
        }
        if (!only_positionals && (!strcmp(arg, "--help") || !strcmp(arg, "-h"))) {
            wx_args_print_help(spec);
            return 0;
        }
        if (!only_positionals && arg[0] == '-' && arg[1] == '-') {
            const char *name = arg + 2, *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            int k = option_index(spec, name, len);
            if (k < 0) {
                if (!eq && wx_args_global(arg)) continue;
                char shown[256];
                snprintf(shown, sizeof shown, "--%.*s", (int)(len < 200 ? len : 200), name);
                return usage_error(spec, "unknown option '%s'", shown);
            }
            const wx_arg_option *o = &spec->options[k];
            /* a second value would silently replace the first (--init A --init B ran from B) */
            if (o->has_value && out->values[k]) {
                char shown[300];
                snprintf(shown, sizeof shown, "--%s", o->name);
                return usage_error(spec, "option '%s' given twice: give it once (options that take "
                                   "several values take a comma-separated list)", shown);
            }
            if (!o->has_value) {
                if (eq) return usage_error(spec, "option '%s' takes no value", arg);
                out->values[k] = "";
            } else if (eq) {
                out->values[k] = eq + 1;
            } else {
                char shown[128];
                snprintf(shown, sizeof shown, "--%s", o->name);
                if (i + 1 >= argc) return usage_error(spec, "option '%s' needs a value", shown);
                /* `--metrics --zero1` made a file named --zero1; a value that is itself one of
                 * this command's options is a forgotten value (`--name=--x` still passes one) */
                const char *next = argv[i + 1];
                if (!strcmp(next, "-q") || !strcmp(next, "-v") || !strcmp(next, "-h")) {
                    char both[400];
                    snprintf(both, sizeof both, "%.80s' needs a value, got the option '%s' "
                             "(write %.80s=%s to give that value", shown, next, shown, next);
                    return usage_error(spec, "option '%s)", both);
                }
                if (next[0] == '-' && next[1] == '-') {
                    const char *nn = next + 2, *ne = strchr(nn, '=');
                    if (option_index(spec, nn, ne ? (size_t)(ne - nn) : strlen(nn)) >= 0 ||
                        !strcmp(next, "--help") || wx_args_global(next))
                    {
                        char both[400];
                        snprintf(both, sizeof both, "%.80s' needs a value, got the option '%.60s' "
                                 "(write %.80s=%.60s to give that value", shown, next, shown, next);
                        return usage_error(spec, "option '%s)", both);
                    }
                }
                out->values[k] = argv[++i];
            }
            continue;
        }
        if (!only_positionals && arg[0] == '-' && arg[1]) {
            if (wx_args_global(arg)) continue;
            return usage_error(spec, "unknown option '%s'", arg);
        }
        if (spec->max_positionals >= 0 && out->npositionals >= spec->max_positionals)
            return usage_error(spec, "unexpected argument '%s'", arg);
        if (out->npositionals >= WX_ARGS_MAX_POSITIONALS)
            return usage_error(spec, "too many arguments (at '%s')", arg);
        out->positionals[out->npositionals++] = arg;
    }
    if (out->npositionals < spec->min_positionals)
        return usage_error(spec, "missing argument (usage: %s)", spec->usage ? spec->usage : "");
    return WX_ARGS_CONTINUE;
}

static int checked_index(const wx_args *a, const char *name) {
    int k = option_index(a->spec, name, strlen(name));
    WX_ASSERT(k >= 0); /* asking for an option the table does not declare is a programmer error */
    return k;
}

const char *wx_args_get(const wx_args *a, const char *name) { return a->values[checked_index(a, name)]; }

int wx_args_flag(const wx_args *a, const char *name) { return a->values[checked_index(a, name)] != NULL; }

wx_status wx_args_int(const wx_args *a, const char *name, int64_t def, int64_t *out) {
    const char *v = wx_args_get(a, name);
    if (!v) { *out = def; return WX_OK; }
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end)
        return wx_error_set(WX_ERR_USAGE, "%s: option '--%s': expected an integer, got '%s'",
                            a->spec->cmd, name, v);
    *out = x;
    return WX_OK;
}

wx_status wx_args_double(const wx_args *a, const char *name, double def, double *out) {
    const char *v = wx_args_get(a, name);
    if (!v) { *out = def; return WX_OK; }
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x))
        return wx_error_set(WX_ERR_USAGE, "%s: option '--%s': expected a number, got '%s'",
                            a->spec->cmd, name, v);
    *out = x;
    return WX_OK;
}

wx_status wx_args_threads(const wx_args *a, int *out) {
    int64_t n;
    *out = 0;
    WX_TRY(wx_args_int(a, "threads", 0, &n));
    if (n < 0 || n > WX_CTX_THREADS_MAX)
        return wx_error_set(WX_ERR_USAGE, "%s: option '--threads %s': expected 0..%d (0: the "
                            "default)", a->spec->cmd, wx_args_get(a, "threads"), WX_CTX_THREADS_MAX);
    *out = (int)n;
    return WX_OK;
}
