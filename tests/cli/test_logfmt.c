/*
 * test_logfmt.c - the log lines of `drover run` and `drover emulate` (src/cli/logfmt.c): every
 * line starts with (text) or carries (json) an RFC 3339 timestamp; a JSON line parses back to
 * the message it was given, whatever characters the message holds.
 */
#include "logfmt.h"

#include "drover/base.h"
#include "drover/clock.h"

#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

/* The line cli_log_write writes for level and msg in format, read back from a file. */
static void one_line(const char *format, const char *level, const char *msg, char *out, size_t n)
{
    cli_log_setup(format, false, "run");
    FILE *f = tmpfile();
    assert_non_null(f);
    cli_log_write(f, level, msg);
    rewind(f);
    assert_non_null(fgets(out, (int)n, f));
    fclose(f);
    drv_log_set(NULL, NULL, DRV_LOG_WARN);
}

static void json_lines_parse_back(void **state)
{
    (void)state;
    const char *msg = "POST /x: 409 \"Conflict\"\\ tab\there\nnext line \x01 end";
    char line[1024];
    one_line("json", "warning", msg, line, sizeof line);
    assert_ptr_equal(strchr(line, '\n'), line + strlen(line) - 1); /* one line */
    json_error_t je;
    json_t *o = json_loads(line, 0, &je);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "msg")), msg);
    assert_string_equal(json_string_value(json_object_get(o, "level")), "warning");
    assert_string_equal(json_string_value(json_object_get(o, "component")), "run");
    double t;
    assert_int_equal(drv_time_parse_rfc3339(json_string_value(json_object_get(o, "ts")), &t), 0);
    assert_true(t > 1.7e9); /* after 2023: a wall-clock time, not a monotonic one */
    json_decref(o);
}

static void text_lines_start_with_the_time(void **state)
{
    (void)state;
    char line[1024];
    one_line("text", "info", "stopped after 3 cycles", line, sizeof line);
    char *sp = strchr(line, ' ');
    assert_non_null(sp);
    *sp = 0;
    double t;
    assert_int_equal(drv_time_parse_rfc3339(line, &t), 0);
    assert_string_equal(sp + 1, "info drover run: stopped after 3 cycles\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(json_lines_parse_back),
        cmocka_unit_test(text_lines_start_with_the_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
