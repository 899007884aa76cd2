/*
 * cuda_app - the real-GPU test of `make test-gpu` (scripts/test-gpu.sh): a few kernels with
 * different resources on two streams, copies both ways (pinned and pageable), a memset, a
 * cudaMalloc'd buffer freed with cudaFree, and a kernel of about 200 us run synchronously
 * inside the weft scope "sync kernel" (the clock-alignment check). `cuda_app launches N`:
 * N empty kernels back to back (the launch-overhead measurement), printing ns per launch.
 * Prints what it did, one line per kind.
 */
#include <cuda_runtime.h>
#include <weft.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "cuda_app: %s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

__global__ void vecAdd(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}

__global__ void reduce_shared(const float *in, float *out, int n)
{
	extern __shared__ float tile[];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	tile[threadIdx.x] = i < n ? in[i] : 0.0f;
	__syncthreads();
	for (int s = blockDim.x / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s)
			tile[threadIdx.x] += tile[threadIdx.x + s];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		out[blockIdx.x] = tile[0];
}

__global__ void spin_kernel(long long cycles)
{
	long long t0 = clock64();
	while (clock64() - t0 < cycles)
		;
}

__global__ void empty_kernel() {}

static unsigned long long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

int main(int argc, char **argv)
{
	weft_start();
	if (argc > 2 && !strcmp(argv[1], "launches")) {
		long n = atol(argv[2]);
		empty_kernel<<<1, 1>>>();
		CK(cudaDeviceSynchronize());
		unsigned long long t0 = now_ns();
		for (long i = 0; i < n; i++)
			empty_kernel<<<1, 1>>>();
		unsigned long long t1 = now_ns();
		CK(cudaDeviceSynchronize());
		printf("kernels %ld\nns per launch %.1f\n", n + 1, (double)(t1 - t0) / (double)n);
		return 0;
	}
	const int n = 1 << 20;
	const size_t bytes = n * sizeof(float);
	float *ha, *hb = (float *)malloc(bytes), *da, *db, *dc, *dout;
	CK(cudaMallocHost((void **)&ha, bytes));
	for (int i = 0; i < n; i++)
		ha[i] = hb[i] = 1.0f;
	cudaStream_t s1, s2;
	CK(cudaStreamCreate(&s1));
	CK(cudaStreamCreate(&s2));
	{
		WEFT_SCOPE("setup");
		CK(cudaMalloc((void **)&da, bytes));
		CK(cudaMalloc((void **)&db, bytes));
		CK(cudaMalloc((void **)&dc, bytes));
		CK(cudaMalloc((void **)&dout, bytes / 256));
	}
	CK(cudaMemcpyAsync(da, ha, bytes, cudaMemcpyHostToDevice, s1)); /* pinned */
	CK(cudaMemcpy(db, hb, bytes, cudaMemcpyHostToDevice));           /* pageable */
	CK(cudaMemset(dc, 0, bytes));
	for (int i = 0; i < 10; i++)
		vecAdd<<<n / 256, 256, 0, s1>>>(da, db, dc, n);
	for (int i = 0; i < 5; i++)
		reduce_shared<<<n / 256, 256, 256 * sizeof(float), s2>>>(dc, dout, n);
	CK(cudaMemcpyAsync(ha, dc, bytes, cudaMemcpyDeviceToHost, s1));
	CK(cudaMemcpy(hb, dout, bytes / 256, cudaMemcpyDeviceToHost));
	CK(cudaDeviceSynchronize());
	{
		WEFT_SCOPE("sync kernel");
		int khz = 0;
		CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
		spin_kernel<<<1, 1>>>((long long)khz / 5); /* about 200 us */
		CK(cudaDeviceSynchronize());
	}
	CK(cudaFree(da));
	CK(cudaFree(db));
	CK(cudaFree(dc));
	CK(cudaFree(dout));
	CK(cudaFreeHost(ha));
	free(hb);
	CK(cudaStreamDestroy(s1));
	CK(cudaStreamDestroy(s2));
	printf("kernels 16\nmemcpy 4\nmemset 1\nmalloc 4\n");
	return 0;
}
