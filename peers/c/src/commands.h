/* The pure half of the control channel (docs/peer-protocol.md "Rules that apply everywhere",
 * "Lifecycle", "`window` (server, 1.2)", "`stopped`"): what a line on stdin is, and the event
 * lines that carry a server's counters. control.c does the I/O and the lifecycle around them. */
#ifndef RPCARENA_COMMANDS_H
#define RPCARENA_COMMANDS_H

#include <stdbool.h>
#include <stdint.h>

#include "json.h"

typedef enum {
    LINE_BLANK = 0, /* only whitespace: ignored */
    LINE_START,
    LINE_SHUTDOWN,
    LINE_WINDOW_START, /* 1.2, servers */
    LINE_WINDOW_END,   /* 1.2, servers */
    LINE_OTHER,
} line_kind;

/* Trims surrounding whitespace from `line` in place and classifies what is left; *trimmed
 * points at it. The two words of a window command are separated by exactly one space. */
line_kind classify_line(char *line, char **trimmed);

/* What a server has counted so far: the `counters` of its `window` and `stopped` events. */
typedef struct {
    uint64_t rpcs, requests, responses, rejected;
    uint64_t commands; /* 1.3: one-way commands received and validated (shape send) */
    uint64_t dropped;  /* 1.3, zmq: replies not queued at the client's high-water mark */
    bool has_dropped;  /* the stack counts `dropped` (zmq) */
    /* 1.3: the first call, command or frame rejected (or reply dropped), NULL while none */
    const char *first_rejection;
} server_counters;

/* Reads a server's counters at this moment (called from the stdin thread). */
typedef void (*counters_reader)(server_counters *out);

/* The `window` event answering `edge` (LINE_WINDOW_START or LINE_WINDOW_END) into a fresh j. */
void window_event(json_t *j, line_kind edge, const server_counters *c);

/* The `stopped` event into a fresh j, with `counters` when c is not NULL (servers). */
void stopped_event(json_t *j, const server_counters *c);

#endif
