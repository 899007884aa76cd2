/*
 * pftrace-gpu.c - the GPU collector's part of a .pftrace (layout verified with trace_processor
 * v55.3: ../shared/perfetto/layouts/gpu.txtpb). One track per GPU, "GPU N: NAME", global (a
 * GPU serves every process), its children ordered explicitly: one track per (process, CUDA
 * stream), "stream S" (with the process's name and pid when several processes used GPUs),
 * then the NVML counters pftrace-system.c puts there. Kernels, copies and memsets are slices
 * on their stream's track (a second lane, "stream S #2", takes one that overlaps the one
 * before it: slices of a track must nest), each ending the flow its CUDA call began
 * (terminating_flow_ids = weft_gpu_flow_id), with their resources as arguments. Device memory
 * is a named heap per GPU ("GPU N memory"): the memory part draws it.
 */
#include "export/pftrace-gpu.h"
#include "export/pftrace-system.h"
#include "format/format.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	TRACE_PACKET = 1, TP_TIMESTAMP = 8, TP_SEQ_ID = 10, TP_TRACK_EVENT = 11, TP_TRACK_DESCRIPTOR = 60,
	TD_UUID = 1, TD_NAME = 2, TD_PARENT = 5, TD_SIBLING_RANK = 12,
	TE_DEBUG = 4, TE_TYPE = 9, TE_TRACK_UUID = 11, TE_CATEGORY = 22, TE_NAME = 23, TE_TERM_FLOW_IDS = 48,
	DA_UINT = 3, DA_INT = 4, DA_DOUBLE = 5, DA_STRING = 6, DA_NAME = 10,
	TYPE_BEGIN = 1, TYPE_END = 2,
};

#define MAX_DEV 64

static uint64_t stream_uuid(uint64_t (*mix)(uint64_t, uint64_t), int pid, uint32_t stream, unsigned lane)
{
	return mix(mix(21, ((uint64_t)(uint32_t)pid << 32) | stream), lane);
}

static void descriptor(struct pb *b, uint64_t uuid, uint64_t parent, const char *name, int rank)
{
	size_t pk = pb_begin(b, TRACE_PACKET);
	pb_varint(b, TP_SEQ_ID, 1);
	size_t td = pb_begin(b, TP_TRACK_DESCRIPTOR);
	pb_varint(b, TD_UUID, uuid);
	if (parent)
		pb_varint(b, TD_PARENT, parent);
	pb_string(b, TD_NAME, name);
	if (rank >= 0)
		pb_varint(b, TD_SIBLING_RANK, (uint64_t)rank);
	pb_end(b, td);
	pb_end(b, pk);
}

void weft_pf_gpu_tracks(struct pb *b, const struct weft_gpu *g, const struct weft_sys *sys,
			uint64_t (*mix)(uint64_t, uint64_t))
{
	unsigned char done[MAX_DEV] = {0};
	for (size_t i = 0; g && i < g->nprocs; i++) {
		const struct weft_gpu_proc *gp = &g->procs[i];
		for (size_t k = 0; k < gp->n; k++) {
			uint32_t d = gp->acts[k].device;
			const char *nvml_name;
			if (d >= MAX_DEV || done[d])
				continue;
			done[d] = 1;
			if (sys && weft_pf_sys_gpu(sys, d, &nvml_name))
				continue; /* described with its NVML counters */
			const struct weft_gpu_device_def *dev = weft_gpu_device(gp->p, d);
			weft_pf_gpu_track(b, mix, d, dev ? dev->name : NULL);
		}
	}
}

/* ---- one process's activities ---- */

struct lane { uint32_t device, stream; unsigned lane; };

struct gpu_enc {
	struct pb *b;
	uint32_t seq;
	uint64_t (*mix)(uint64_t, uint64_t);
	const struct weft_gpu_proc *gp;
	int several; /* more than one process with GPU work: name the streams' process */
	struct lane *lanes;
	size_t nlanes, cap;
};

static void annot_u(struct pb *b, const char *name, uint64_t v)
{
	size_t m = pb_begin(b, TE_DEBUG);
	pb_string(b, DA_NAME, name);
	pb_varint(b, DA_UINT, v);
	pb_end(b, m);
}

static void annot_d(struct pb *b, const char *name, double v)
{
	size_t m = pb_begin(b, TE_DEBUG);
	pb_string(b, DA_NAME, name);
	pb_double(b, DA_DOUBLE, v);
	pb_end(b, m);
}

static void annot_s(struct pb *b, const char *name, const char *v)
{
	size_t m = pb_begin(b, TE_DEBUG);
	pb_string(b, DA_NAME, name);
	pb_string(b, DA_STRING, v);
	pb_end(b, m);
}

/* The track of an activity's lane (analysis/gpu.c), described the first time. */
static uint64_t track_of(struct gpu_enc *e, const struct weft_gpu_act *a)
{
	const struct weft_proc *p = e->gp->p;
	for (size_t i = 0; i < e->nlanes; i++)
		if (e->lanes[i].device == a->device && e->lanes[i].stream == a->stream && e->lanes[i].lane == a->lane)
			return stream_uuid(e->mix, p->pid, a->stream, a->lane);
	if (e->nlanes == e->cap) {
		e->cap = e->cap ? e->cap * 2 : 16;
		e->lanes = realloc(e->lanes, e->cap * sizeof(*e->lanes));
		if (!e->lanes)
			weft_oom("writing the .pftrace");
	}
	e->lanes[e->nlanes++] = (struct lane){a->device, a->stream, a->lane};
	char name[400], who[300] = "";
	if (e->several)
		snprintf(who, sizeof(who), " (%s %d)", p->name ? p->name : "pid", p->pid);
	if (a->lane)
		snprintf(name, sizeof(name), "stream %u #%u%s", a->stream, a->lane + 1, who);
	else
		snprintf(name, sizeof(name), "stream %u%s", a->stream, who);
	descriptor(e->b, stream_uuid(e->mix, p->pid, a->stream, a->lane), weft_pf_gpu_uuid(e->mix, a->device), name,
		   a->stream < 62 ? (int)(a->stream * 16 + (a->lane < 15 ? a->lane : 15)) : 999);
	return stream_uuid(e->mix, p->pid, a->stream, a->lane);
}

