/* Latency histograms: HdrHistogram_c with the protocol's parameters (values in ns, 1 to
 * 3,600,000,000,000, 3 significant digits) and its V2 compressed base64 encoding (cookie
 * 0x1c849314, text starting "HISTFAAA"). */
#ifndef RPCARENA_HIST_H
#define RPCARENA_HIST_H

#include <stdint.h>

#include <hdr_histogram.h>

#define HIST_LOWEST 1
#define HIST_HIGHEST 3600000000000LL
#define HIST_DIGITS 3

struct hdr_histogram *hist_new(void);
void hist_record(struct hdr_histogram *h, uint64_t ns);
/* base64 text (malloc'd) or NULL. */
char *hist_encode(struct hdr_histogram *h);

#endif
