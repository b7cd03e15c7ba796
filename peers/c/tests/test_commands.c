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
    server_counters c = {1285, 1286, 1287, 18446744073709551615ULL, 0, 0, false, NULL};
    json_t j;
    window_event(&j, LINE_WINDOW_START, &c);
    CHECK(strcmp(json_text(&j),
                 "{\"protocol\":1,\"event\":\"window\",\"edge\":\"start\",\"counters\":{\"rpcs\":"
                 "\"1285\",\"requests\":\"1286\",\"responses\":\"1287\",\"rejected\":"
                 "\"18446744073709551615\",\"commands\":\"0\"}}") == 0); /* no message: none printed */
    json_free(&j);
    c.first_rejection = "status 3 on a call: bad";
    window_event(&j, LINE_WINDOW_START, &c);
    CHECK(strcmp(json_text(&j),
                 "{\"protocol\":1,\"event\":\"window\",\"edge\":\"start\",\"counters\":{\"rpcs\":"
                 "\"1285\",\"requests\":\"1286\",\"responses\":\"1287\",\"rejected\":"
                 "\"18446744073709551615\",\"commands\":\"0\"},\"first_rejection\":"
                 "\"status 3 on a call: bad\"}") == 0);
    json_free(&j);
    server_counters zero = {0};
    window_event(&j, LINE_WINDOW_END, &zero);
    CHECK(strcmp(json_text(&j),
                 "{\"protocol\":1,\"event\":\"window\",\"edge\":\"end\",\"counters\":{\"rpcs\":"
                 "\"0\",\"requests\":\"0\",\"responses\":\"0\",\"rejected\":\"0\",\"commands\":\"0\"}}") == 0);
    CHECK(!strstr(json_text(&j), "allocations")); /* not declared, so never printed */
    json_free(&j);
}

/* 1.3: zmq's `dropped`, and first_rejection only once something was rejected or dropped. */
static void dropped_and_first_rejection(void) {
    server_counters c = {5, 5, 4, 0, 2, 0, true, "reply dropped"};
    json_t j;
    stopped_event(&j, &c);
    CHECK(strstr(json_text(&j), "\"commands\":\"2\",\"dropped\":\"0\"}}") != NULL);
    CHECK(strstr(json_text(&j), "first_rejection") == NULL); /* nothing rejected or dropped yet */
    json_free(&j);
    c.dropped = 1;
    stopped_event(&j, &c);
    CHECK(strstr(json_text(&j), "\"dropped\":\"1\"},\"first_rejection\":\"reply dropped\"}") != NULL);
    json_free(&j);
}

static void stopped_carries_the_same_counters(void) {
    server_counters c = {7, 8, 9, 1, 0, 0, false, NULL};
    json_t j;
    stopped_event(&j, &c);
    CHECK(strcmp(json_text(&j),
                 "{\"protocol\":1,\"event\":\"stopped\",\"counters\":{\"rpcs\":\"7\",\"requests\":"
                 "\"8\",\"responses\":\"9\",\"rejected\":\"1\",\"commands\":\"0\"}}") == 0);
    json_free(&j);
    stopped_event(&j, NULL);
    CHECK(strcmp(json_text(&j), "{\"protocol\":1,\"event\":\"stopped\"}") == 0);
    json_free(&j);
}

static const char *entry(const char *line, const char *role, const char *stack) {
    char key[64];
    snprintf(key, sizeof key, "\"%s\":[", role);
    const char *r = strstr(line, key);
    snprintf(key, sizeof key, "{\"stack\":\"%s\"", stack);
    return r ? strstr(r, key) : NULL;
}

/* Revision 1.4, no allocation counters declared, pingpong served on grpc and quic, not driven;
 * per stack the --tls values, send and not_offered, zmq's conformance faults; (1.4) no stack
 * lists the payload kind dated or client_modes (absent: the official client only). */
static void capabilities_declare_revision_1_5(void) {
    char *line = capabilities_event("/x/rpcarena-peer-c", 2);
    CHECK(line != NULL);
    if (!line) return;
    CHECK(strstr(line, "\"revision\":\"1.5\"") != NULL);
    CHECK(strstr(line, "\"profiler\":\"perf\"") != NULL);
    CHECK(strstr(line, "allocations") == NULL);
    CHECK(strstr(line, "\"dated\"") == NULL && strstr(line, "client_modes") == NULL);
    int payloads = 0;
    for (const char *p = line; (p = strstr(p, "\"payloads\":[\"zeros\",\"structured\"]")) != NULL; p++)
        payloads++;
    CHECK(payloads == 6); /* three stacks in two roles */
    const char *client = strstr(line, "\"client\":[");
    const char *server = strstr(line, "\"server\":[");
    CHECK(client && server && client < server);
    if (client && server) {
        const char *first = strstr(client, "pingpong\"]");
        CHECK(!first || first > server); /* none driven in the client role */
        int served = 0;
        for (const char *p = server; (p = strstr(p, "\"bidi\",\"pingpong\"")) != NULL; p++) served++;
        CHECK(served == 2); /* grpc and quic */
    }
    const char *roles[] = {"client", "server"};
    for (int r = 0; r < 2; r++) {
        const char *g = entry(line, roles[r], "grpc"), *q = entry(line, roles[r], "quic"),
                   *z = entry(line, roles[r], "zmq");
        CHECK(g && q && z && g < q && q < z);
        if (!g || !q || !z) continue;
        CHECK(strstr(g, "\"send\"]") && strstr(g, "\"send\"]") < q);
        CHECK(strstr(g, "\"tls\":[\"on\",\"off\"]") < q);
        CHECK(strstr(q, "\"tls\":[\"on\"]") < z && strstr(q, "\"not_offered\":{\"send\"") < z);
        CHECK(strstr(z, "\"shapes\":[\"unary\",\"send\"]") == z + strlen("{\"stack\":\"zmq\","));
        CHECK(strstr(z, "\"tls\":[\"off\"]") && strstr(z, "\"conformance_faults\":true"));
        CHECK(strstr(z, "\"router_mandatory\":true") && strstr(z, "\"congestion_control\":\"host default\""));
    }
    free(line);
}

int main(void) {
    RUN(lines_are_classified_after_trimming);
    RUN(near_misses_are_other_lines);
    RUN(window_events_carry_the_edge_and_the_counters);
    RUN(stopped_carries_the_same_counters);
    RUN(dropped_and_first_rejection);
    RUN(capabilities_declare_revision_1_5);
    DONE();
}
