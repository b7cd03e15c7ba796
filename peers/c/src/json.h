/* A tiny JSON writer for events: one object per line, strings escaped, counters as decimal
 * strings (docs/peer-protocol.md "Rules that apply everywhere"). It never writes null. */
#ifndef RPCARENA_JSON_H
#define RPCARENA_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    char *data;
    size_t len, cap;
    bool need_comma;
    bool oom;
} json_t;

void json_init(json_t *j);
void json_free(json_t *j);
void json_open(json_t *j);            /* { */
void json_close(json_t *j);           /* } */
void json_key(json_t *j, const char *key);
void json_open_obj(json_t *j, const char *key);   /* "key":{  (key NULL: array element) */
void json_open_arr(json_t *j, const char *key);   /* "key":[ */
void json_close_arr(json_t *j);
void json_str(json_t *j, const char *key, const char *value);  /* key NULL: array element */
void json_counter(json_t *j, const char *key, uint64_t value); /* "key":"123" */
void json_int(json_t *j, const char *key, int64_t value);
void json_raw(json_t *j, const char *key, const char *raw);   /* a number or literal as is */
void json_bool(json_t *j, const char *key, bool value);
/* The line: data with no newline. */
const char *json_text(const json_t *j);

/* Appends s escaped as a JSON string (with quotes). */
void json_escape(json_t *j, const char *s);

#endif
