/* Events are one line of valid JSON: strings escaped, counters as decimal strings. */
#include <string.h>

#include "check.h"
#include "json.h"

static void strings_are_escaped_and_counters_are_strings(void) {
    json_t j;
    json_init(&j);
    json_open(&j);
    json_int(&j, "protocol", 1);
    json_str(&j, "message", "a \"quote\"\\ and\na newline\t\x01");
    json_counter(&j, "completed", 18446744073709551615ULL);
    json_open_arr(&j, "list");
    json_str(&j, NULL, "x");
    json_open_obj(&j, NULL);
    json_bool(&j, "b", false);
    json_close(&j);
    json_close_arr(&j);
    json_close(&j);
    CHECK(strcmp(json_text(&j),
                 "{\"protocol\":1,\"message\":\"a \\\"quote\\\"\\\\ and\\na newline\\t\\u0001\","
                 "\"completed\":\"18446744073709551615\",\"list\":[\"x\",{\"b\":false}]}") == 0);
    CHECK(!strchr(json_text(&j), '\n'));
    json_free(&j);
}

int main(void) {
    RUN(strings_are_escaped_and_counters_are_strings);
    DONE();
}
