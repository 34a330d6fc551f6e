/*
 * test_progress_py.c - drover run's progress collector reads what python/drover_progress.py
 * serves: a python3 child serves the module on a free loopback port, and the collector's own
 * scrape (ctrl_progress_fetch, what its thread does every period) reads it, before the first
 * report (no step: skipped), after report(step, loss), and with the metric names a job's
 * spec.progress gives. Skipped (77) when python3 is not on PATH.
 */
#include "ctrl_progress.h"

#include <setjmp.h> /* cmocka.h needs these first */
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The child: serves a Progress with the names given, prints its port, then runs each line it
 * reads on stdin as Python (p is the Progress) and answers "ok". */
static const char CHILD[] = "import sys\n"
                            "sys.path.insert(0, sys.argv[1] + '/python')\n"
                            "import drover_progress\n"
                            "p = drover_progress.Progress(*sys.argv[2:])\n"
                            "print(p.serve(0, host='127.0.0.1'), flush=True)\n"
                            "for line in sys.stdin:\n"
                            "    exec(line)\n"
                            "    print('ok', flush=True)\n";

typedef struct child {
    pid_t pid;
    FILE *in, *out; /* its stdin (we write), its stdout (we read) */
    int port;
} child;

/* Starts the child serving with metric names step and loss (NULL: the module's defaults). */
static void child_start(child *c, const char *step, const char *loss)
{
    int to[2], from[2];
    assert_int_equal(pipe(to), 0);
    assert_int_equal(pipe(from), 0);
    const char *src = getenv("DROVER_SOURCE_DIR");
    assert_non_null(src);
    c->pid = fork();
    assert_true(c->pid >= 0);
    if (c->pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[1]), close(from[0]);
        setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
        execlp("python3", "python3", "-c", CHILD, src, step, loss, (char *)NULL);
        _exit(127);
    }
    close(to[0]), close(from[1]);
    c->in = fdopen(to[1], "w");
    c->out = fdopen(from[0], "r");
    assert_true(c->in && c->out);
    assert_int_equal(fscanf(c->out, "%d", &c->port), 1);
    assert_true(c->port > 0);
}

/* Runs one line of Python in the child (p.report(...)) and waits for its "ok". */
static void child_do(child *c, const char *python)
{
    char ok[16] = "";
    fprintf(c->in, "%s\n", python);
    fflush(c->in);
    assert_int_equal(fscanf(c->out, "%15s", ok), 1);
    assert_string_equal(ok, "ok");
}

static void child_stop(child *c)
{
    fclose(c->in); /* its loop ends at end of input */
    fclose(c->out);
    int status;
    assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* One scrape of the child as the collector makes it; returns why it failed, or NULL. */
static const char *scrape(const child *c, const char *path, const char *step_name,
                          const char *loss_name, double *step, double *loss)
{
    scrape_target t = {.key = 1};
    snprintf(t.url, sizeof t.url, "http://127.0.0.1:%d%s", c->port, path);
    snprintf(t.step, sizeof t.step, "%s", step_name);
    snprintf(t.loss, sizeof t.loss, "%s", loss_name);
    CURL *h = curl_easy_init();
    assert_non_null(h);
    drv_kbuf b = {.max = 1u << 20};
    const char *why = ctrl_progress_fetch(h, &b, &t, step, loss);
    drv_free(b.p);
    curl_easy_cleanup(h);
    return why;
}

/* The defaults of spec.progress (path /metrics, drover_train_step, drover_train_loss). */
static void test_defaults(void **state)
{
    (void)state;
    child c;
    child_start(&c, NULL, NULL);
    double step, loss;
    const char *why =
        scrape(&c, "/metrics", "drover_train_step", "drover_train_loss", &step, &loss);
    assert_non_null(why); /* nothing reported yet: the round skips the job */
    assert_string_equal(why, "no step metric");
    child_do(&c, "p.report(1200, 0.75)");
    assert_null(scrape(&c, "/metrics", "drover_train_step", "drover_train_loss", &step, &loss));
    assert_true(step == 1200 && loss == 0.75);
    child_do(&c, "p.report(1300.0)"); /* the loss stays */
    assert_null(scrape(&c, "/metrics", "drover_train_step", "drover_train_loss", &step, &loss));
    assert_true(step == 1300 && loss == 0.75);
    child_do(&c, "p.report(1301, float('nan'))");
    assert_null(scrape(&c, "/metrics", "drover_train_step", "drover_train_loss", &step, &loss));
    assert_true(step == 1301 && isnan(loss));
    why = scrape(&c, "/other", "drover_train_step", "drover_train_loss", &step, &loss);
    assert_true(why && !strcmp(why, "not 200 OK"));
    child_stop(&c);
}

/* A job's own metric names (spec.progress.step and .loss). */
static void test_named_metrics(void **state)
{
    (void)state;
    child c;
    child_start(&c, "train_step", "train_loss");
    child_do(&c, "p.report(7, 2.5)");
    double step, loss;
    assert_null(scrape(&c, "/metrics", "train_step", "train_loss", &step, &loss));
    assert_true(step == 7 && loss == 2.5);
    const char *why =
        scrape(&c, "/metrics", "drover_train_step", "drover_train_loss", &step, &loss);
    assert_true(why && !strcmp(why, "no step metric"));
    child_stop(&c);
}

int main(void)
{
    if (system("command -v python3 >/dev/null 2>&1") != 0) {
        fprintf(stderr, "test_progress_py: no python3 on PATH: skipped\n");
        return 77;
    }
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_named_metrics),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
