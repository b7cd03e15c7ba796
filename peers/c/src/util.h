/* Small helpers shared by every part of the peer: the monotonic clock, failures with the
 * protocol's error codes (docs/peer-protocol.md "Error codes"), and a growable byte buffer. */
#ifndef RPCARENA_UTIL_H
#define RPCARENA_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define NS_PER_SEC 1000000000ULL
#define NS_PER_MS 1000000ULL

/* Largest payload (16 MiB), largest message (payload + 1 KiB), stream limits. */
#define MAX_PAYLOAD (16u * 1024u * 1024u)
#define MAX_MESSAGE (MAX_PAYLOAD + 1024u)
#define MAX_MESSAGES 1000000u
#define MAX_CONCURRENCY 10000u
#define FLOW_WINDOW (16u * 1024u * 1024u)
#define MAX_CONCURRENT_STREAMS 10000u

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* The protocol's error codes, in the order of docs/peer-protocol.md. */
typedef enum {
    CODE_NONE = 0,
    CODE_CONFIG,
    CODE_TLS,
    CODE_CONNECT,
    CODE_RPC,
    CODE_INVALID,
    CODE_TIMEOUT,
    CODE_PROTOCOL,
    CODE_INTERNAL,
    CODE_COUNT
} fail_code;

const char *code_name(fail_code code);

/* A failure: its code and a one-line message. */
typedef struct {
    fail_code code;
    char msg[768];
} failure_t;

void fail_set(failure_t *f, fail_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void fail_clear(failure_t *f);

/* A growable byte buffer with a read offset (used by the native framing). */
typedef struct {
    uint8_t *data;
    size_t len; /* bytes held, from data[0] */
    size_t off; /* bytes already consumed */
    size_t cap;
} buf_t;

bool buf_reserve(buf_t *b, size_t extra); /* room for `extra` more bytes after len */
bool buf_append(buf_t *b, const void *data, size_t n);
void buf_consume(buf_t *b, size_t n); /* advance off; compacts when empty */
static inline size_t buf_avail(const buf_t *b) { return b->len - b->off; }
static inline const uint8_t *buf_head(const buf_t *b) { return b->data + b->off; }
void buf_compact(buf_t *b);
void buf_free(buf_t *b);

/* A condition variable whose timed waits take CLOCK_MONOTONIC deadlines (like now_ns). */
#include <pthread.h>
void cond_init_monotonic(pthread_cond_t *cv);
/* Waits until signalled or the monotonic deadline (ns); returns pthread_cond_timedwait's code. */
int cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t deadline_ns);

/* Reads a whole file (at most max bytes) into a NUL-terminated heap string. */
char *read_file(const char *path, size_t max, size_t *len_out, char *err, size_t errlen);

/* One "rpcarena-peer-c: ..." line on stderr. */
void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A read-only buffer of MAX_PAYLOAD zero bytes, allocated on first use. */
const uint8_t *zeros(void);
bool all_zero(const uint8_t *p, size_t n);

#endif
