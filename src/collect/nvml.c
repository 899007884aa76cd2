/*
 * nvml.c - NVIDIA GPU power, SM clock and utilization (power=1 or gpu=1), a source of the
 * system sampler (sampler.c), through NVML loaded at run time with dlopen (nvml_lib=, default
 * libnvidia-ml.so.1: the driver's library; weft has no link-time dependency on it). Every
 * power_period, each GPU's channels: nvmlDeviceGetPowerUsage (milliwatts: the board's power,
 * averaged by the driver over about a second on most boards), nvmlDeviceGetTotalEnergyConsumption
 * (millijoules since the driver loaded), nvmlDeviceGetClockInfo(NVML_CLOCK_SM) (MHz) and
 * nvmlDeviceGetUtilizationRates (percent of the driver's last sample period, 1/6 s to 1 s by
 * product, in which a kernel ran, and in which device memory was read or written). Each is
 * optional: what a GPU answers at open with anything but NVML_SUCCESS (NOT_SUPPORTED, mostly)
 * is not a channel of it, and a GPU with none is left out. The few NVML types and prototypes
 * used are declared here as the driver's ABI has them (nvml.h): every function returns an
 * nvmlReturn_t (an int enum; 0 NVML_SUCCESS, 3 NVML_ERROR_NOT_SUPPORTED), devices are opaque
 * pointers, nvmlClockType_t is an int enum (1 NVML_CLOCK_SM) and nvmlUtilization_t is
 * {unsigned gpu, memory}. System-wide: one process of a trace samples it.
 */
#include "lib/internal.h"
#include "collect/sampler.h"
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

typedef int nvml_return;                 /* nvmlReturn_t */
typedef struct nvml_device *nvml_device; /* nvmlDevice_t */
typedef struct { unsigned gpu, memory; } nvml_utilization; /* nvmlUtilization_t */
#define NVML_SUCCESS 0
#define NVML_CLOCK_SM 1 /* nvmlClockType_t */
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
	nvml_return (*clock)(nvml_device, int, unsigned *);         /* nvmlDeviceGetClockInfo (optional) */
	nvml_return (*util)(nvml_device, nvml_utilization *);       /* nvmlDeviceGetUtilizationRates (optional) */
	const char *(*error)(nvml_return);                          /* nvmlErrorString (optional) */
} nv;
/* Channel ids, 0 for what the GPU does not report. */
static struct { nvml_device dev; int ch_power, ch_energy, ch_clock, ch_util, ch_mem_util; } gpus[MAX_GPUS];
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
	*(void **)&nv.clock = dlsym(nv.lib, "nvmlDeviceGetClockInfo");
	*(void **)&nv.util = dlsym(nv.lib, "nvmlDeviceGetUtilizationRates");
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
	int with[5] = {0}; /* GPUs with power, energy, SM clock, utilization, memory utilization */
	nvml_return first = NVML_SUCCESS;
	for (unsigned i = 0; i < count && ngpus < MAX_GPUS; i++) {
		nvml_device dev;
		unsigned mw, mhz;
		unsigned long long mj;
		nvml_utilization u;
		if ((r = nv.handle(i, &dev)) != NVML_SUCCESS) {
			first = first ? first : r;
			continue;
		}
		int has[5] = {(r = nv.power(dev, &mw)) == NVML_SUCCESS, nv.energy && nv.energy(dev, &mj) == NVML_SUCCESS,
			      nv.clock && nv.clock(dev, NVML_CLOCK_SM, &mhz) == NVML_SUCCESS,
			      nv.util && nv.util(dev, &u) == NVML_SUCCESS, 0};
		has[4] = has[3];
		if (!has[0] && !has[1] && !has[2] && !has[3]) {
			first = first ? first : r;
			continue;
		}
		char gname[96] = "", label[128];
		if (nv.name && nv.name(dev, gname, sizeof(gname)) != NVML_SUCCESS)
			gname[0] = 0;
		gname[sizeof(gname) - 1] = 0;
		snprintf(label, sizeof(label), "GPU %u%s%s", i, gname[0] ? " " : "", gname);
		static const unsigned kinds[5] = {WEFT_SYSK_GPU_POWER_MW, WEFT_SYSK_GPU_ENERGY_MJ, WEFT_SYSK_GPU_SM_CLOCK_MHZ,
						  WEFT_SYSK_GPU_UTIL_PCT, WEFT_SYSK_GPU_MEM_UTIL_PCT};
		int ch[5] = {0};
		for (int k = 0; k < 5; k++) {
			if (has[k]) /* energy is cumulative: held; the others are written on change */
				ch[k] = weft_sys_channel(kinds[k], i, 0, label, k == 1 ? WEFT_SYSCH_HOLD : 0);
			with[k] += has[k];
		}
		gpus[ngpus].dev = dev;
		gpus[ngpus].ch_power = ch[0];
		gpus[ngpus].ch_energy = ch[1];
		gpus[ngpus].ch_clock = ch[2];
		gpus[ngpus].ch_util = ch[3];
		gpus[ngpus].ch_mem_util = ch[4];
		ngpus++;
	}
	if (!ngpus) {
		snprintf(desc, n, "no GPU of %u reports its power, SM clock or utilization: %s", count,
			 nv_error(first, eb, sizeof(eb)));
		nv.shutdown();
		unload();
		return -ENODEV;
	}
	snprintf(desc, n, "power of %d GPU%s (%s), energy of %d, SM clock of %d, utilization of %d, every %.6g ms",
		 with[0], with[0] == 1 ? "" : "s", weft_cfg.nvml_lib, with[1], with[2], with[3],
		 (double)weft_cfg.power_period_ns / 1e6);
	return 0;
}

static void sample_nvml(void)
{
	for (int i = 0; i < ngpus; i++) {
		unsigned mw, mhz;
		unsigned long long mj;
		nvml_utilization u;
		if (gpus[i].ch_power && nv.power(gpus[i].dev, &mw) == NVML_SUCCESS)
			weft_sys_emit(gpus[i].ch_power, mw);
		if (gpus[i].ch_energy && nv.energy(gpus[i].dev, &mj) == NVML_SUCCESS)
			weft_sys_emit(gpus[i].ch_energy, mj);
		if (gpus[i].ch_clock && nv.clock(gpus[i].dev, NVML_CLOCK_SM, &mhz) == NVML_SUCCESS)
			weft_sys_emit(gpus[i].ch_clock, mhz);
		if (gpus[i].ch_util && nv.util(gpus[i].dev, &u) == NVML_SUCCESS) {
			weft_sys_emit(gpus[i].ch_util, u.gpu);
			weft_sys_emit(gpus[i].ch_mem_util, u.memory);
		}
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
