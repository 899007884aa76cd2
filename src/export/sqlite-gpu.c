/*
 * sqlite-gpu.c - the GPU collector's kernels, copies and memsets as rows of gpu_activities
 * (docs/sqlite.md): their device times on the trace's clock, resources and occupancy, and the
 * thread and time of the CUDA call that launched each one (join it to slices on utid and ts).
 */
#include "export/sqlite-internal.h"
#include "analysis/gpu.h"
#include "format/format.h"
#include <stdio.h>
#include <stdlib.h>

#define ROW(d, table, ...) weft_sq_row(&(d)->sq, &(d)->tab[table], __VA_ARGS__)

static int64_t utid_of(const struct weft_sqlite_db *d, size_t proc, uint32_t tid)
{
	const struct weft_proc *p = &d->t->procs[proc];
	for (size_t k = 0; k < p->nthreads; k++)
		if (p->threads[k].tid == tid)
			return d->utid_base[proc] + (int64_t)k;
	return -1;
}

void weft_sqlite_gpu(struct weft_sqlite_db *d)
{
	struct weft_gpu *g = NULL;
	char err[256];
	if (weft_gpu_analyze(d->t, 1, &g, err, sizeof(err)) || !g)
		return;
	int64_t id = 1;
	for (size_t i = 0; i < g->nprocs; i++) {
		const struct weft_gpu_proc *gp = &g->procs[i];
		size_t proc = (size_t)(gp->p - d->t->procs);
		for (size_t k = 0; k < gp->n; k++, id++) {
			const struct weft_gpu_act *a = &gp->acts[k];
			const struct weft_gpu_launch *l = weft_gpu_launch_of(gp, a->corr);
			int64_t lu = l ? utid_of(d, proc, l->tid) : -1, lts = l ? (int64_t)l->ts : -1;
			if (a->kind == WEFT_GPU_KERNEL) {
				char *dem;
				const char *name = weft_gpu_kernel_name(gp->p, a, &dem);
				char grid[48], block[48];
				snprintf(grid, sizeof(grid), "%u,%u,%u", a->grid[0], a->grid[1], a->grid[2]);
				snprintf(block, sizeof(block), "%u,%u,%u", a->block[0], a->block[1], a->block[2]);
				const char *types = a->occupancy >= 0 ? "iitTiiiiiiwwTTiiiiidnnnn" : "iitTiiiiiiwwTTiiiiinnnnn";
				if (a->occupancy >= 0)
					ROW(d, T_GPU, types, id, (int64_t)proc + 1, "kernel", name, (int64_t)a->device,
					    (int64_t)a->context, (int64_t)a->stream, (int64_t)a->start, (int64_t)a->end, (int64_t)a->corr,
					    lu, lts, grid, block, (int64_t)a->regs, (int64_t)a->static_shared, (int64_t)a->dynamic_shared,
					    (int64_t)a->local_per_thread, (int64_t)a->local_total, a->occupancy);
				else
					ROW(d, T_GPU, types, id, (int64_t)proc + 1, "kernel", name, (int64_t)a->device,
					    (int64_t)a->context, (int64_t)a->stream, (int64_t)a->start, (int64_t)a->end, (int64_t)a->corr,
					    lu, lts, grid, block, (int64_t)a->regs, (int64_t)a->static_shared, (int64_t)a->dynamic_shared,
					    (int64_t)a->local_per_thread, (int64_t)a->local_total);
				free(dem);
			} else if (a->kind == WEFT_GPU_MEMCPY) {
				char name[48];
				snprintf(name, sizeof(name), "Memcpy %s", weft_gpu_copy_kind(a->copy_kind));
				ROW(d, T_GPU, "iitTiiiiiiwwnnnnnnnnittt", id, (int64_t)proc + 1, "memcpy", name,
				    (int64_t)a->device, (int64_t)a->context, (int64_t)a->stream, (int64_t)a->start, (int64_t)a->end,
				    (int64_t)a->corr, lu, lts, (int64_t)a->bytes, weft_gpu_copy_kind(a->copy_kind),
				    weft_gpu_mem_kind(a->src_kind), weft_gpu_mem_kind(a->dst_kind));
			} else {
				ROW(d, T_GPU, "iittiiiiiiwwnnnnnnnninnn", id, (int64_t)proc + 1, "memset", "Memset",
				    (int64_t)a->device, (int64_t)a->context, (int64_t)a->stream, (int64_t)a->start, (int64_t)a->end,
				    (int64_t)a->corr, lu, lts, (int64_t)a->bytes);
			}
		}
	}
	weft_gpu_free(g);
}
