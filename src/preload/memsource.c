/*
 * memsource.c - the allocation recorder as a data source (collect/source.h; memory=1, `weft
 * record --memory`): open finds which allocator the program's calls reach (weft's interposer,
 * or one the executable or a library preloaded ahead of weft defines, whose calls are then not
 * seen: said in the log and in the MEMORY record), sets the filters (memfilter.c) and the mode
 * the interposers (memory.c) read; stop turns recording off; the MEMORY metadata record is
 * written at both. Fork: the forking thread and the time, which the child writes as a FORK
 * record, so the reader charges the child's allocations in the slices it inherited.
 */
#include "memory-internal.h"
#include "memnext.h"
#include "memwindow.h"
#include "memstacks.h"
#include "collect/source.h"
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);

/* Flags of the MEMORY record (docs/format.md). */
#define MEMF_ON 1u
#define MEMF_STACKS 2u
#define MEMF_NOT_INTERPOSED 4u /* the program's own malloc comes first: calls do not reach us */
static uint32_t mem_flags;
static char allocator[512]; /* the object whose malloc the program uses, when not glibc's */

static void write_memory_record(void)
{
	uint64_t nested = weft_mem_nested_lost(); /* signal handlers' calls not recorded */
	uint32_t head[2] = {mem_flags, nested > UINT32_MAX ? UINT32_MAX : (uint32_t)nested};
	uint64_t v[3] = {weft_mem_threshold, weft_mem_sample_mean, atomic_load(&weft_mem_sample_set_full)};
	char buf[sizeof(v) + sizeof(allocator)];
	memcpy(buf, v, sizeof(v));
	size_t n = strlen(allocator);
	memcpy(buf + sizeof(v), allocator, n + 1);
	weft_meta_write(WEFT_M_MEMORY, head, sizeof(head), buf, sizeof(v) + n + 1);
}

/* Does a call through the program's malloc reach ours? One probe allocation through it (and its
 * free), seen by on_alloc_filtered in MEM_PROBE mode, which records nothing: a symbol that is not
 * ours may still lead here (a non-PIE executable's canonical PLT entry, which dlsym returns for
 * an executable that takes malloc's address, or a wrapper preloaded ahead of weft that forwards
 * to the next malloc). */
static int reaches_ours(void *def)
{
	void *(*prog_malloc)(size_t);
	void (*prog_free)(void *);
	void *f = dlsym(RTLD_DEFAULT, "free");
	memcpy(&prog_malloc, &def, sizeof(def));
	memcpy(&prog_free, &f, sizeof(f));
	int saved = weft_in_runtime;
	weft_in_runtime = 0; /* may_record() lets the probe through; nothing is recorded in this mode */
	weft_mem_probe_seen = 0;
	__atomic_store_n(&weft_mem_mode, MEM_PROBE, __ATOMIC_RELEASE);
	weft_mem_probing = 1;
	void *p = prog_malloc(24);
	weft_mem_probing = 0;
	if (p && prog_free)
		prog_free(p);
	__atomic_store_n(&weft_mem_mode, MEM_OFF, __ATOMIC_RELEASE);
	weft_in_runtime = saved;
	return weft_mem_probe_seen;
}

/* Is def the executable's own definition (its symbol defined in a section of the program)?
 * Not for a non-PIE executable that takes malloc's address: its symbol is undefined, with the
 * address of its PLT entry as its value (that entry leads to the first definition after it). */
