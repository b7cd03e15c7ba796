#include "hist.h"

#include <hdr_histogram_log.h>
#include <stdlib.h>

#include "util.h"

struct hdr_histogram *hist_new(void) {
    struct hdr_histogram *h = NULL;
    if (hdr_init(HIST_LOWEST, HIST_HIGHEST, HIST_DIGITS, &h) != 0) {
        diag("out of memory creating a histogram");
        abort();
    }
    return h;
}

void hist_record(struct hdr_histogram *h, uint64_t ns) {
    int64_t v = ns < HIST_LOWEST ? HIST_LOWEST : (ns > (uint64_t)HIST_HIGHEST ? HIST_HIGHEST : (int64_t)ns);
    hdr_record_value(h, v);
}

char *hist_encode(struct hdr_histogram *h) {
    char *text = NULL;
    if (hdr_log_encode(h, &text) != 0) return NULL;
    return text;
}
