/*
 * json-gpu.h - the GPU collector's part of the Chrome JSON (json-gpu.c), merged by json.c.
 */
#ifndef WEFT_JSON_GPU_H
#define WEFT_JSON_GPU_H

#include "export/pb.h"
#include "format/reader.h"
#include <stdio.h>
#include <string.h>

/* The JSON GPU rows: pid WEFT_JSON_GPU_PID + the GPU's id, tid the CUDA stream. */
#define WEFT_JSON_GPU_PID 0x7fff0000u

/* A v1 flow event's "id" value. An id that a double cannot hold exactly (>= 2^53: the GPU flow
 * ids, weft_gpu_flow_id, have bit 63 set) goes as a hex string: Perfetto's JSON importer
 * refuses a number past INT64_MAX (stat flow_invalid_id) and JavaScript viewers round it,
 * merging arrows; both take a string id as it is. */
static inline void weft_json_put_flow_id(struct pb *b, uint64_t id)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), id < (1ull << 53) ? "%llu" : "\"0x%llx\"", (unsigned long long)id);
	pb_reserve(b, (size_t)n);
	memcpy(b->p + b->n, tmp, (size_t)n);
	b->n += (size_t)n;
}

/* One formatted event: text[off, off + len), an object without a separator. */
struct weft_json_gpu_ent {
	uint64_t ts, off;
	uint32_t len;
};
struct weft_json_gpu {
	struct pb text;
	struct weft_json_gpu_ent *ents; /* the nmeta "M" events, then the rest by ts */
	size_t n, nmeta;
};

/* Formats every process's kernels, copies and memsets (analysis/gpu.h) as X events on a row
 * per (GPU, stream), each ending its launching CUDA call's arrow. 0, or -errno with err. */
int weft_json_gpu_build(const struct weft_trace *t, struct weft_json_gpu *out, char *err, size_t errlen);
void weft_json_gpu_free(struct weft_json_gpu *g);

#endif
