#include "cli/wx_cli.h"

#include <stdio.h>
#include <string.h>

#include "core/wx_error.h"
#include "wx_build_config.h"

const wx_command wx_commands[] = {
    {"info", "version, build options, library versions and devices", wx_cmd_info},
    {NULL, NULL, NULL},
};

static void usage(FILE *out) {
    fprintf(out, "usage: wxcast <command> [options]\n\ncommands:\n");
    for (const wx_command *c = wx_commands; c->name; c++) fprintf(out, "  %-10s %s\n", c->name, c->summary);
    fprintf(out, "\n'wxcast <command> --help' lists a command's options.\n");
}

int wx_cli_main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return WX_ERR_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("wxcast %s\n", WX_VERSION);
        return 0;
    }
    for (const wx_command *c = wx_commands; c->name; c++)
        if (!strcmp(c->name, argv[1])) return c->run(argc - 1, argv + 1);
    fprintf(stderr, "wxcast: error: unknown command '%s' (see 'wxcast --help')\n", argv[1]);
    return WX_ERR_USAGE;
}
