#include "commands.h"

#include <string.h>

static int is_space(char ch) { return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n'; }

line_kind classify_line(char *line, char **trimmed) {
    char *s = line;
    while (is_space(*s)) s++;
    char *e = s + strlen(s);
    while (e > s && is_space(e[-1])) e--;
    *e = 0;
    *trimmed = s;
    if (*s == 0) return LINE_BLANK;
    if (strcmp(s, "START") == 0) return LINE_START;
    if (strcmp(s, "SHUTDOWN") == 0) return LINE_SHUTDOWN;
    if (strcmp(s, "WINDOW START") == 0) return LINE_WINDOW_START;
    if (strcmp(s, "WINDOW END") == 0) return LINE_WINDOW_END;
    return LINE_OTHER;
}

static void event_head(json_t *j, const char *kind) {
    json_init(j);
    json_open(j);
    json_int(j, "protocol", 1);
    json_str(j, "event", kind);
}

static void counters_object(json_t *j, const server_counters *c) {
    json_open_obj(j, "counters");
    json_counter(j, "rpcs", c->rpcs);
    json_counter(j, "requests", c->requests);
    json_counter(j, "responses", c->responses);
    json_counter(j, "rejected", c->rejected);
    json_counter(j, "commands", c->commands);
    if (c->has_dropped) json_counter(j, "dropped", c->dropped);
    json_close(j);
    if (c->first_rejection && (c->rejected > 0 || c->dropped > 0))
        json_str(j, "first_rejection", c->first_rejection);
}

void window_event(json_t *j, line_kind edge, const server_counters *c) {
    event_head(j, "window");
    json_str(j, "edge", edge == LINE_WINDOW_START ? "start" : "end");
    counters_object(j, c);
    json_close(j);
}

void stopped_event(json_t *j, const server_counters *c) {
    event_head(j, "stopped");
    if (c) counters_object(j, c);
    json_close(j);
}
