#include "json.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void json_init(json_t *j) { memset(j, 0, sizeof *j); }
void json_free(json_t *j) {
    free(j->data);
    memset(j, 0, sizeof *j);
}

static void put(json_t *j, const char *s, size_t n) {
    if (j->oom) return;
    if (j->len + n + 1 > j->cap) {
        size_t cap = j->cap ? j->cap : 1024;
        while (cap < j->len + n + 1) cap *= 2;
        char *p = realloc(j->data, cap);
        if (!p) {
            j->oom = true;
            return;
        }
        j->data = p;
        j->cap = cap;
    }
    memcpy(j->data + j->len, s, n);
    j->len += n;
    j->data[j->len] = 0;
}

static void puts_(json_t *j, const char *s) { put(j, s, strlen(s)); }

void json_escape(json_t *j, const char *s) {
    put(j, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        switch (*p) {
        case '"': puts_(j, "\\\""); break;
        case '\\': puts_(j, "\\\\"); break;
        case '\n': puts_(j, "\\n"); break;
        case '\r': puts_(j, "\\r"); break;
        case '\t': puts_(j, "\\t"); break;
        default:
            if (*p < 0x20 || *p == 0x7f) {
                snprintf(esc, sizeof esc, "\\u%04x", *p);
                puts_(j, esc);
            } else if (*p >= 0x80) {
                /* keep the line valid UTF-8 whatever a library put in a message */
                put(j, "?", 1);
            } else {
                put(j, (const char *)p, 1);
            }
        }
    }
    put(j, "\"", 1);
}

static void prefix(json_t *j, const char *key) {
    if (j->need_comma) put(j, ",", 1);
    if (key) {
        json_escape(j, key);
        put(j, ":", 1);
    }
    j->need_comma = true;
}

void json_open(json_t *j) {
    prefix(j, NULL);
    put(j, "{", 1);
    j->need_comma = false;
}
void json_close(json_t *j) {
    put(j, "}", 1);
    j->need_comma = true;
}
void json_key(json_t *j, const char *key) {
    prefix(j, key);
    j->need_comma = false;
}
void json_open_obj(json_t *j, const char *key) {
    prefix(j, key);
    put(j, "{", 1);
    j->need_comma = false;
}
void json_open_arr(json_t *j, const char *key) {
    prefix(j, key);
    put(j, "[", 1);
    j->need_comma = false;
}
void json_close_arr(json_t *j) {
    put(j, "]", 1);
    j->need_comma = true;
}
void json_str(json_t *j, const char *key, const char *value) {
    prefix(j, key);
    json_escape(j, value);
}
void json_counter(json_t *j, const char *key, uint64_t value) {
    char s[32];
    snprintf(s, sizeof s, "\"%" PRIu64 "\"", value);
    prefix(j, key);
    puts_(j, s);
}
void json_int(json_t *j, const char *key, int64_t value) {
    char s[32];
    snprintf(s, sizeof s, "%" PRId64, value);
    prefix(j, key);
    puts_(j, s);
}
void json_raw(json_t *j, const char *key, const char *raw) {
    prefix(j, key);
    puts_(j, raw);
}
void json_bool(json_t *j, const char *key, bool value) {
    prefix(j, key);
    puts_(j, value ? "true" : "false");
}
const char *json_text(const json_t *j) { return j->data ? j->data : ""; }
