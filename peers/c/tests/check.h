/* A minimal test runner for ctest: CHECK records a failure and goes on; each test program
 * ends with the line "N passed, N failed" and exits non-zero on any failure. */
#ifndef RPCARENA_CHECK_H
#define RPCARENA_CHECK_H

#include <stdio.h>

static int checks_run, checks_failed;

#define CHECK(cond)                                                                         \
    do {                                                                                    \
        checks_run++;                                                                       \
        if (!(cond)) {                                                                      \
            checks_failed++;                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);        \
        }                                                                                   \
    } while (0)

#define RUN(test)                                                                           \
    do {                                                                                    \
        int before = checks_failed;                                                         \
        test();                                                                             \
        printf("%s %s\n", checks_failed == before ? "ok  " : "FAIL", #test);                \
    } while (0)

#define DONE()                                                                              \
    do {                                                                                    \
        printf("%d passed, %d failed\n", checks_run - checks_failed, checks_failed);       \
        return checks_failed ? 1 : 0;                                                       \
    } while (0)

#endif
