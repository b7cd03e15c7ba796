/* The histogram encoding: V2 compressed, cookie 0x1c849314, base64 "HISTFAAA", round trip. */
#include <hdr_histogram_log.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hist.h"

static void encoding_round_trips_with_the_cookie(void) {
    struct hdr_histogram *h = hist_new();
    for (uint64_t v = 1000; v < 1000000; v += 997) hist_record(h, v);
    hist_record(h, 0);                      /* clamped to 1 */
    hist_record(h, 10ULL * HIST_HIGHEST);   /* clamped to the highest trackable value */
    char *text = hist_encode(h);
    CHECK(text && strncmp(text, "HISTFAAA", 8) == 0);
    struct hdr_histogram *back = NULL;
    CHECK(hdr_log_decode(&back, text, strlen(text)) == 0);
    CHECK(back && back->total_count == h->total_count);
    CHECK(back && hdr_value_at_percentile(back, 50) == hdr_value_at_percentile(h, 50));
    CHECK(back && back->lowest_trackable_value == 1 && back->highest_trackable_value == HIST_HIGHEST);
    CHECK(back && back->significant_figures == 3);
    /* the cookie: the first four decoded bytes */
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    uint32_t bits = 0;
    for (int i = 0; i < 8; i++) bits = (uint32_t)(bits << 6) | (uint32_t)(strchr(b64, text[i]) - b64);
    /* 8 base64 characters = 48 bits; the cookie is the top 32 */
    uint64_t all = 0;
    for (int i = 0; i < 8; i++) all = (all << 6) | (uint64_t)(strchr(b64, text[i]) - b64);
    CHECK((uint32_t)(all >> 16) == 0x1c849314u);
    (void)bits;
    free(text);
    hdr_close(h);
    if (back) hdr_close(back);
}

static void an_empty_histogram_encodes(void) {
    struct hdr_histogram *h = hist_new();
    char *text = hist_encode(h);
    CHECK(text && strncmp(text, "HISTFAAA", 8) == 0);
    free(text);
    hdr_close(h);
}

int main(void) {
    RUN(encoding_round_trips_with_the_cookie);
    RUN(an_empty_histogram_encodes);
    DONE();
}
