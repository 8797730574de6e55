/* A small declarative option parser for subcommands.
 *
 *   static const wx_arg_option opts[] = {
 *       {"model", 1, "model config to load and check", "CONFIG.yaml"},
 *       {"json", 0, "print one JSON object", NULL},
 *       {NULL, 0, NULL, NULL},
 *   };
 *   static const wx_arg_spec spec = {"info", "[options]", "Shows ...", opts, 0, 0};
 *   wx_args a;
 *   int rc = wx_args_parse(&spec, argc, argv, &a);
 *   if (rc != WX_ARGS_CONTINUE) return rc;   // --help printed (0) or usage error printed (2)
 *   const char *model = wx_args_get(&a, "model");
 *
 * Accepts `--opt value`, `--opt=value`, flags, positionals, `--` (only positionals after it),
 * `-h`/`--help`, and the global --quiet/--verbose anywhere (they set the log level).
 * Errors print one line: "wxcast: error: <cmd>: unknown option '--x' (see 'wxcast <cmd> --help')". */
#ifndef WX_ARGS_H
#define WX_ARGS_H

#include <stdint.h>

#include "core/wx_error.h"

#define WX_ARGS_MAX_OPTIONS 48
#define WX_ARGS_MAX_POSITIONALS 64
#define WX_ARGS_CONTINUE (-1)

typedef struct {
    const char *name;       /* long name without the dashes; NULL ends the table */
    int has_value;          /* 1: takes a value; 0: a flag */
    const char *help;       /* one line */
    const char *value_name; /* shown in usage ("CONFIG.yaml"); NULL: "VALUE" */
} wx_arg_option;

typedef struct {
    const char *cmd;     /* subcommand name */
    const char *usage;   /* after "usage: wxcast <cmd> ", e.g. "[options] ARCHIVE" */
    const char *about;   /* paragraph under the usage line; may be NULL */
    const wx_arg_option *options;
    int min_positionals; /* fewer is a usage error */
    int max_positionals; /* more is a usage error; -1 = any number */
} wx_arg_spec;

typedef struct {
    const wx_arg_spec *spec;
    const char *values[WX_ARGS_MAX_OPTIONS]; /* last value given, or "" for a flag; NULL absent */
    char *positionals[WX_ARGS_MAX_POSITIONALS];
    int npositionals;
} wx_args;

/* Returns WX_ARGS_CONTINUE to go on, else the exit code after printing help (0) or an error (2).
 * argv[0] is the subcommand name. */
int wx_args_parse(const wx_arg_spec *spec, int argc, char **argv, wx_args *out);

/* The option's value, or NULL when not given. The name must be in the table. */
const char *wx_args_get(const wx_args *a, const char *name);
int wx_args_flag(const wx_args *a, const char *name);
/* Typed values; `def` when absent. A malformed value is a usage error naming the option. */
wx_status wx_args_int(const wx_args *a, const char *name, int64_t def, int64_t *out);
wx_status wx_args_double(const wx_args *a, const char *name, double def, double *out);
/* --threads N of every command: 0 (also when absent: the command's default) to WX_CTX_THREADS_MAX
 * (ops/wx_ctx.h); anything else is a usage error naming the option and the bound. */
wx_status wx_args_threads(const wx_args *a, int *out);

/* Prints the usage text of a spec (what --help shows) to stdout. */
void wx_args_print_help(const wx_arg_spec *spec);

/* Prints "wxcast: error: <current message>" and returns the status as an exit code: the one
 * place where a subcommand turns a failure into output. */
int wx_cli_error(wx_status s);
/* Applies a global option (--quiet, --verbose, -q, -v); returns 1 if `arg` was one. */
int wx_args_global(const char *arg);

#endif
