/*
 * info-hosts.c - the hosts part of `weft info` (a trace of several hosts, or of a parallel
 * job): each host with its processes and ranks, how its clock was put on the reference
 * host's (offset, drift, method; format/hosts.h), the processes of a time namespace of their
 * own, and the messages between processes checked on the aligned timeline
 * (analysis/messages.h): how many go back in time, how many flows have no other end.
 */
#include "tool/info-hosts.h"

#include <stdio.h>

#include "analysis/messages.h"
#include "format/format.h"
#include "format/reader.h"

static const char *method_name(int m)
{
	switch (m) {
	case WEFT_ALIGN_REFERENCE: return "reference";
	case WEFT_ALIGN_MPI: return "MPI ping-pong";
	case WEFT_ALIGN_REALTIME: return "REALTIME";
	default: return "none: as recorded";
	}
}

void weft_info_hosts(const struct weft_trace *t)
{
	int ranks = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		ranks |= weft_proc_rank(&t->procs[i]) != WEFT_RANK_NONE;
	if (t->hosts.n < 2 && !ranks)
		return;
	printf("hosts:      %zu (times on %s's clock)\n", t->hosts.n, t->hosts.h[0].name);
	for (size_t k = 0; k < t->hosts.n; k++) {
		const struct weft_host *h = &t->hosts.h[k];
		printf("  host %s:", h->name);
		int first = 1;
		for (size_t i = 0; i < t->nprocs; i++) {
			const struct weft_proc *p = &t->procs[i];
			if (p->host_index != k || p->gen) /* a process once: its exec'd images are it */
				continue;
			uint32_t r = weft_proc_rank(p);
			for (size_t j = 0; j < t->nprocs && r == WEFT_RANK_NONE; j++)
				if (t->procs[j].pid == p->pid && t->procs[j].host_index == k)
					r = weft_proc_rank(&t->procs[j]); /* a rank from an exec on */
			printf("%s%d", first ? " processes " : ", ", p->pid);
			if (r != WEFT_RANK_NONE)
				printf(" (rank %u)", r);
			first = 0;
		}
		printf("\n");
		if (k == 0)
			printf("    clock: the reference\n");
		else if (h->method == WEFT_ALIGN_MPI)
			printf("    clock: offset %+lld ns, drift %+.3f ns/s (%s, %u phase%s, best round trip %llu ns)\n",
			       (long long)h->offset_ns, h->drift_ns_s, method_name(h->method), h->phases,
			       h->phases == 1 ? "" : "s", (unsigned long long)h->rtt_ns);
		else if (h->method == WEFT_ALIGN_REALTIME)
			printf("    clock: offset %+lld ns, drift %+.3f ns/s (%s, median of %zu clock readings)\n",
			       (long long)h->offset_ns, h->drift_ns_s, method_name(h->method), h->npoints);
		else
			printf("    clock: %s\n", method_name(h->method));
		if (h->apart)
			printf("    %zu process%s in a time namespace of its own: aligned on its own REALTIME\n",
			       h->apart, h->apart == 1 ? "" : "es");
	}
	struct weft_msg_stats m;
	weft_messages_check(t, &m);
	printf("messages:   %llu between processes (%llu between hosts), %llu backwards in time",
	       (unsigned long long)m.messages, (unsigned long long)m.across_hosts, (unsigned long long)m.backwards);
	if (m.backwards)
		printf(" (worst by %.3f ms)", (double)-m.worst_ns / 1e6);
	printf(", %llu flows without their other end\n", (unsigned long long)m.unpaired);
}
