/*
 * test_rbac_grants_used.c - the RBAC check's second direction (issue 26): every grant of
 * deploy/rbac.yaml and deploy/emulate-rbac.yaml is used by some request the end-to-end tests
 * made. Each of those tests keeps its server's request log in $DROVER_RBAC_LOG_DIR
 * (drv_rbac_keep_log); this runs after them (ctest fixture cleanup) and fails naming each grant
 * no request used: a grant nobody exercises is either dead or untested.
 *
 * Usage: test_rbac_grants_used LOG_DIR TEST... (the tests whose logs must all be there). When
 * one is missing (a subset of the suite ran, ctest -R) it says so and is skipped (77): the
 * union of a subset would name grants the rest use.
 */
#include "rbac_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drover/file.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s LOG_DIR TEST...\n", argv[0]);
        return 2;
    }
    const char *src = getenv("DROVER_SOURCE_DIR");
    char *all = NULL;
    size_t len = 0;
    for (int i = 2; i < argc; i++) {
        char path[1200], *text = NULL;
        size_t n = 0;
        drv_diag d = {{0}};
        snprintf(path, sizeof path, "%s/%s.log", argv[1], argv[i]);
        if (drv_file_read_max(path, (uint64_t)1 << 30, "a request log", &text, &n, &d) != 0) {
            printf("not judged: %s's requests were not logged (%s); run the whole suite\n", argv[i],
                   d.msg);
            free(all);
            return 77;
        }
        char *grown = realloc(all, len + n + 1);
        if (!grown) {
            drv_free(text);
            free(all);
            return 1;
        }
        all = grown;
        memcpy(all + len, text, n);
        len += n;
        all[len] = 0;
        drv_free(text);
    }
    drv_diag d = {{0}};
    char *unused = drv_rbac_unused(all ? all : "", src ? src : ".", &d);
    free(all);
    if (!unused) {
        printf("rbac check: %s\n", d.msg);
        return 1;
    }
    int rc = unused[0] ? 1 : 0;
    printf("%s%s\n", unused,
           rc ? "these grants of deploy/ were used by no request of the end-to-end tests: remove "
                "them, or test the code that needs them"
              : "every grant of deploy/ was used by the end-to-end tests");
    drv_free(unused);
    return rc;
}
