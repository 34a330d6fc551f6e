/*
 * datadir.h - where drover finds its data (measured profiles, traces shipped with it) when it
 * is run from any working directory.
 */
#ifndef DROVER_CLI_DATADIR_H
#define DROVER_CLI_DATADIR_H

#include <stddef.h>

/*
 * Finds the data directory, first match wins:
 *   1. flag (--data-dir), when not NULL: must be a directory;
 *   2. $DROVER_DATA_DIR, when set and not empty: must be a directory;
 *   3. next to the binary: <bindir>/../data, then <bindir>/../share/drover/data (a relocated
 *      install), then the source tree's data/ when the binary is the one in its build directory;
 *   4. the installed data directory (<prefix>/share/drover/data, CMake's install prefix).
 * A candidate of 3 and 4 counts when it holds models.csv. Returns 0 with the directory in out
 * (cap bytes), or -1 with what went wrong and where it looked in why (whycap bytes).
 */
int data_dir_find(const char *flag, char *out, size_t cap, char *why, size_t whycap);

/*
 * Resolves a data file named on the command line: path itself when it exists; otherwise, for a
 * relative path, <data dir>/path, or <data dir>/rest when path is "data/rest" (so the names the
 * docs use work from any directory). Returns path or a pointer to buf (cap bytes).
 */
const char *data_path(const char *path, const char *data_dir, char *buf, size_t cap);

#endif
