/*
 * Whole-file reading (text, empty, larger than the first buffer, a NUL byte, a missing file,
 * failing allocations) and atomic replacement (commit, abort, failures leave the old file and
 * no temporary behind). Files live in a fresh directory under $TMPDIR or /tmp.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "drover/file.h"

static char dir[512];

static int make_dir(void **unused)
{
    (void)unused;
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/drover-test-file-XXXXXX", t && *t ? t : "/tmp");
    return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **unused)
{
    (void)unused;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void put(const char *name, const void *data, size_t n, char *path, size_t pn)
{
    snprintf(path, pn, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static bool exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static void test_read_text(void **unused)
{
    (void)unused;
    char path[600], *text = NULL;
    size_t len = 99;
    drv_diag d = {{0}};
    put("a.txt", "one\ntwo\n", 8, path, sizeof path);
    assert_int_equal(drv_file_read(path, &text, &len, &d), 0);
    assert_string_equal(text, "one\ntwo\n");
    assert_int_equal(len, 8);
    drv_free(text);
    put("empty.txt", "", 0, path, sizeof path);
    assert_int_equal(drv_file_read(path, &text, NULL, &d), 0);
    assert_string_equal(text, "");
    drv_free(text);
}

/* Sizes around the first buffer's edge (64 KiB less its NUL) and well past it. */
static void test_read_large(void **unused)
{
    (void)unused;
    static const size_t sizes[] = {65534, 65535, 65536, 200000};
    char *big = malloc(200000);
    assert_non_null(big);
    for (size_t i = 0; i < 200000; i++)
        big[i] = (char)('a' + i % 26);
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        char path[600], *text = NULL;
        size_t len = 0;
        put("big.txt", big, sizes[k], path, sizeof path);
        assert_int_equal(drv_file_read(path, &text, &len, NULL), 0);
        assert_int_equal(len, sizes[k]);
        assert_int_equal(strlen(text), sizes[k]);
        assert_memory_equal(text, big, sizes[k]);
        drv_free(text);
    }
    free(big);
}

static void test_read_refuses_nul(void **unused)
{
    (void)unused;
    char path[600], *text = (char *)"untouched";
    drv_diag d = {{0}};
    put("nul.txt", "jobs:\n\0rest", 11, path, sizeof path);
    assert_int_equal(drv_file_read(path, &text, NULL, &d), DRV_EPARSE);
    assert_string_equal(text, "untouched");
    assert_non_null(strstr(d.msg, "nul.txt: byte 6: a NUL byte"));
}

static void test_read_missing(void **unused)
{
    (void)unused;
    char path[600], *text = NULL;
    drv_diag d = {{0}};
    snprintf(path, sizeof path, "%s/missing.txt", dir);
    assert_int_equal(drv_file_read(path, &text, NULL, &d), DRV_EIO);
    assert_null(text);
    assert_non_null(strstr(d.msg, "missing.txt: cannot open: No such file"));
}

/* A limit per read: a file of exactly max bytes is read, one byte more is refused naming the
 * file and the limit; /dev/zero and a FIFO written forever end (they read forever before). */
