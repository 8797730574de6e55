#include <stdio.h>

#include "cli/wx_args.h"
#include "cli/wx_cli.h"
#include "io/archive.h"

int wx_cmd_verify(int argc, char **argv) {
    static const wx_arg_option opts[] = {{NULL, 0, NULL, NULL}};
    static const wx_arg_spec spec = {"verify", "ARCHIVE",
                                     "Reads every record and checks every checksum; exit 1 at the "
                                     "first damaged record, which the message names.",
                                     opts, 1, 1};
    wx_args a;
    int rc = wx_args_parse(&spec, argc, argv, &a);
    if (rc != WX_ARGS_CONTINUE) return rc;
    int64_t n = 0;
    wx_status st = wx_archive_verify(a.positionals[0], &n);
    if (st != WX_OK) {
        fprintf(stderr, "wxcast: error: %s (after %lld good records)\n", wx_error_message(),
                (long long)n);
        return WX_ERR_RUN;
    }
    printf("OK: %s: %lld records, all checksums match\n", a.positionals[0], (long long)n);
    return 0;
}