static int exe_defines(void *def)
{
	Dl_info di;
	const ElfW(Sym) *sym = NULL;
	struct link_map *in = NULL;
	if (!dladdr1(def, &di, (void **)&in, RTLD_DL_LINKMAP) || !in || in != _r_debug.r_map)
		return 0; /* not in the executable (the first object of the link map) */
	return dladdr1(def, &di, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_shndx != SHN_UNDEF;
}

/* Which allocator the program's calls reach: ours (then which one is underneath), or one the
 * executable (or a library preloaded ahead of weft) defines itself, which comes before weft's
 * and is not seen. The executable's own is never called from here (a program's allocator is
 * never entered from weft); a library's gets one probe allocation, which tells a wrapper that
 * forwards to weft's from one that allocates itself. */
static void find_allocator(void)
{
	weft_next_ready();
	void *def = dlsym(RTLD_DEFAULT, "malloc");
	Dl_info di;
	if (def && def != (void *)weft_own_malloc && (exe_defines(def) || !reaches_ours(def))) {
		mem_flags |= MEMF_NOT_INTERPOSED;
		snprintf(allocator, sizeof(allocator), "%s",
			 dladdr(def, &di) && di.dli_fname && *di.dli_fname ? di.dli_fname : "the program");
		weft_log(WEFT_LOG_WARN, "memory: %s defines its own malloc, which comes before weft's: its "
			 "allocations are not recorded (anonymous mmap and weft_heap_* are)", allocator);
		return;
	}
	void *under = NULL;
	memcpy(&under, &weft_next.malloc, sizeof(under));
	if (under && under != (void *)__libc_malloc && dladdr(under, &di) && di.dli_fname)
		snprintf(allocator, sizeof(allocator), "%s", di.dli_fname);
}

/* fork: the forking thread and the time, taken in prepare (on that thread, before the runtime's
 * handlers reset its state), written by the child (after the runtime's child handler opened the
 * child's metadata): the reader charges the child's allocations in the slices it inherited. */
static uint32_t fork_tid;
static uint64_t fork_ticks;

static void fork_prepare(void)
{
	fork_tid = (uint32_t)syscall(SYS_gettid);
	fork_ticks = weft__ticks();
}

static void fork_child(void)
{
	if (!__atomic_load_n(&weft_mem_mode, __ATOMIC_RELAXED))
		return;
	uint32_t head[2] = {fork_tid, 0};
	weft_meta_write(WEFT_M_FORK, head, sizeof(head), &fork_ticks, sizeof(fork_ticks));
}

/* ---- the source's face (collect/source.h) ---- */

static int memory_open(char *why, size_t n)
{
	(void)why;
	(void)n;
#ifdef WEFT_NO_MEMORY_INTERPOSER
	weft_log(WEFT_LOG_WARN, "memory: this sanitizer build of weft has no allocation interposer "
		 "(weft_heap_* still works)");
	return -ENOTSUP; /* (said above, in its own words) */
#endif
	mem_flags = MEMF_ON | (weft_cfg.memory_stacks ? MEMF_STACKS : 0);
	weft_mem_nested_start();
	find_allocator();
	weft_mem_filter_open(weft_cfg.memory_threshold, weft_cfg.memory_sample); /* memfilter.c */
	weft_mem_mmap_heap = weft_heap("mmap");
	if (weft_cfg.memory_stacks)
		weft_mem_find_text();
	weft_mem_with_stacks = weft_cfg.memory_stacks;
	write_memory_record();
	__atomic_store_n(&weft_mem_mode, weft_mem_threshold || weft_mem_sample_mean || weft_mem_with_stacks ? MEM_FILTERED : MEM_ALL,
			 __ATOMIC_RELEASE);
	return 0;
}

static void memory_stop(void)
{
	if (!__atomic_load_n(&weft_mem_mode, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&weft_mem_mode, MEM_OFF, __ATOMIC_RELEASE);
	write_memory_record();
}

static int memory_wanted(void)
{
	return weft_cfg.memory;
}

static void memory_describe(char *buf, size_t n)
{
	snprintf(buf, n, "allocations and frees (malloc family, anonymous mmap)%s%s%s",
		 weft_mem_with_stacks ? ", with call stacks" : "", weft_mem_threshold ? ", blocks over memory_threshold" : "",
		 weft_mem_sample_mean ? ", a sample by bytes (memory_sample)" : "");
}

const struct weft_source weft_source_memory = {
	.name = "memory",
	.option = "memory",
	.wanted = memory_wanted,
	.open = memory_open,
	.fork_prepare = fork_prepare,
	.fork_child = fork_child, /* after the runtime's child handler opened the child's metadata */
	.stop = memory_stop,
	.describe = memory_describe,
};
