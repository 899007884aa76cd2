/*
 * pftrace-out.h - where the .pftrace writer's packets go: the output file, in the order of the
 * sequences whatever the encoding threads' timing, each sequence's packets in batches of about
 * 1 MiB, each batch deflated into one TracePacket.compressed_packets by a pool of worker
 * threads (one per core) while its sequence goes on encoding. The batches are cut where the
 * encoder cuts them and compressed each on its own, so the bytes do not depend on which thread
 * compressed what, or when: the same trace gives the same file.
 */
#ifndef WEFT_PFTRACE_OUT_H
#define WEFT_PFTRACE_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "export/pb.h"

struct weft_pf_out;
struct weft_pf_batch;

/* One sequence's side of the output: its place (order, SIZE_MAX: straight into the file, for
 * the header's sequence written while no other one is) and its batches still being deflated,
 * oldest first. Zero it, then set order. */
#define WEFT_PF_INFLIGHT 24
struct weft_pf_seqout {
	size_t order;
	struct weft_pf_batch *pending[WEFT_PF_INFLIGHT];
	size_t first, npending;
};

/* The output into f for nseq ordered sequences; deflate: batches compressed (0: plain packets);
 * workers: compressing threads (0: each sequence compresses its own batches), best as many as
 * the threads encoding. NULL when memory fails. */
struct weft_pf_out *weft_pf_out_open(FILE *f, int deflate, size_t nseq, int workers);
/* b's whole packets as the sequence's next batch; b comes back empty (with a buffer to reuse). */
void weft_pf_out_batch(struct weft_pf_out *o, struct weft_pf_seqout *s, struct pb *b);
/* Every batch of the sequence written (for the header's sequence: before the others begin). */
void weft_pf_out_flush(struct weft_pf_out *o, struct weft_pf_seqout *s);
/* The sequence is complete: flushed, and the following ones whose turn it now is are written. */
void weft_pf_out_seq_done(struct weft_pf_out *o, struct weft_pf_seqout *s);
/* Stops the workers and frees it all: 0 or -errno of the first failed write; *bytes written. */
int weft_pf_out_close(struct weft_pf_out *o, uint64_t *bytes);

#endif
