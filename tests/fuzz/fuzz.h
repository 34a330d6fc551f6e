/*
 * fuzz.h - what the fuzz targets share. Each target defines LLVMFuzzerTestOneInput; built with
 * clang -fsanitize=fuzzer,address,undefined it is a libFuzzer binary (make fuzz), built with
 * the normal compiler and replay.c it replays the corpus and the crashes found (make test).
 *
 * Parsers that read a path get the input through a private temporary file, rewritten for each
 * input: the same code path a user's file takes.
 */
#ifndef DROVER_FUZZ_H
#define DROVER_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Writes data into this process's temporary file (name ends with suffix, e.g. ".yaml") and
 * returns its path; NULL when it cannot (the input is then skipped). */
const char *fuzz_file(const uint8_t *data, size_t size, const char *suffix);

/* A temporary directory of this process (made once), for targets that read several files. */
const char *fuzz_dir(void);

#endif
