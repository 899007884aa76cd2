/*
 * cpusets.h - which CPUs each scheduling reader thread owns (sched_threads=, `weft record
 * --sched-threads`), from a spec in the style of perf record --threads:
 *   N                 N threads (1 to 16), thread i owning every N-th online CPU from the i-th
 *   cpu               one thread per online CPU
 *   core              one per physical core: cpuX/topology/core_cpus_list (thread_siblings_list
 *                     on kernels before 5.7)
 *   package           one per package: package_cpus_list (core_siblings_list before 5.7)
 *   numa              one per NUMA node: node/nodeN/cpulist (one set when the kernel has none)
 *   LIST/LIST/...     explicit CPU lists ("0-3,8/4-7": '/' separates the sets, since ':'
 *                     separates WEFT_OPTIONS keys and ',' belongs to a list)
 * Topology is read under a sysfs root (sysfs_root=, /sys by default) so tests use fixture
 * trees. Offline or unknown CPUs in an explicit list are left out, a set left empty is
 * dropped, a CPU listed twice belongs to the first set that names it, and online CPUs no
 * list names join the first set (every ring has a reader). A CPU with no topology file is a
 * set of its own. Pure functions, no state: shared by the option parser and collect/sched.c.
 */
#ifndef WEFT_CPUSETS_H
#define WEFT_CPUSETS_H

#include <stddef.h>

#define WEFT_CPUSETS_MAX_CPUS 1024

/* Syntax only (the option parser): 0, or -EINVAL with why. */
int weft_cpusets_check(const char *spec, char *why, size_t n);

/* Splits the online CPUs cpus[0..ncpus) into sets: owner[i] is the set (0, 1, ...) of cpus[i],
 * sets numbered in the order of their lowest CPU (explicit lists: in the order given).
 * Returns the number of sets (at least 1 when ncpus > 0), or -EINVAL with why. */
int weft_cpusets_split(const char *spec, const char *sysfs_root, const int *cpus, int ncpus, int *owner,
		       char *why, size_t n);

/* Writes the CPUs of set k ("0-1,4-5") into buf; returns buf. */
char *weft_cpusets_format(const int *cpus, const int *owner, int ncpus, int k, char *buf, size_t n);

#endif
