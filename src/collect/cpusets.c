/*
 * cpusets.c - the CPU sets of the scheduling reader threads (see cpusets.h for the spec).
 * Each online CPU gets a key - its index modulo N, itself, the lowest CPU of its core's or
 * package's sibling list, its NUMA node, the explicit list naming it - and the sets are the
 * distinct keys, numbered in order of first appearance while the online CPUs are walked in
 * ascending order. Reads a few small sysfs files; allocates nothing that outlives a call.
 */
#include "collect/cpusets.h"
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXC WEFT_CPUSETS_MAX_CPUS

/* "0-3,8" (up to the end or a '/') into in[]; returns the characters read or -EINVAL. */
static int parse_list(const char *s, unsigned char *in)
{
	const char *p = s;
	for (;;) {
		char *e;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		long a = strtol(p, &e, 10), b = a;
		if (*e == '-') {
			if (e[1] < '0' || e[1] > '9')
				return -EINVAL;
			b = strtol(e + 1, &e, 10);
		}
		if (a < 0 || b < a || b >= MAXC)
			return -EINVAL;
		if (in)
			for (long c = a; c <= b; c++)
				in[c] = 1;
		p = e;
		if (*p != ',')
			break;
		p++;
	}
	return (int)(p - s);
}

enum kind { K_N, K_CPU, K_CORE, K_PACKAGE, K_NUMA, K_LISTS };

static int kind_of(const char *spec, int *nthreads)
{
	if (!strcmp(spec, "cpu"))
		return K_CPU;
	if (!strcmp(spec, "core"))
		return K_CORE;
	if (!strcmp(spec, "package"))
		return K_PACKAGE;
	if (!strcmp(spec, "numa"))
		return K_NUMA;
	char *e;
	long v = strtol(spec, &e, 10);
	if (e != spec && !*e && spec[0] >= '0' && spec[0] <= '9') {
		*nthreads = (int)(v < 1 ? 0 : v > 16 ? 17 : v);
		if (!strpbrk(spec, ",-"))
			return K_N;
	}
	return K_LISTS;
}

int weft_cpusets_check(const char *spec, char *why, size_t n)
{
	int nt = 0;
	int k = kind_of(spec, &nt);
	if (k == K_N) {
		if (nt < 1 || nt > 16) {
			snprintf(why, n, "a thread count is 1 to 16");
			return -EINVAL;
		}
		return 0;
	}
	if (k != K_LISTS)
		return 0;
	for (const char *p = spec;;) {
		int r = parse_list(p, NULL);
		if (r < 0 || (p[r] && p[r] != '/')) {
			snprintf(why, n, "'%s' is not a CPU list such as 0-3,8", p);
			return -EINVAL;
		}
		p += r;
		if (!*p)
			return 0;
		p++;
	}
}

/* The sibling list in SYS/devices/system/cpu/cpuC/topology/NAME (or OLD): its lowest CPU, or -1. */
static int lowest_sibling(const char *root, int cpu, const char *name, const char *old)
{
	const char *names[2] = {name, old};
	for (int k = 0; k < 2; k++) {
		char path[1024], buf[4096];
		snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%d/topology/%s", root, cpu, names[k]);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		int ok = fgets(buf, sizeof(buf), f) != NULL;
		fclose(f);
		if (!ok)
			continue;
		buf[strcspn(buf, "\n")] = 0;
		unsigned char *in = calloc(MAXC, 1);
		if (!in)
			return -1;
		int low = -1;
		if (parse_list(buf, in) > 0)
			for (int c = 0; c < MAXC && low < 0; c++)
				if (in[c])
					low = c;
		free(in);
		if (low >= 0)
			return low;
	}
	return -1;
}

