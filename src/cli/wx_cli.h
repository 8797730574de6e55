/* The subcommand table and the entry point shared by main.c and the tests. */
#ifndef WX_CLI_H
#define WX_CLI_H

typedef struct {
    const char *name;
    const char *summary;            /* one line for `wxcast --help` */
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand name; returns the exit code */
} wx_command;

/* NULL-terminated table of subcommands (src/cli/wx_cli.c). */
extern const wx_command wx_commands[];

/* Parses argv, dispatches, prints "wxcast: error: ..." for failures; returns the exit code. */
int wx_cli_main(int argc, char **argv);

int wx_cmd_info(int argc, char **argv);
int wx_cmd_ingest(int argc, char **argv);
int wx_cmd_synth(int argc, char **argv);
int wx_cmd_inspect(int argc, char **argv);
int wx_cmd_verify(int argc, char **argv);
int wx_cmd_dump(int argc, char **argv);
int wx_cmd_train(int argc, char **argv);
int wx_cmd_forecast(int argc, char **argv);
int wx_cmd_demo(int argc, char **argv);
int wx_cmd_export_weights(int argc, char **argv);
int wx_cmd_import_weights(int argc, char **argv);
int wx_cmd_mesh(int argc, char **argv);
int wx_cmd_eval(int argc, char **argv);
int wx_cmd_export(int argc, char **argv);
int wx_cmd_daily(int argc, char **argv);

#endif
