/*
 * nvml_stub.so - a stand-in for libnvidia-ml.so.1 with the real names and ABI of the NVML
 * functions weft's sampler uses (collect/nvml.c), loaded through nvml_lib=. Its readings are
 * scripted by the number of calls, not by time, so a test knows every value exactly:
 *   2 GPUs; GPU g's n-th nvmlDeviceGetPowerUsage (from 0) is (g+1)*100000 + 1000*min(n, 4) mW;
 *   GPU 0's n-th nvmlDeviceGetTotalEnergyConsumption is 5000*n mJ; GPU 1 has none
 *   (NVML_ERROR_NOT_SUPPORTED);
 *   GPU g's n-th nvmlDeviceGetClockInfo(NVML_CLOCK_SM) is (g+1)*1000 + 100*min(n, 4) MHz (other
 *   clocks: NVML_ERROR_INVALID_ARGUMENT);
 *   GPU 0's n-th nvmlDeviceGetUtilizationRates is gpu 20*min(n, 4) %, memory 5 + 10*min(n, 4) %;
 *   GPU 1 has none (NVML_ERROR_NOT_SUPPORTED).
 * The sampler's first call of each (n = 0) is at open, where it asks what the GPU supports.
 * nvml_stub_power_calls(g) says how many power readings GPU g gave (sysprobe waits on it).
 */
#include <stdint.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef enum { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_CLOCK_VIDEO = 3 } nvmlClockType_t;
typedef struct nvmlUtilization_st {
	unsigned int gpu;    /* percent of the last sample period in which a kernel ran */
	unsigned int memory; /* ... in which device memory was read or written */
} nvmlUtilization_t;
enum { NVML_SUCCESS = 0, NVML_ERROR_INVALID_ARGUMENT = 2, NVML_ERROR_NOT_SUPPORTED = 3 };

static unsigned power_calls[2], energy_calls[2], clock_calls[2], util_calls[2];

static unsigned upto4(unsigned n) { return n < 4 ? n : 4; }

static int gpu(nvmlDevice_t d)
{
	uintptr_t g = (uintptr_t)d;
	return g == 1 || g == 2 ? (int)g - 1 : -1;
}

nvmlReturn_t nvmlInit_v2(void) { return NVML_SUCCESS; }
nvmlReturn_t nvmlShutdown(void) { return NVML_SUCCESS; }
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
	*count = 2;
	return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	if (index > 1)
		return NVML_ERROR_INVALID_ARGUMENT;
	*device = (nvmlDevice_t)(uintptr_t)(index + 1);
	return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
	int g = gpu(device);
	if (g < 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	unsigned n = __atomic_fetch_add(&power_calls[g], 1, __ATOMIC_SEQ_CST);
	*power = (unsigned)(g + 1) * 100000u + 1000u * upto4(n);
	return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *energy)
{
	int g = gpu(device);
	if (g != 0)
		return g < 0 ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_NOT_SUPPORTED;
	*energy = 5000ull * energy_calls[0]++;
	return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock)
{
	int g = gpu(device);
	if (g < 0 || type != NVML_CLOCK_SM)
		return NVML_ERROR_INVALID_ARGUMENT;
	unsigned n = __atomic_fetch_add(&clock_calls[g], 1, __ATOMIC_SEQ_CST);
	*clock = (unsigned)(g + 1) * 1000u + 100u * upto4(n);
	return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
	int g = gpu(device);
	if (g != 0)
		return g < 0 ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_NOT_SUPPORTED;
	unsigned n = __atomic_fetch_add(&util_calls[g], 1, __ATOMIC_SEQ_CST);
	utilization->gpu = 20u * upto4(n);
	utilization->memory = 5u + 10u * upto4(n);
	return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
	if (gpu(device) < 0 || length < 9)
		return NVML_ERROR_INVALID_ARGUMENT;
	memcpy(name, "Stub GPU", 9);
	return NVML_SUCCESS;
}
const char *nvmlErrorString(nvmlReturn_t r) { return r ? "stub error" : "success"; }

unsigned nvml_stub_power_calls(unsigned g) { return g < 2 ? __atomic_load_n(&power_calls[g], __ATOMIC_SEQ_CST) : 0; }
