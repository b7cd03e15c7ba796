/* The control channel's pure half: which line is which command (window commands are 1.2's), and
 * the `window` and `stopped` events a server prints with its counters. */
#include <stdlib.h>
#include <string.h>

#include "capabilities.h"
#include "check.h"
#include "commands.h"

static line_kind kind_of(const char *text, char *trimmed_out) {
    char line[128];
    snprintf(line, sizeof line, "%s", text);
    char *t;
    line_kind k = classify_line(line, &t);
    snprintf(trimmed_out, 128, "%s", t);
    return k;
}

static void lines_are_classified_after_trimming(void) {
    char t[128];
    CHECK(kind_of("START\n", t) == LINE_START && strcmp(t, "START") == 0);
    CHECK(kind_of(" \tSHUTDOWN \r\n", t) == LINE_SHUTDOWN);
    CHECK(kind_of("WINDOW START\n", t) == LINE_WINDOW_START && strcmp(t, "WINDOW START") == 0);
    CHECK(kind_of("  WINDOW END\r\n", t) == LINE_WINDOW_END && strcmp(t, "WINDOW END") == 0);
    CHECK(kind_of("\r\n", t) == LINE_BLANK);
    CHECK(kind_of("", t) == LINE_BLANK);
}

static void near_misses_are_other_lines(void) {
    char t[128];
    /* one space between the words, upper case, nothing else on the line */
    CHECK(kind_of("WINDOW  START\n", t) == LINE_OTHER && strcmp(t, "WINDOW  START") == 0);
    CHECK(kind_of("WINDOW\tEND", t) == LINE_OTHER);
    CHECK(kind_of("window start", t) == LINE_OTHER);
    CHECK(kind_of("WINDOW", t) == LINE_OTHER);
    CHECK(kind_of("WINDOW STARTED", t) == LINE_OTHER);
    CHECK(kind_of("WINDOW START END", t) == LINE_OTHER);
    CHECK(kind_of("START NOW", t) == LINE_OTHER);
}

static void window_events_carry_the_edge_and_the_counters(void) {
    server_counters c = {1285, 1286, 1287, 18446744073709551615ULL};
    json_t j;
    window_event(&j, LINE_WINDOW_START, &c);
    CHECK(strcmp(json_text(&j),
                 "{\"protocol\":1,\"event\":\"window\",\"edge\":\"start\",\"counters\":{\"rpcs\":"
                 "\"1285\",\"requests\":\"1286\",\"responses\":\"1287\",\"rejected\":"
                 "\"18446744073709551615\"}}") == 0);
    json_free(&j);
    server_counters zero = {0};
    window_event(&j, LINE_WINDOW_END, &zero);
    CHECK(strcmp(json_text(&j),
                 "{\"protocol\":1,\"event\":\"window\",\"edge\":\"end\",\"counters\":{\"rpcs\":"
                 "\"0\",\"requests\":\"0\",\"responses\":\"0\",\"rejected\":\"0\"}}") == 0);
    CHECK(!strstr(json_text(&j), "allocations")); /* not declared, so never printed */
    json_free(&j);
}

static void stopped_carries_the_same_counters(void) {
    server_counters c = {7, 8, 9, 1};
    json_t j;
    stopped_event(&j, &c);
    CHECK(strcmp(json_text(&j),
                 "{\"protocol\":1,\"event\":\"stopped\",\"counters\":{\"rpcs\":\"7\",\"requests\":"
                 "\"8\",\"responses\":\"9\",\"rejected\":\"1\"}}") == 0);
    json_free(&j);
    stopped_event(&j, NULL);
    CHECK(strcmp(json_text(&j), "{\"protocol\":1,\"event\":\"stopped\"}") == 0);
    json_free(&j);
}

/* Revision 1.2, no allocation counters declared, pingpong served on both stacks, not driven. */
static void capabilities_declare_revision_1_2(void) {
    char *line = capabilities_event("/x/rpcarena-peer-c", 2);
    CHECK(line != NULL);
    if (!line) return;
    CHECK(strstr(line, "\"revision\":\"1.2\"") != NULL);
    CHECK(strstr(line, "allocations") == NULL);
    const char *client = strstr(line, "\"client\":[");
    const char *server = strstr(line, "\"server\":[");
    CHECK(client && server && client < server);
    if (client && server) {
        const char *first = strstr(client, "pingpong");
        CHECK(first && first > server); /* none in the client role */
        int served = 0;
        for (const char *p = server; (p = strstr(p, "\"bidi\",\"pingpong\"")) != NULL; p++) served++;
        CHECK(served == 2); /* grpc and quic */
    }
    free(line);
}

int main(void) {
    RUN(lines_are_classified_after_trimming);
    RUN(near_misses_are_other_lines);
    RUN(window_events_carry_the_edge_and_the_counters);
    RUN(stopped_carries_the_same_counters);
    RUN(capabilities_declare_revision_1_2);
    DONE();
}
