/*
 * nvml.c - NVIDIA GPU power (power=1), a source of the system sampler (sampler.c), through
 * NVML loaded at run time with dlopen (nvml_lib=, default libnvidia-ml.so.1: the driver's
 * library; weft has no link-time dependency on it). Every GPU's nvmlDeviceGetPowerUsage
 * (milliwatts: the board's power, averaged by the driver over about a second on most boards)
 * and, where the GPU supports it, nvmlDeviceGetTotalEnergyConsumption (millijoules since the
 * driver loaded), every power_period. The few NVML types and prototypes used are declared
 * here as the driver's ABI has them (nvml.h): every function returns an nvmlReturn_t (an int
 * enum; 0 NVML_SUCCESS, 3 NVML_ERROR_NOT_SUPPORTED) and devices are opaque pointers.
 * System-wide: one process of a trace samples it.
 */
#include "lib/internal.h"
#include "collect/sampler.h"
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

typedef int nvml_return;                 /* nvmlReturn_t */
typedef struct nvml_device *nvml_device; /* nvmlDevice_t */
#define NVML_SUCCESS 0
#define MAX_GPUS 64

/* Set by open on the sampler thread, read by it only. */
static struct {
	void *lib;
	nvml_return (*init)(void);                                  /* nvmlInit_v2 */
	nvml_return (*shutdown)(void);                              /* nvmlShutdown */
	nvml_return (*count)(unsigned *);                           /* nvmlDeviceGetCount_v2 */
	nvml_return (*handle)(unsigned, nvml_device *);             /* nvmlDeviceGetHandleByIndex_v2 */
	nvml_return (*power)(nvml_device, unsigned *);              /* nvmlDeviceGetPowerUsage */
	nvml_return (*energy)(nvml_device, unsigned long long *);   /* nvmlDeviceGetTotalEnergyConsumption */
	nvml_return (*name)(nvml_device, char *, unsigned);         /* nvmlDeviceGetName (optional) */
	const char *(*error)(nvml_return);                          /* nvmlErrorString (optional) */
} nv;
static struct { nvml_device dev; int ch_power, ch_energy; } gpus[MAX_GPUS];
static int ngpus;

static const char *nv_error(nvml_return r, char *buf, size_t n)
{
	const char *s = nv.error ? nv.error(r) : NULL;
	snprintf(buf, n, "%s (NVML error %d)", s ? s : "error", r);
	return buf;
}

/* The library stays loaded: libraries of drivers may leave exit handlers or threads behind,
 * which would run into unmapped code after a dlclose. */
static void unload(void)
{
	memset(&nv, 0, sizeof(nv));
	ngpus = 0;
}

