/* wxcast: one binary, one small file per subcommand (src/cli/cmd_<name>.c). */
#include "cli/wx_cli.h"

int main(int argc, char **argv) { return wx_cli_main(argc, argv); }