/* node_of[c]: the NUMA node of CPU c, -1 when none says. Returns 0, or -1 without a node dir. */
static int numa_nodes(const char *root, int *node_of)
{
	char dir[1024];
	snprintf(dir, sizeof(dir), "%s/devices/system/node", root);
	for (int c = 0; c < MAXC; c++)
		node_of[c] = -1;
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	unsigned char *in = calloc(MAXC, 1);
	struct dirent *e;
	while (in && (e = readdir(d))) {
		int node;
		char tail;
		if (sscanf(e->d_name, "node%d%c", &node, &tail) != 1 || node < 0)
			continue;
		char path[1400], buf[4096];
		snprintf(path, sizeof(path), "%s/%s/cpulist", dir, e->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		int ok = fgets(buf, sizeof(buf), f) != NULL;
		fclose(f);
		buf[strcspn(buf, "\n")] = 0;
		memset(in, 0, MAXC);
		if (ok && parse_list(buf, in) > 0)
			for (int c = 0; c < MAXC; c++)
				if (in[c] && node_of[c] < 0)
					node_of[c] = node;
	}
	free(in);
	closedir(d);
	return 0;
}

/* The explicit lists: key[c] = the first list naming CPU c, -1 for none. */
static int list_keys(const char *spec, int *key)
{
	for (int c = 0; c < MAXC; c++)
		key[c] = -1;
	unsigned char *in = calloc(MAXC, 1);
	if (!in)
		return -ENOMEM;
	int set = 0;
	for (const char *p = spec;; set++) {
		memset(in, 0, MAXC);
		int r = parse_list(p, in);
		if (r < 0) {
			free(in);
			return -EINVAL;
		}
		for (int c = 0; c < MAXC; c++)
			if (in[c] && key[c] < 0)
				key[c] = set;
		p += r;
		if (*p != '/')
			break;
		p++;
	}
	free(in);
	return 0;
}

int weft_cpusets_split(const char *spec, const char *sysfs_root, const int *cpus, int ncpus, int *owner,
		       char *why, size_t n)
{
	if (ncpus <= 0)
		return 0;
	int rc = weft_cpusets_check(spec, why, n);
	if (rc)
		return rc;
	int nt = 0, kind = kind_of(spec, &nt);
	int *keys = malloc(sizeof(int) * (size_t)ncpus), *tab = NULL;
	if (!keys)
		return -ENOMEM;
	if (kind == K_NUMA || kind == K_LISTS) {
		if (!(tab = malloc(sizeof(int) * MAXC))) {
			free(keys);
			return -ENOMEM;
		}
		if (kind == K_NUMA && numa_nodes(sysfs_root, tab))
			for (int c = 0; c < MAXC; c++)
				tab[c] = 0; /* no node directory: one node */
		if (kind == K_LISTS && (rc = list_keys(spec, tab))) {
			free(tab);
			free(keys);
			return rc;
		}
	}
	for (int i = 0; i < ncpus; i++) {
		int c = cpus[i], k;
		switch (kind) {
		case K_N: k = i % nt; break;
		case K_CPU: k = c; break;
		case K_CORE: k = lowest_sibling(sysfs_root, c, "core_cpus_list", "thread_siblings_list"); break;
		case K_PACKAGE: k = lowest_sibling(sysfs_root, c, "package_cpus_list", "core_siblings_list"); break;
		default: k = c >= 0 && c < MAXC ? tab[c] : -1; break;
		}
		/* a CPU no file (or list) places: alone for topology, the first set for lists */
		keys[i] = k >= 0 ? k : kind == K_LISTS ? -1 : MAXC + c;
	}
	/* number the distinct keys in order of first appearance (lists: in the order given) */
	int nsets = 0;
	if (kind == K_LISTS) {
		int maxk = -1;
		for (int i = 0; i < ncpus; i++)
			if (keys[i] > maxk)
				maxk = keys[i];
		for (int k = 0; k <= maxk; k++) {
			int used = 0;
			for (int i = 0; i < ncpus; i++)
				if (keys[i] == k) {
					owner[i] = nsets;
					used = 1;
				}
			nsets += used;
		}
		if (!nsets)
			nsets = 1;
		for (int i = 0; i < ncpus; i++)
			if (keys[i] < 0)
				owner[i] = 0;
	} else {
		for (int i = 0; i < ncpus; i++) {
			owner[i] = -1;
			for (int j = 0; j < i; j++)
				if (keys[j] == keys[i]) {
					owner[i] = owner[j];
					break;
				}
			if (owner[i] < 0)
				owner[i] = nsets++;
		}
	}
	free(tab);
	free(keys);
	return nsets;
}

char *weft_cpusets_format(const int *cpus, const int *owner, int ncpus, int k, char *buf, size_t n)
{
	size_t o = 0;
	buf[0] = 0;
	for (int i = 0; i < ncpus; i++) {
		if (owner[i] != k)
			continue;
		int j = i; /* a run of consecutive CPUs in the same set */
		while (j + 1 < ncpus && owner[j + 1] == k && cpus[j + 1] == cpus[j] + 1)
			j++;
		int w = j > i ? snprintf(buf + o, n - o, "%s%d-%d", o ? "," : "", cpus[i], cpus[j])
			      : snprintf(buf + o, n - o, "%s%d", o ? "," : "", cpus[i]);
		if (w < 0 || (size_t)w >= n - o) {
			buf[o] = 0;
			break;
		}
		o += (size_t)w;
		i = j;
	}
	return buf;
}