/* mangled: the name as recorded, where the slice's name is its demangled form (else NULL) */
static void kernel_args(struct pb *b, const struct weft_gpu_act *a, const char *mangled)
{
	char v[96];
	snprintf(v, sizeof(v), "%u,%u,%u", a->grid[0], a->grid[1], a->grid[2]);
	annot_s(b, "grid", v);
	snprintf(v, sizeof(v), "%u,%u,%u", a->block[0], a->block[1], a->block[2]);
	annot_s(b, "block", v);
	annot_u(b, "registers_per_thread", a->regs);
	annot_u(b, "static_shared_bytes", a->static_shared);
	annot_u(b, "dynamic_shared_bytes", a->dynamic_shared);
	annot_u(b, "local_bytes_per_thread", a->local_per_thread);
	annot_u(b, "local_bytes_total", a->local_total);
	if (a->shared_executed)
		annot_u(b, "shared_bytes_per_sm", a->shared_executed);
	if (a->occupancy >= 0)
		annot_d(b, "occupancy", a->occupancy);
	if (mangled)
		annot_s(b, "mangled", mangled);
}

static void activity(struct gpu_enc *e, const struct weft_gpu_act *a)
{
	struct pb *b = e->b;
	const struct weft_proc *p = e->gp->p;
	uint64_t track = track_of(e, a);
	char name[64];
	const char *nm = name, *cat = "gpu";
	char *dem = NULL;
	if (a->kind == WEFT_GPU_KERNEL) {
		nm = weft_gpu_kernel_name(p, a, &dem);
		cat = "gpu_kernel";
	} else if (a->kind == WEFT_GPU_MEMCPY) {
		snprintf(name, sizeof(name), "Memcpy %s", weft_gpu_copy_kind(a->copy_kind));
		cat = "gpu_memcpy";
	} else {
		snprintf(name, sizeof(name), "Memset");
		cat = "gpu_memset";
	}
	size_t pk = pb_begin(b, TRACE_PACKET);
	pb_varint(b, TP_TIMESTAMP, a->start);
	pb_varint(b, TP_SEQ_ID, e->seq);
	size_t te = pb_begin(b, TP_TRACK_EVENT);
	pb_varint(b, TE_TYPE, TYPE_BEGIN);
	pb_varint(b, TE_TRACK_UUID, track);
	pb_string(b, TE_NAME, nm);
	pb_string(b, TE_CATEGORY, cat);
	if (a->flow_end)
		pb_fixed64(b, TE_TERM_FLOW_IDS, weft_gpu_flow_id((uint32_t)p->pid, a->corr));
	if (a->kind == WEFT_GPU_KERNEL) {
		kernel_args(b, a, dem ? p->sites[a->name_site].name : NULL);
	} else {
		annot_u(b, "bytes", a->bytes);
		if (a->kind == WEFT_GPU_MEMCPY) {
			annot_s(b, "kind", weft_gpu_copy_kind(a->copy_kind));
			annot_s(b, "src_kind", weft_gpu_mem_kind(a->src_kind));
			annot_s(b, "dst_kind", weft_gpu_mem_kind(a->dst_kind));
		} else {
			annot_u(b, "value", a->value);
		}
		if (a->end > a->start)
			annot_d(b, "throughput_gbps", (double)a->bytes / (double)(a->end - a->start));
	}
	annot_u(b, "device", a->device);
	annot_u(b, "context", a->context);
	annot_u(b, "stream", a->stream);
	annot_u(b, "correlation_id", a->corr);
	pb_end(b, te);
	pb_end(b, pk);
	free(dem);
	pk = pb_begin(b, TRACE_PACKET);
	pb_varint(b, TP_TIMESTAMP, a->end);
	pb_varint(b, TP_SEQ_ID, e->seq);
	te = pb_begin(b, TP_TRACK_EVENT);
	pb_varint(b, TE_TYPE, TYPE_END);
	pb_varint(b, TE_TRACK_UUID, track);
	pb_end(b, te);
	pb_end(b, pk);
}

void weft_pf_gpu_events(struct pb *b, const struct weft_gpu *g, const struct weft_gpu_proc *gp, uint32_t seq,
			uint64_t (*mix)(uint64_t, uint64_t), void (*drain)(void *ctx), void *ctx)
{
	size_t with = 0;
	for (size_t i = 0; i < g->nprocs; i++)
		with += g->procs[i].n != 0;
	struct gpu_enc e = {.b = b, .seq = seq, .mix = mix, .gp = gp, .several = with > 1};
	for (size_t k = 0; k < gp->n; k++) {
		activity(&e, &gp->acts[k]);
		if (b->n >= (1u << 20))
			drain(ctx);
	}
	free(e.lanes);
}
