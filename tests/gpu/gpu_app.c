/*
 * gpu_app - a CUDA program without CUDA: it makes the fake CUPTI's CUDA calls (fake_cuda.h)
 * in known numbers, around weft.h scopes, so the GPU collector's tests know every kernel, copy,
 * arrow and byte to expect. Scenarios (argv[1]):
 *   basic       cudaMalloc 4 MiB in scope "setup"; 20 vecAdd on stream 7, 10 math::scale<float>
 *               on stream 13; memcpy HtoD 1 MiB (sync), DtoH 1 MiB async on stream 13; memset
 *               64 KiB; scope "sync kernel" around a 200 us sync_kernel + synchronize; one
 *               cuLaunchKernel (driver) of drv_kernel; cuMemAlloc/cuMemFree 1 MiB; cudaFree
 *   launches N  N tiny kernels back to back; prints the wall ns per launch
 *   drops N     the next N records are dropped, then 10 kernels
 *   threads T   T threads, each 50 kernels on its own stream (1 + thread)
 *   crash       5 kernels, then SIGSEGV
 *   graph       one cudaGraphLaunch of a 6-kernel graph on stream 3, then 2 vecAdd on stream 3
 * Prints one summary line per kind ("kernels 32").
 */
#include "fake_cuda.h"
#include <weft.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const uint32_t G[3] = {4096, 1, 1}, B[3] = {256, 1, 1}, G2[3] = {64, 2, 1}, B2[3] = {128, 2, 1};

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void *worker(void *arg)
{
	uint32_t stream = (uint32_t)(uintptr_t)arg;
	for (int i = 0; i < 50; i++)
		fakecuda_launch(stream, "_Z6workerPf", G, B, 24, 0, 0, 0, 2000);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "basic";
	long n = argc > 2 ? atol(argv[2]) : 0;
	weft_start(); /* the trace (and with gpu=1 the collector) starts here, not at the first event */
	if (!strcmp(what, "basic")) {
		void *buf = NULL;
		uint64_t dbuf = 0;
		{
			WEFT_SCOPE("setup");
			fakecuda_malloc(&buf, 4u << 20);
		}
		for (int i = 0; i < 20; i++)
			fakecuda_launch(7, "_Z6vecAddPKfS0_Pfi", G, B, 32, 0, 0, 0, 5000);
		for (int i = 0; i < 10; i++)
			fakecuda_launch(13, "_ZN4math5scaleIfEEvPT_i", G2, B2, 64, 1024, 48u << 10, 16, 8000);
		fakecuda_memcpy(1, 1u << 20, 0, 0);
		fakecuda_memcpy(2, 1u << 20, 13, 1);
		fakecuda_memset(64u << 10, 0, 0);
		fakecuda_synchronize();
		{
			WEFT_SCOPE("sync kernel");
			fakecuda_launch(0, "_Z11sync_kernelv", G, B, 16, 0, 0, 0, 200000);
			fakecuda_synchronize();
		}
		fakecuda_driver_launch(7, "_Z10drv_kernelv", G, B, 40, 3000);
		fakecuda_cu_mem_alloc(&dbuf, 1u << 20);
		fakecuda_cu_mem_free(dbuf);
		fakecuda_free(buf);
		fakecuda_synchronize();
		printf("kernels 32\nmemcpy 2\nmemset 1\nmalloc 2\n");
	} else if (!strcmp(what, "launches")) {
		uint64_t t0 = now_ns();
		for (long i = 0; i < n; i++)
			fakecuda_launch(7, "_Z4tinyv", G, B, 8, 0, 0, 0, 1);
		uint64_t t1 = now_ns();
		fakecuda_synchronize();
		printf("kernels %ld\nns per launch %.1f\n", n, n ? (double)(t1 - t0) / (double)n : 0.0);
	} else if (!strcmp(what, "drops")) {
		fakecuda_drop_next((unsigned)n);
		for (int i = 0; i < 10; i++)
			fakecuda_launch(7, "_Z6vecAddPKfS0_Pfi", G, B, 32, 0, 0, 0, 1000);
		fakecuda_synchronize();
		printf("kernels 10\ndropped %ld\n", n);
	} else if (!strcmp(what, "threads")) {
		pthread_t t[64];
		if (n < 1 || n > 64)
			n = 4;
		for (long i = 0; i < n; i++)
			pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
		for (long i = 0; i < n; i++)
			pthread_join(t[i], NULL);
		fakecuda_synchronize();
		printf("kernels %ld\n", n * 50);
	} else if (!strcmp(what, "graph")) {
		fakecuda_graph_launch(3, "_Z9graphnodePf", 6, 2000);
		for (int i = 0; i < 2; i++)
			fakecuda_launch(3, "_Z6vecAddPKfS0_Pfi", G, B, 32, 0, 0, 0, 1000);
		fakecuda_synchronize();
		printf("kernels 8\n");
	} else if (!strcmp(what, "crash")) {
		for (int i = 0; i < 5; i++)
			fakecuda_launch(7, "_Z6vecAddPKfS0_Pfi", G, B, 32, 0, 0, 0, 1000);
		fakecuda_synchronize();
		printf("kernels 5\n");
		fflush(stdout);
		raise(SIGSEGV);
	} else {
		fprintf(stderr, "gpu_app: unknown scenario %s\n", what);
		return 2;
	}
	return 0;
}