static int open_nvml(char *desc, size_t n)
{
	char eb[160];
	nv.lib = dlopen(weft_cfg.nvml_lib, RTLD_NOW | RTLD_LOCAL);
	if (!nv.lib) {
		const char *e = dlerror();
		snprintf(desc, n, "cannot load %s (no NVIDIA driver?): %s", weft_cfg.nvml_lib, e ? e : "dlopen failed");
		return -ENOENT;
	}
	*(void **)&nv.init = dlsym(nv.lib, "nvmlInit_v2");
	*(void **)&nv.shutdown = dlsym(nv.lib, "nvmlShutdown");
	*(void **)&nv.count = dlsym(nv.lib, "nvmlDeviceGetCount_v2");
	*(void **)&nv.handle = dlsym(nv.lib, "nvmlDeviceGetHandleByIndex_v2");
	*(void **)&nv.power = dlsym(nv.lib, "nvmlDeviceGetPowerUsage");
	*(void **)&nv.energy = dlsym(nv.lib, "nvmlDeviceGetTotalEnergyConsumption");
	*(void **)&nv.name = dlsym(nv.lib, "nvmlDeviceGetName");
	*(void **)&nv.error = dlsym(nv.lib, "nvmlErrorString");
	if (!nv.init || !nv.shutdown || !nv.count || !nv.handle || !nv.power) {
		snprintf(desc, n, "%s lacks nvmlInit_v2, nvmlShutdown, nvmlDeviceGetCount_v2, "
			 "nvmlDeviceGetHandleByIndex_v2 or nvmlDeviceGetPowerUsage", weft_cfg.nvml_lib);
		unload();
		return -ENOSYS;
	}
	nvml_return r = nv.init();
	if (r != NVML_SUCCESS) {
		snprintf(desc, n, "nvmlInit_v2 failed: %s", nv_error(r, eb, sizeof(eb)));
		unload();
		return -EIO;
	}
	unsigned count = 0;
	if ((r = nv.count(&count)) != NVML_SUCCESS || !count) {
		if (r != NVML_SUCCESS)
			snprintf(desc, n, "nvmlDeviceGetCount_v2 failed: %s", nv_error(r, eb, sizeof(eb)));
		else
			snprintf(desc, n, "NVML sees no GPU");
		nv.shutdown();
		unload();
		return -ENODEV;
	}
	int with_energy = 0;
	nvml_return first = NVML_SUCCESS;
	for (unsigned i = 0; i < count && ngpus < MAX_GPUS; i++) {
		nvml_device dev;
		unsigned mw;
		if ((r = nv.handle(i, &dev)) != NVML_SUCCESS || (r = nv.power(dev, &mw)) != NVML_SUCCESS) {
			first = first ? first : r;
			continue;
		}
		char gname[96] = "", label[128];
		if (nv.name && nv.name(dev, gname, sizeof(gname)) != NVML_SUCCESS)
			gname[0] = 0;
		gname[sizeof(gname) - 1] = 0;
		snprintf(label, sizeof(label), "GPU %u%s%s", i, gname[0] ? " " : "", gname);
		gpus[ngpus].dev = dev;
		gpus[ngpus].ch_power = weft_sys_channel(WEFT_SYSK_GPU_POWER_MW, i, 0, label, 0);
		unsigned long long mj;
		gpus[ngpus].ch_energy = 0;
		if (nv.energy && nv.energy(dev, &mj) == NVML_SUCCESS) {
			gpus[ngpus].ch_energy = weft_sys_channel(WEFT_SYSK_GPU_ENERGY_MJ, i, 0, label, WEFT_SYSCH_HOLD);
			with_energy++;
		}
		ngpus++;
	}
	if (!ngpus) {
		snprintf(desc, n, "no GPU of %u reports its power: %s", count, nv_error(first, eb, sizeof(eb)));
		nv.shutdown();
		unload();
		return -ENODEV;
	}
	snprintf(desc, n, "power of %d GPU%s (%s), energy of %d, every %.6g ms", ngpus, ngpus == 1 ? "" : "s",
		 weft_cfg.nvml_lib, with_energy, (double)weft_cfg.power_period_ns / 1e6);
	return 0;
}

static void sample_nvml(void)
{
	for (int i = 0; i < ngpus; i++) {
		unsigned mw;
		unsigned long long mj;
		if (nv.power(gpus[i].dev, &mw) == NVML_SUCCESS)
			weft_sys_emit(gpus[i].ch_power, mw);
		if (gpus[i].ch_energy && nv.energy(gpus[i].dev, &mj) == NVML_SUCCESS)
			weft_sys_emit(gpus[i].ch_energy, mj);
	}
}

static void close_nvml(int after_fork)
{
	if (after_fork) { /* the parent's NVML: not ours to shut down */
		memset(&nv, 0, sizeof(nv));
		ngpus = 0;
		return;
	}
	weft_in_runtime++;
	if (nv.shutdown)
		nv.shutdown();
	unload();
	weft_in_runtime--;
}

const struct weft_sys_ops weft_sys_nvml = {WEFT_SYS_NVML, 1, 1, open_nvml, sample_nvml, close_nvml};
