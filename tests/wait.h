/*
 * wait.h - the tests' one way to wait for what another thread or process does: poll a condition
 * every WAIT_POLL_MS for at most WAIT_MAX_S seconds. The bound is for a loaded machine, not a
 * timing assertion: a condition met returns at once, and only one never met fails.
 */
#ifndef DROVER_TEST_WAIT_H
#define DROVER_TEST_WAIT_H

#include <stdbool.h>
#include <time.h>

#define WAIT_MAX_S 30
#define WAIT_POLL_MS 10

/* Polls cond(arg) until it holds or WAIT_MAX_S seconds pass; whether it held. */
static inline bool wait_until(bool (*cond)(void *arg), void *arg)
{
    struct timespec t = {0, WAIT_POLL_MS * 1000000L};
    for (int i = 0; i < WAIT_MAX_S * 1000 / WAIT_POLL_MS; i++) {
        if (cond(arg))
            return true;
        nanosleep(&t, NULL);
    }
    return cond(arg);
}

/* In a cmocka test: polls the expression cond the same way, failing the test when it never
 * holds (naming it). */
#define WAIT_FOR(cond)                                                                             \
    do {                                                                                           \
        struct timespec wait_t_ = {0, WAIT_POLL_MS * 1000000L};                                    \
        for (int wait_i_ = 0; !(cond) && wait_i_ < WAIT_MAX_S * 1000 / WAIT_POLL_MS; wait_i_++)    \
            nanosleep(&wait_t_, NULL);                                                             \
        if (!(cond))                                                                               \
            fail_msg("timed out waiting for %s", #cond);                                           \
    } while (0)

#endif
