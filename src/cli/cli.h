/*
 * cli.h - what the drover command's source files share: exit statuses and sub-commands that
 * live in files of their own.
 */
#ifndef DROVER_CLI_H
#define DROVER_CLI_H

/* Exit status: 0 success; 1 the run failed; 2 bad usage or bad input (nothing was run). */
enum { EXIT_RUN = 1, EXIT_USAGE = 2 };

/* `drover run` (run.c). */
extern const char *const usage_run;
int cmd_run(int argc, char **argv);

#endif
