#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static const char *const CODE_NAMES[CODE_COUNT] = {
    "none", "config", "tls", "connect", "rpc", "invalid", "timeout", "protocol", "internal",
};

const char *code_name(fail_code code) {
    return (code > CODE_NONE && code < CODE_COUNT) ? CODE_NAMES[code] : "internal";
}

void fail_set(failure_t *f, fail_code code, const char *fmt, ...) {
    va_list ap;
    f->code = code;
    va_start(ap, fmt);
    vsnprintf(f->msg, sizeof f->msg, fmt, ap);
    va_end(ap);
    /* A message is one line of an event. */
    for (char *p = f->msg; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
}

void fail_clear(failure_t *f) {
    f->code = CODE_NONE;
    f->msg[0] = 0;
}

bool buf_reserve(buf_t *b, size_t extra) {
    if (b->len + extra <= b->cap) return true;
    if (b->off > 0 && b->len - b->off + extra <= b->cap) {
        buf_compact(b);
        return true;
    }
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra) cap *= 2;
    uint8_t *p = realloc(b->data, cap);
    if (!p) return false;
    b->data = p;
    b->cap = cap;
    return true;
}

bool buf_append(buf_t *b, const void *data, size_t n) {
    if (!buf_reserve(b, n)) return false;
    memcpy(b->data + b->len, data, n);
    b->len += n;
    return true;
}

void buf_compact(buf_t *b) {
    if (b->off == 0) return;
    memmove(b->data, b->data + b->off, b->len - b->off);
    b->len -= b->off;
    b->off = 0;
}

void buf_consume(buf_t *b, size_t n) {
    b->off += n;
    if (b->off >= b->len) b->off = b->len = 0;
}

void buf_free(buf_t *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

char *read_file(const char *path, size_t max, size_t *len_out, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 8192, len = 0;
    char *data = malloc(cap + 1);
    while (data) {
        size_t n = fread(data + len, 1, cap - len, f);
        len += n;
        if (n == 0) break;
        if (len == cap) {
            if (cap >= max) {
                snprintf(err, errlen, "%s is larger than %zu bytes", path, max);
                free(data);
                data = NULL;
                break;
            }
            cap *= 2;
            char *p = realloc(data, cap + 1);
            if (!p) {
                free(data);
                data = NULL;
                break;
            }
            data = p;
        }
    }
    if (data && ferror(f)) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        free(data);
        data = NULL;
    } else if (!data && err[0] == 0) {
        snprintf(err, errlen, "out of memory reading %s", path);
    }
    fclose(f);
    if (data) {
        data[len] = 0;
        if (len_out) *len_out = len;
    }
    return data;
}

void diag(const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "rpcarena-peer-c: %s\n", line);
}

static const uint8_t *zero_buffer;

const uint8_t *zeros(void) {
    /* An anonymous mapping reads as zeros and costs no memory until touched; it is only read. */
    const uint8_t *z = __atomic_load_n(&zero_buffer, __ATOMIC_ACQUIRE);
    if (z) return z;
    void *p = mmap(NULL, MAX_PAYLOAD, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        diag("cannot map %u zero bytes: %s", MAX_PAYLOAD, strerror(errno));
        abort();
    }
    const uint8_t *expected = NULL;
    if (!__atomic_compare_exchange_n(&zero_buffer, &expected, (const uint8_t *)p, false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        munmap(p, MAX_PAYLOAD);
        return expected;
    }
    return p;
}

bool all_zero(const uint8_t *p, size_t n) {
    /* word at a time; memcmp against the zero buffer would touch twice the memory */
    size_t i = 0;
    for (; i < n && ((uintptr_t)(p + i) & 7); i++)
        if (p[i]) return false;
    uint64_t acc = 0;
    for (; i + 64 <= n; i += 64) {
        const uint64_t *w = (const uint64_t *)(const void *)(p + i);
        acc |= w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7];
        if (acc) return false;
    }
    for (; i < n; i++)
        if (p[i]) return false;
    return true;
}

void cond_init_monotonic(pthread_cond_t *cv) {
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &attr);
    pthread_condattr_destroy(&attr);
}

int cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t deadline_ns) {
    struct timespec ts = {(time_t)(deadline_ns / NS_PER_SEC), (long)(deadline_ns % NS_PER_SEC)};
    return pthread_cond_timedwait(cv, mu, &ts);
}