static void test_read_bounded(void **unused)
{
    (void)unused;
    enum { MAX = 100000 };
    char *big = malloc(MAX + 1), path[600], *text = NULL;
    assert_non_null(big);
    memset(big, 'x', MAX + 1);
    put("max.txt", big, MAX, path, sizeof path);
    drv_diag d = {{0}};
    size_t len = 0;
    assert_int_equal(drv_file_read_max(path, MAX, "a test file", &text, &len, &d), 0);
    assert_int_equal(len, MAX);
    free(text);
    text = NULL;
    put("over.txt", big, MAX + 1, path, sizeof path);
    free(big);
    assert_int_equal(drv_file_read_max(path, MAX, "a test file", &text, &len, &d), DRV_ERANGE);
    assert_null(text);
    assert_non_null(
        strstr(d.msg, "over.txt: larger than 100000 bytes, the most a test file may be"));
    assert_int_equal(drv_file_read_max(path, 1 << 16, "a YAML file", &text, &len, &d), DRV_ERANGE);
    assert_non_null(strstr(d.msg, "larger than 64 KiB, the most a YAML file may be"));
    assert_int_equal(drv_file_read_max("/dev/zero", 1 << 30, "a YAML file", &text, &len, &d),
                     DRV_EPARSE);
    assert_string_equal(d.msg, "/dev/zero: byte 0: a NUL byte; expected text");
    /* an endless text: a FIFO a child writes lines into until the reader is gone */
    snprintf(path, sizeof path, "%s/fifo", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGPIPE, SIG_DFL);
        FILE *w = fopen(path, "w");
        while (w && fputs("nodes: []\n", w) >= 0)
            ;
        _exit(0);
    }
    assert_int_equal(drv_file_read_max(path, 1 << 20, "a YAML file", &text, &len, &d), DRV_ERANGE);
    assert_non_null(strstr(d.msg, "fifo: larger than 1 MiB, the most a YAML file may be"));
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    unlink(path);
}

/* Line by line: lines (blank ones too) numbered as an editor does, the limits of a line and of
 * the file, a NUL named by its line, and a second pass after rewinding. */
static void test_lines(void **unused)
{
    (void)unused;
    char path[600], *line;
    drv_diag d = {{0}};
    drv_lines r;
    put("l.csv", "a,b\r\n\nc\nlast", 12, path, sizeof path);
    assert_int_equal(drv_lines_open(&r, path, 100, "a test file", &d), 0);
    const char *want[] = {"a,b", "", "c", "last"};
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < 4; i++) {
            assert_int_equal(drv_lines_next(&r, &line, NULL, &d), 1);
            assert_string_equal(line, want[i]);
            assert_int_equal(r.line, i + 1);
        }
        assert_int_equal(drv_lines_next(&r, &line, NULL, &d), 0);
        assert_int_equal(drv_lines_rewind(&r, &d), 0);
    }
    drv_lines_close(&r);
    assert_int_equal(drv_lines_open(&r, path, 10, "a test file", &d), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(drv_lines_next(&r, &line, NULL, &d), 1);
    assert_int_equal(drv_lines_next(&r, &line, NULL, &d), DRV_ERANGE); /* byte 11 of 12 */
    assert_non_null(strstr(d.msg, "l.csv: larger than 10 bytes, the most a test file may be"));
    drv_lines_close(&r);
    put("nul.csv", "a\nb\0c\n", 6, path, sizeof path);
    assert_int_equal(drv_lines_open(&r, path, 100, "a test file", &d), 0);
    assert_int_equal(drv_lines_next(&r, &line, NULL, &d), 1);
    assert_int_equal(drv_lines_next(&r, &line, NULL, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "nul.csv:2: a NUL byte; expected text"));
    drv_lines_close(&r);
    assert_int_equal(drv_lines_open(&r, "/dev/zero", 1ULL << 40, "a test file", &d), 0);
    assert_int_equal(drv_lines_next(&r, &line, NULL, &d), DRV_EPARSE);
    drv_lines_close(&r);
    size_t n = DRV_MAX_LINE_BYTES + 1;
    char *big = malloc(n);
    assert_non_null(big);
    memset(big, 'y', n);
    put("long.csv", big, n, path, sizeof path);
    free(big);
    assert_int_equal(drv_lines_open(&r, path, 1ULL << 40, "a test file", &d), 0);
    assert_int_equal(drv_lines_next(&r, &line, NULL, &d), DRV_ERANGE);
    assert_non_null(strstr(d.msg, "long.csv:1: a line longer than 1048576 bytes"));
    drv_lines_close(&r);
    assert_int_equal(drv_lines_open(&r, "/nonexistent/x", 10, "a test file", &d), DRV_ENOENT);
    drv_lines_close(&r);
}

