#ifndef WEFT_INFO_HOSTS_H
#define WEFT_INFO_HOSTS_H

struct weft_trace;
/* Prints the hosts block of `weft info` where the trace has several hosts or ranks. */
void weft_info_hosts(const struct weft_trace *t);

#endif