static void test_read_failing_allocations(void **unused)
{
    (void)unused;
    char *big = malloc(100000), path[600], *text = NULL;
    assert_non_null(big);
    memset(big, 'x', 100000);
    put("grow.txt", big, 100000, path, sizeof path);
    free(big);
    for (long nth = 1; nth <= 2; nth++) { /* the first buffer, then its doubling */
        drv_diag d = {{0}};
        drv_alloc_fail_at(nth);
        int rc = drv_file_read(path, &text, NULL, &d);
        drv_alloc_fail_at(0);
        assert_int_equal(rc, DRV_ENOMEM);
        assert_null(text);
        assert_non_null(strstr(d.msg, "out of memory"));
    }
}

static void test_atomic_write(void **unused)
{
    (void)unused;
    char path[600], tmp[600], *text = NULL;
    drv_diag d = {{0}};
    put("out.csv", "old\n", 4, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s/.out.csv.tmp", dir);
    drv_file_out o;
    assert_int_equal(drv_file_out_open(&o, path, &d), 0);
    fputs("new\n", o.f);
    assert_true(exists(tmp));
    assert_int_equal(drv_file_read(path, &text, NULL, &d), 0); /* not replaced before commit */
    assert_string_equal(text, "old\n");
    drv_free(text);
    assert_int_equal(drv_file_out_commit(&o, &d), 0);
    assert_false(exists(tmp));
    assert_int_equal(drv_file_read(path, &text, NULL, &d), 0);
    assert_string_equal(text, "new\n");
    drv_free(text);

    assert_int_equal(drv_file_out_open(&o, path, &d), 0); /* abort keeps the old contents */
    fputs("half", o.f);
    drv_file_out_abort(&o);
    drv_file_out_abort(&o); /* twice is harmless */
    assert_false(exists(tmp));
    assert_int_equal(drv_file_read(path, &text, NULL, &d), 0);
    assert_string_equal(text, "new\n");
    drv_free(text);

    assert_int_equal(drv_file_write_atomic(path, "third\n", 6, &d), 0);
    assert_int_equal(drv_file_read(path, &text, NULL, &d), 0);
    assert_string_equal(text, "third\n");
    drv_free(text);
}

static void test_atomic_write_failures(void **unused)
{
    (void)unused;
    char path[600], tmp[600];
    drv_diag d = {{0}};
    snprintf(path, sizeof path, "%s/no-such-dir/x.json", dir);
    assert_int_equal(drv_file_write_atomic(path, "{}", 2, &d), DRV_EIO);
    assert_non_null(strstr(d.msg, "no-such-dir/.x.json.tmp: cannot write: No such file"));
    /* renaming a file over a non-empty directory fails: the temporary goes, the target stays */
    snprintf(path, sizeof path, "%s/adir", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    char inner[700];
    snprintf(inner, sizeof inner, "%s/keep", path);
    FILE *f = fopen(inner, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(drv_file_write_atomic(path, "x", 1, &d), DRV_EIO);
    assert_non_null(strstr(d.msg, "adir: cannot rename into place: "));
    snprintf(tmp, sizeof tmp, "%s/.adir.tmp", dir);
    assert_false(exists(tmp));
    assert_true(exists(inner));
    char longp[5000];
    memset(longp, 'a', sizeof longp - 1);
    longp[sizeof longp - 1] = 0;
    assert_int_equal(drv_file_write_atomic(longp, "x", 1, &d), DRV_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_text),
        cmocka_unit_test(test_read_large),
        cmocka_unit_test(test_read_refuses_nul),
        cmocka_unit_test(test_read_missing),
        cmocka_unit_test(test_read_bounded),
        cmocka_unit_test(test_lines),
        cmocka_unit_test(test_read_failing_allocations),
        cmocka_unit_test(test_atomic_write),
        cmocka_unit_test(test_atomic_write_failures),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
