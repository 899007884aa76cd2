/*
 * internal.h - what the runtime's files share. Nothing here is API.
 *
 * The runtime has five parts: config.c (the one table of options), clock.c (tick source and
 * calibration), registry.c (call sites, tracks, categories and filters), thread.c (per-thread
 * buffers, chunk pool, drops, exit and fork) and writer.c (writer threads, files, zstd), with
 * meta.c serialising the metadata file and session.c tying start/stop together.
 */
#ifndef WEFT_INTERNAL_H
#define WEFT_INTERNAL_H


#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>
#include "weft.h"
#include "../format/format.h"

#define WEFT_HIDDEN __attribute__((visibility("hidden")))
/* Thread-local variables of the runtime: initial-exec, so an access is one %fs-relative load
 * even in the preloaded library (the default model calls __tls_get_addr each time). */
#define WEFT_TLS __attribute__((tls_model("initial-exec")))

/* ---- config.c ---- */
enum weft_overflow { WEFT_OVERFLOW_DROP = 0, WEFT_OVERFLOW_BLOCK = 1 };
/* One hardware watchpoint asked for with watch= (`weft record --watch`): a symbol of the
 * traced executable or an address, the bytes it covers (0: the default, 8, or the symbol's size
 * when smaller) and whether reads count too. */
#define WEFT_MAX_WATCH 4 /* x86 has four debug address registers */
struct weft_watch_spec {
	char symbol[128]; /* "" when addr names the place */
	uint64_t addr;
	unsigned len; /* 1, 2, 4, 8, or 0: the default */
	int rw;       /* 0: writes, 1: reads and writes */
};

struct weft_config {
	int enable;
	char output[1024];
	char name[256];
	char host[256]; /* host=: the host named in the PROCESS record and file names ("": hostname) */
	char categories[1024];
	char filter[1024];
	uint64_t buffer_size;
	uint64_t chunk_size;
	int writers;
	char writer_cpus[128];
	int compression;
	int overflow;
	uint32_t func_depth;  /* record functions up to this call depth (0 = all) */
	uint64_t func_min_ns; /* drop function slices shorter than this that have no children */
	char func_filter[1024]; /* function names: globs, '-' excludes (like filter=) */
	char func_libs[1024];   /* files (basenames) whose functions are recorded: globs, '-' excludes */
	int memory;             /* the preload library records malloc & co. and anonymous mmap */
	int memory_stacks;      /* ... with the return addresses of each allocation */
	uint64_t memory_threshold; /* ... only blocks of at least this size */
	uint64_t memory_sample;    /* ... one sample per this many bytes on average (0: every block) */
	char mem_access[16];       /* memory access sampling: "" off, auto, pagefault, pebs, ibs */
	uint64_t mem_access_period; /* events between samples (0: the source's default) */
	struct weft_watch_spec watch[WEFT_MAX_WATCH]; /* watch=: hardware watchpoints */
	int nwatch;
	int sched;                 /* sched=1: scheduling events (weft record --sched; the preload runtime) */
	char sched_threads[256];   /* reader threads of the per-CPU rings and their CPUs (collect/cpusets.h; default "1") */
	/* the system sampler (collect/sampler.c): one thread for every periodic source */
	int cpu_mem;               /* the process's CPU time and RSS, at sample_period */
	char cpu_mem_exact[1024];  /* slice names (glob.c patterns) read exactly at begin and end */
	int power;                 /* CPU frequency at sample_period; RAPL and GPU power at power_period */
	uint64_t sample_period_ns; /* default 10 ms */
	uint64_t power_period_ns;  /* default 1 s */
	char sysfs_root[512];      /* stands for /sys (tests: fixture trees) */
	char procfs_root[512];     /* stands for /proc */
	char nvml_lib[512];        /* what dlopen loads for NVML (default libnvidia-ml.so.1) */
	int gpu;                   /* gpu=1: CUPTI (collect/cupti.c), and NVML as power=1 does */
	char cupti_lib[512];       /* what dlopen loads for CUPTI ("": searched, collect/cupti.c) */
	uint64_t gpu_buffer_size;  /* bytes of each CUPTI activity buffer */
	int mpi;                   /* mpi=0: libweft-mpi.so passes MPI calls through unrecorded (default 1) */
	int live;                  /* live=1: weft top's counts from the start (live.c; default 0) */
	int mpi_sync;              /* mpi_sync=0: no clock sync over MPI (src/mpi/clocksync.c; default 1) */
	char control[512]; /* control=: weft record's control socket (control.c; "": none) */
	uint64_t flight_size;   /* flight=: the flight recorder's ring per process (0: off; flight.c) */
	uint64_t flight_age_ns; /* ... time it keeps at least, where flight_size allows (0: no aim) */
	int flight_noexit;      /* ... no snapshot at the program's exit */
	char switch_output[32]; /* switch_output=SIZE|TIME: the trace as parts DIR/part-N ("": off) */
	uint64_t switch_bytes, switch_ns; /* ... parsed: a part every this many bytes of frames, or ns */
	int switch_max_files;   /* switch_max_files=N: only the last N parts are kept (0: all) */
	char counters[256]; /* counters=: perf counter names read at every slice begin and end */
	/* snapshot triggers and policy (snapshot.c, trigger.c; issue 20) */
	int snapshot_signal;       /* snapshot_signal=: this signal requests a snapshot (0: none) */
	char trigger[1024];        /* trigger=PATTERN>DURATION[,...]: a slice that long requests one */
	int max_snapshots;         /* max_snapshots=: requests taken at most (default 16) */
	uint64_t min_interval_ns;  /* min_interval=: requests closer than this to the last are refused */
	uint64_t after_ns;         /* after=: data kept after the trigger, before the dump */
	char given[2048]; /* the options as given, for the trace metadata */
};
/* Written by config functions under weft_g.lock before start, read-only after start (except
 * categories/filter, which the registry re-reads under its lock). */
WEFT_HIDDEN extern struct weft_config weft_cfg;
WEFT_HIDDEN void weft_config_defaults(struct weft_config *c);
WEFT_HIDDEN int weft_config_apply(struct weft_config *c, const char *opts, int log_errors);
WEFT_HIDDEN int weft_config_set(struct weft_config *c, const char *key, const char *val, int log_errors);
WEFT_HIDDEN const char *weft_config_valid(const char *key); /* what a key accepts, or NULL */
WEFT_HIDDEN const char *weft_config_keys(char *out, size_t n); /* "enable, output, ...": every key */
WEFT_HIDDEN int weft_parse_size(const char *s, uint64_t *out);
/* watch=SPEC[,SPEC...], SPEC = SYMBOL or 0xADDR, then optionally /LEN (1, 2, 4, 8) and /w or
 * /rw (':' works as the separator too, except inside WEFT_OPTIONS, whose keys it separates).
 * Fills out[] (WEFT_MAX_WATCH entries); returns how many, or -EINVAL with the reason in why. */
WEFT_HIDDEN int weft_watch_parse(const char *list, struct weft_watch_spec *out, char *why, size_t n);
/* preload/elfsym.c: every defined symbol of an ELF file (.symtab, else .dynsym) to fn, which
 * returns nonzero to stop; *is_exec: an ET_EXEC file (values are addresses). 0 or -errno. */
WEFT_HIDDEN int weft_elf_symbols(const char *path, int *is_exec,
				 int (*fn)(void *arg, const char *name, uint64_t value, uint64_t size, int type),
				 void *arg);
/* A data symbol of the running executable: its run-time address and size. 0, -ENOENT or -errno. */
WEFT_HIDDEN int weft_exe_symbol(const char *name, uint64_t *addr, uint64_t *size);
WEFT_HIDDEN int weft_parse_cpulist(const char *s, uint64_t *mask);
WEFT_HIDDEN int weft_expand_output(const char *pattern, const char *name, char *out, size_t n);
/* The host this process records as: the host= option, else gethostname(). */
WEFT_HIDDEN void weft_host(char *out, size_t n);

/* ---- fdfile.c: weft's own files, never written through a descriptor it lost ---- */
#include <sys/types.h>
struct weft_file {
	int fd;
	int slot; /* the high number it was given first: a reopen takes it (or the next free) again */
	dev_t dev;
	ino_t ino;
	char path[1024 + 64];
};
WEFT_HIDDEN int weft_file_own(struct weft_file *f, int fd, const char *path);
WEFT_HIDDEN int weft_file_fd(struct weft_file *f); /* checked (or reopened) fd, or -errno */
WEFT_HIDDEN void weft_file_close(struct weft_file *f);
/* The descriptors weft keeps open for reading (perf events, /proc and /sys files) moved out
 * of the program's way: fd itself, or a close-on-exec copy at a high number (fd closed). A
 * program that closes every descriptor and opens its own files must not find its files under
 * weft's old numbers (weft would read, and so consume, their data). Never fails. */
WEFT_HIDDEN int weft_fd_high(int fd);
/* Appends iov[0..n) (n <= 8) whole, or nothing: 0 or -errno. A descriptor closed by the
 * program on the way is found again and the record written again (fdfile.c). */
struct iovec;
WEFT_HIDDEN int weft_file_append(struct weft_file *f, const struct iovec *iov, int n);

/* ---- log ---- */
WEFT_HIDDEN void weft_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- clock.c ---- */
struct weft_clock_point { uint64_t ticks, boot_ns, real_ns; };
WEFT_HIDDEN int weft_clock_kind(void); /* 0 ns, 1 tsc, 2 cntvct */
WEFT_HIDDEN uint64_t weft_clock_nominal_hz(void);
WEFT_HIDDEN void weft_clock_sample(struct weft_clock_point *p);
WEFT_HIDDEN uint64_t weft_boottime_ns(void);
WEFT_HIDDEN double weft_ticks_per_ns(void); /* best current estimate */

/* ---- glob ---- */
WEFT_HIDDEN int weft_glob_match(const char *pat, const char *s);
WEFT_HIDDEN int weft_glob_list_match(const char *list, const char *s, int empty_means);
/* 0 if pat is a valid pattern, else -EINVAL with regerror's words in err */
WEFT_HIDDEN int weft_glob_check(const char *pat, char *err, size_t errlen);
WEFT_HIDDEN int weft_glob_list_check(const char *list);

/* ---- api.c ---- */
WEFT_HIDDEN void weft_rates_flush(void); /* stop: pending rate counts as final points */

/* ---- registry.c ---- */
WEFT_HIDDEN void weft_registry_reevaluate(void);
WEFT_HIDDEN void weft_registry_write_all(void); /* re-emit every site/track (fork child) */
WEFT_HIDDEN void weft_registry_atfork_prepare(void);
WEFT_HIDDEN void weft_registry_atfork_parent(void);
WEFT_HIDDEN void weft_registry_atfork_child(void);

/* ---- meta.c ---- */
WEFT_HIDDEN int weft_meta_open(const char *dir, int pid, char *stem, size_t stemlen);
WEFT_HIDDEN int weft_in_job(void); /* a launcher gave this process a rank (job.c); under weft_g.lock */
WEFT_HIDDEN void weft_meta_close(void);
WEFT_HIDDEN void weft_meta_write(unsigned type, const void *a, size_t alen, const void *b, size_t blen);
WEFT_HIDDEN void weft_meta_clock(void);
WEFT_HIDDEN void weft_meta_clock_try(void);
WEFT_HIDDEN void weft_meta_write_failed(int err); /* events could not be written: say so once */
WEFT_HIDDEN void weft_meta_process(void);
WEFT_HIDDEN void weft_meta_atfork_prepare(void);
WEFT_HIDDEN void weft_meta_atfork_parent(void);
WEFT_HIDDEN void weft_meta_atfork_child(void);

/* ---- chunk pool and queue (thread.c) ---- */
struct weft_thread;
struct weft_chunk {
	struct weft_chunk *next;
	struct weft_thread *owner; /* its thread (never freed): a chunk that cannot be written
				    * counts its events as that thread's drops */
	uint32_t tid;
	uint32_t events;
	uint64_t seq;
	size_t used;
	int recycle; /* 0 at shutdown: the owner thread may still write past `used` */
	char *data;
};
WEFT_HIDDEN struct weft_chunk *weft_queue_pop_wait(int *stopping); /* writers */
WEFT_HIDDEN void weft_pool_release(struct weft_chunk *c);           /* writers */
WEFT_HIDDEN void weft_pool_spare(void); /* writers: free chunks made ahead while the pool grows */
WEFT_HIDDEN void weft_threads_flush_all(void);                      /* stop */
WEFT_HIDDEN void weft_threads_count_late(void); /* stop: events committed after the flush */
WEFT_HIDDEN void weft_chunk_unwritten(struct weft_chunk *c, uint32_t events); /* writers */
/* chunkindex.c: the chunk's CHUNK_INDEX record (format 1.8) in this process's metadata, for the
 * chunk written as the frame at `offset` of events file `file`. ix: its times, depth and flags
 * from weft_pack_indexed; NULL: computed here from c's records, which must still be absolute (not
 * delta-coded). tail: tlen bytes after the entry (1.13: the chunk's function addresses,
 * funcset.h, where ix's flags have WEFT_IX_FUNCS). */
struct weft_index_rec;
WEFT_HIDDEN void weft_index_chunk(const struct weft_chunk *c, const struct weft_index_rec *ix, unsigned file,
				  uint64_t offset, const void *tail, size_t tlen);
WEFT_HIDDEN void weft_threads_atfork_prepare(void);
WEFT_HIDDEN void weft_threads_atfork_parent(void);
WEFT_HIDDEN void weft_threads_atfork_child(void);
WEFT_HIDDEN void weft_pool_init(void);
WEFT_HIDDEN void weft_pool_wake_all(void);
WEFT_HIDDEN void weft_threads_after_fork(void);

/* ---- writer.c ---- */
WEFT_HIDDEN int weft_writers_start(const char *dir, const char *stem, int pid);
WEFT_HIDDEN void weft_writers_stop(void);
WEFT_HIDDEN void weft_writers_atfork_prepare(void);
WEFT_HIDDEN void weft_writers_atfork_parent(void);
WEFT_HIDDEN void weft_writers_atfork_child(void);
/* endwatch.c: the process ends (exit(0), as glibc would) once only weft's threads are left.
 * Each runtime thread calls weft_endwatch_own_thread first; weft_endwatch_start (child: in a
 * fork child) opens what the check reads, before the writers start; writer 0 calls
 * weft_endwatch_check every 100 ms. */
WEFT_HIDDEN void weft_endwatch_own_thread(void);
WEFT_HIDDEN void weft_endwatch_start(int child);
WEFT_HIDDEN void weft_endwatch_check(void);

/* ---- session.c: global state ---- */
enum weft_run_state { WEFT_RUN_NEW = 0, WEFT_RUN_ON = 1, WEFT_RUN_FAILED = 2, WEFT_RUN_STOPPED = 3 };
struct weft_global {
	pthread_mutex_t lock;      /* guards start/stop and config */
	_Atomic int run;           /* enum weft_run_state */
	int pid;
	char dir[1024];
	char stem[320]; /* file name stem: pid or HOST-rRANK-pid (in a job), .N after exec */
	_Atomic uint64_t events, dropped, after_stop, bytes_raw, bytes_written, chunks;
	_Atomic uint64_t func_filtered; /* function events left out by func_depth/func_min */
	int in_signal; /* weft_stop runs where nothing may be allocated or freed: 1, from a fatal
			* signal's handler; 2, from _exit (WEFT_QUICK_EXIT: perhaps in a handler) */
	/* set by the preload library: its function hooks stop and fold their counts in (the run
	 * stopped, before the data sources stop: collect/source.h) */
	void (*before_stop)(void);
	_Atomic uint64_t writer_cpu_ns, slow_paths; /* the run's own overhead */
	/* Run-time control (control.c): `paused` is set and cleared by the control thread (the
	 * `disable` and `enable` commands, weft record --delay) and read by the registry and the
	 * preload runtime's function hooks; `disabled` counts the events emitted while paused
	 * (not recorded, not drops), written at stop as a DISABLED record. */
	_Atomic int paused;
	_Atomic uint64_t disabled;
	void (*on_pause)(int paused); /* set by the preload library: its function hooks follow */
};
/* Set while the calling thread is inside the runtime's slow paths (holding its locks): a
 * signal handler that finds it set must not stop the trace from this thread. */
WEFT_HIDDEN extern __thread int weft_in_runtime WEFT_TLS;
/* fatal.c: the locks a fatal signal's snapshot needs, as this thread holds them (one bit
 * each: set by weft_lock once held, cleared by weft_unlock before the unlock), and taking
 * them from weft's fatal-signal handler: -EDEADLK where this thread holds the lock, a wait
 * for any other holder until 5 s after the signal (weft_fatal_begin), then -ETIMEDOUT. */
enum {
	WEFT_HOLD_POOL = 1,
	WEFT_HOLD_THREADS = 2,
	WEFT_HOLD_SELF = 4,
	WEFT_HOLD_RING = 8,
	WEFT_HOLD_DUMP = 16,
	WEFT_HOLD_SNAP = 32,
	WEFT_HOLD_META = 64,
	WEFT_HOLD_EVICT = 128,
};
WEFT_HIDDEN extern __thread unsigned weft_held WEFT_TLS;
WEFT_HIDDEN extern __thread int weft_fatal_thread WEFT_TLS; /* inside weft's fatal handler */
WEFT_HIDDEN void weft_lock(pthread_mutex_t *m, unsigned bit);
WEFT_HIDDEN void weft_unlock(pthread_mutex_t *m, unsigned bit);
WEFT_HIDDEN int weft_lock_fatal(pthread_mutex_t *m, unsigned bit);
WEFT_HIDDEN void weft_fatal_begin(void);
WEFT_HIDDEN int weft_fatal_expired(void);
WEFT_HIDDEN void weft_fatal_pause(void); /* 1 ms */
WEFT_HIDDEN const char *weft_held_name(unsigned bit);
WEFT_HIDDEN void weft_fatal_report(const char *reason, const char *why);
/* Set when the thread's end was recorded (its key destructor): the frees glibc makes for it
 * afterwards are not recorded as a new thread's. */
WEFT_HIDDEN extern __thread int weft_thread_ended WEFT_TLS;
/* Called first by each of the runtime's own threads that writes records (a sched reader, a
 * sampler): names it (pthread_setname_np) and marks its THREAD records as weft's. */
WEFT_HIDDEN void weft_thread_own(const char *name);
WEFT_HIDDEN int weft_parse_duration(const char *s, uint64_t *ns);
WEFT_HIDDEN extern struct weft_global weft_g;
WEFT_HIDDEN int weft_ensure_started(void);
/* The fork handlers of a part of the runtime that is not a data source (snapshot.c, control.c;
 * a data source has them in its row, collect/source.h, run before these in prepare and after
 * them in parent and child), run by the runtime's own (pthread_atfork alone orders handlers
 * by registration, and a child handler that starts a thread could run before another's lock
 * is reinitialised). prepare: after weft_g.lock and before every other runtime lock, newest
 * first; parent: after the runtime's locks are released, oldest first; child: once the child's
 * runtime is reinitialised and its trace restarted (or found off), oldest first, inside the
 * runtime (weft_in_runtime set: threads it creates are weft's). A child handler must work
 * without its prepare (it may have been added while the fork was under way). Any may be
 * NULL. Returns 0, or -ENOSPC past 8 collectors. */
struct weft_fork_hooks {
	void (*prepare)(void);
	void (*parent)(void);
	void (*child)(void);
};
WEFT_HIDDEN int weft_fork_hooks_add(const struct weft_fork_hooks *h);
/* ---- heap.c ---- */
WEFT_HIDDEN void weft_heaps_atfork_prepare(void);
WEFT_HIDDEN void weft_heaps_atfork_parent(void);
WEFT_HIDDEN void weft_heaps_atfork_child(void);
/* collect/counters.c: per-slice counters (a data source: collect/source.h). thread opens the
 * calling thread's group (a new thread, before its code); read fills v with the calling
 * thread's values now and returns how many (0: none). */
WEFT_HIDDEN void weft_counters_thread(void);
WEFT_HIDDEN int weft_counters_on(void);
WEFT_HIDDEN int weft_counters_read(uint64_t *v);

/* ---- control.c: the channel from weft record (control=) ---- */
/* Before the trace starts (under weft_g.lock): connects to the control socket and takes the
 * recorder's state. 1: the recorder's trace is stopped (this process must not start one),
 * 0 otherwise (paused set as the recorder says; no socket or no answer: not paused). */
WEFT_HIDDEN int weft_control_hello(void);
/* Once the trace runs: the control thread that applies the recorder's commands. */
WEFT_HIDDEN void weft_control_start(void);
/* The process ends with this wait status (an exit's, or a fatal signal's before its default
 * action): said to weft record (`bye STATUS`), whose supervisor of a rank cannot wait for it.
 * Async-signal-safe. */
WEFT_HIDDEN void weft_control_bye(int wait_status);
/* posix_spawn started pid: the recorder waits for its image to say hello (record-procs.h),
 * should this process end before it does. */
WEFT_HIDDEN void weft_control_spawned(int pid);
/* preload/maps.c: the lines of /proc/self/maps this process image has not written yet, as a
 * MAPS record (at start, after dlopen); in a fork child, the whole map again */
WEFT_HIDDEN void weft_maps_record(void);
WEFT_HIDDEN void weft_maps_fork_child(void);
/* Pause or resume recording (paused: every site's events counted as disabled). */
WEFT_HIDDEN void weft_control_pause(int paused);
/* ---- live.c: what weft top sees of this process (docs/top.md) ---- */
/* Session start: counting from the start with live=1. */
WEFT_HIDDEN void weft_live_start(void);
/* Fork (session.c, in this order: after the writers' locks, which a writer holds while it
 * takes live.c's): the lock taken, released; the child's states emptied (before its writers
 * start). */
WEFT_HIDDEN void weft_live_atfork_prepare(void);
WEFT_HIDDEN void weft_live_atfork_parent(void);
WEFT_HIDDEN void weft_live_atfork_child(void);
/* A chunk about to be packed (a writer, or a flight recorder's eviction): its records keep the
 * thread's stack of open slices, and, once watched, calls and self times. */
WEFT_HIDDEN void weft_live_chunk(uint32_t tid, uint64_t seq, const void *data, size_t used);
/* What the writers do for it: 0 nothing (no recorder can ask), 1 keep the stacks (packing's
 * summary: weft_live_chunk_opens after weft_pack5_indexed_opens), 2 the whole walk
 * (weft_live_chunk before packing: someone watches). */
WEFT_HIDDEN int weft_live_wanted(void);
/* The chunk's stack summary from the packing pass (chunkindex.h's opens, depth delta and low);
 * the records are walked instead where it cannot stand for them. */
WEFT_HIDDEN void weft_live_chunk_opens(uint32_t tid, uint64_t seq, const void *data, size_t used, int32_t delta,
				       int32_t low, const uint32_t *opens, int jumps, uint32_t events,
				       uint32_t dropped);
/* The control thread's answer to `top` (docs/top.md's lines), malloc'd in *out: 0 or -ENOMEM. */
WEFT_HIDDEN int weft_live_report(char **out, size_t *len);
/* registry.c: whether site id is named MPI_* (no lock: safe on a writer) */
WEFT_HIDDEN int weft_registry_is_mpi(uint32_t id);
/* registry.c: the name of site id (0), or -ENOENT (takes the registry's lock) */
WEFT_HIDDEN int weft_registry_name(uint32_t id, char *out, size_t n);
/* meta.c: the launcher's view of this process (job.h) */
struct weft_job;
WEFT_HIDDEN const struct weft_job *weft_job_this(void);
/* ---- flight.c: the flight recorder (flight=) ---- */
struct weft_chunk_header;
WEFT_HIDDEN int weft_flight_start(void);   /* session start, before the metadata: 0 or -errno */
/* 0: no flight recorder in this process; 1: one runs (its events are kept in the ring); 2: one
 * runs with noexit (no snapshot at the program's exit) */
WEFT_HIDDEN int weft_flight_active(void);
/* In flight mode, a program thread that finds the writers behind takes the oldest chunk
 * waiting for them instead of dropping its own newest events, and puts it into the ring itself
 * (packed, as a writer would). thread.c's pool_get, inside the runtime. */
WEFT_HIDDEN void weft_flight_evict_chunk(const struct weft_chunk *c);
/* A snapshot is being made: the chunks waiting for the writers are its newest part, and are
 * not taken (what the threads record meanwhile comes after its end, and is dropped). */
WEFT_HIDDEN int weft_flight_dumping(void);
/* writers: a packed (and compressed) chunk as write_chunk would write it, into the ring */
WEFT_HIDDEN void weft_flight_put(const struct weft_chunk *c, const struct weft_chunk_header *h,
				 const void *payload, size_t stored);
/* meta.c (under its lock): a metadata record (iov[0] its header), kept in memory */
WEFT_HIDDEN void weft_flight_meta(const struct iovec *iov, int n);
/* Writes the ring's window as the next DIR/snapshot-N (complete when it returns: written under
 * a temporary name, renamed): N, 0 when no flight recorder runs here, or -errno. after_ns: that
 * much more data after trigger_ticks first. Safe from a fatal signal handler (weft_g.in_signal):
 * allocates nothing, never waits for a lock this thread holds (-EDEADLK), waits for other
 * holders and for the writers until 5 s after the signal (-ETIMEDOUT; fatal.c). */
WEFT_HIDDEN int weft_flight_dump(const char *reason, uint64_t trigger_ticks, uint64_t after_ns);
/* Why the last dump from a fatal handler failed to take a lock ("" if it did not). */
WEFT_HIDDEN const char *weft_flight_fail_why(void);
WEFT_HIDDEN void weft_flight_finish(void); /* weft_stop: the exit snapshot unless noexit; frees */
WEFT_HIDDEN void weft_flight_writer_exit(void); /* a writer thread's end */
/* weft_flight_dump writing DIR/KIND-N (kind "snapshot" or "part") */
WEFT_HIDDEN int weft_flight_dump_as(const char *kind, const char *reason, uint64_t trigger_ticks, uint64_t after_ns);
/* flight-switch.c: --switch-output=SIZE|TIME, consecutive parts DIR/part-N through the ring */
WEFT_HIDDEN uint64_t weft_switch_ring_size(void); /* the ring a recording needs (flight_size too) */
WEFT_HIDDEN int weft_switch_start(void);           /* its thread (flight start): 0 or -errno */
WEFT_HIDDEN void weft_switch_note(uint64_t pending, uint64_t ring); /* writers: bytes not in a part yet */
WEFT_HIDDEN void weft_switch_stop(void);
/* part-NUMBER written by this process: with switch_max_files=N, its own part N before goes
 * (the processes of a run share DIR and its numbering; each keeps its last N) */
WEFT_HIDDEN void weft_switch_written(int number);
WEFT_HIDDEN void weft_switch_atfork_child(void);
WEFT_HIDDEN void weft_flight_atfork_prepare(void);
WEFT_HIDDEN void weft_flight_atfork_parent(void);
WEFT_HIDDEN void weft_flight_atfork_child(void);
/* thread.c: each live thread's current chunk (its seq, and the bytes committed so far; data
 * NULL and seq the next one when it has none), under the thread's lock (try: trylock, skipping
 * a thread whose lock is taken). */
WEFT_HIDDEN void weft_threads_visit(int try, void (*fn)(void *ud, uint32_t tid, uint32_t serial, uint64_t seq,
						       const char *data, size_t used), void *ud);

/* ---- snapshot.c: snapshot requests (issue 20) ---- */
enum weft_snap_origin {
	WEFT_SNAP_API = 0,     /* weft_snapshot() / weft.snapshot() */
	WEFT_SNAP_COMMAND = 1, /* the control channel: --control, weft snapshot DIR */
	WEFT_SNAP_SIGNAL = 2,  /* --snapshot-signal=SIG */
	WEFT_SNAP_TRIGGER = 3, /* --trigger 'PATTERN>DURATION' */
	WEFT_SNAP_FATAL = 4,   /* a fatal signal */
	WEFT_SNAP_EXIT = 5,    /* the program's exit */
};
/* Take a snapshot now (throttles, marker, and the flight recorder's dump where one runs).
 * 0, or -errno (-ENOTSUP, -EBUSY when throttled). */
int weft_snapshot_take(const char *reason, enum weft_snap_origin origin);
/* Async-signal-safe: a snapshot requested by a signal, taken by the runtime's snapshot thread
 * (never in the handler: a snapshot allocates and writes). */
WEFT_HIDDEN void weft_snapshot_signal_request(void);
/* Session start (under weft_g.lock): the fork handler, and the snapshot thread, where a
 * trigger or a signal can ask for a snapshot, when snapshot_signal= or trigger= is set. */
WEFT_HIDDEN void weft_snapshot_start(void);
/* For weft_flight_dump only (the request it is writing): the SNAPSHOT record's first 24 bytes
 * for snapshot `number` in head, and its reason (the record's rest, with its NUL), so that
 * DIR/snapshot-N holds the marker of the request that wrote it (the trace's own gets it after
 * the dump returns, with N). */
WEFT_HIDDEN const char *weft_snapshot_current(unsigned char head[24], uint32_t number);
/* A watched slice (trigger.c) named name lasted ns, longer than min_ns: a request for the
 * snapshot thread. No lock, no allocation; refused (and counted) when requests pile up. */
WEFT_HIDDEN void weft_snapshot_trigger(const char *name, uint64_t ns, uint64_t min_ns, uint64_t ticks);
/* Blocks this thread's asynchronous signals (all but the synchronous ones: a fault or a trap
 * cannot wait) while the runtime does something longer than an event that a terminating signal
 * must not cut short (a stop, a fork child's restart, reading the maps): weft's handler cannot
 * finish the trace while this thread is inside the runtime, so the process would die with its
 * trace unfinished. weft_release_async_signals puts the mask back; a signal that came in
 * between is delivered then. */
struct weft_held_signals {
	sigset_t old; /* the mask before */
	int held;     /* 1: blocked (0: pthread_sigmask failed, nothing to put back) */
};
WEFT_HIDDEN void weft_hold_async_signals(struct weft_held_signals *h);
WEFT_HIDDEN void weft_release_async_signals(const struct weft_held_signals *h);
/* weft_stop on the way out of the process (exit's handlers, _exit, exec) with the program's
 * asynchronous signals held while it runs (session.c says why); restore: the mask back after
 * (the signal held meanwhile is then delivered), 0 for _exit (the status the program chose
 * first stands). */
WEFT_HIDDEN int weft_stop_leaving(int restore);
/* weft_stop, first thing: the exit snapshot where a flight recorder runs (not noexit). */
WEFT_HIDDEN void weft_snapshot_at_exit(void);
/* A fatal signal (signals.c, in the handler, before the trace stops): a snapshot that
 * allocates nothing; reason is a string literal. */
/* From _exit (weft_g.in_signal == WEFT_QUICK_EXIT): the flight recorder's exit snapshot, as
 * weft_snapshot_at_exit takes it at exit, allocating nothing (as weft_snapshot_fatal). */
WEFT_HIDDEN void weft_snapshot_quick_exit(void);
#define WEFT_QUICK_EXIT 2
WEFT_HIDDEN void weft_snapshot_fatal(const char *reason);

/* ---- trigger.c: trigger=PATTERN>DURATION (issue 20) ---- */
/* Parses a trigger= list: 0, or -EINVAL with why. n triggers at most (WEFT_MAX_TRIGGERS). */
#define WEFT_MAX_TRIGGERS 8
struct weft_trigger_spec {
	char pattern[256];
	uint64_t min_ns; /* a slice lasting longer than this */
};
WEFT_HIDDEN int weft_trigger_parse(const char *list, struct weft_trigger_spec *out, char *why, size_t n);
/* registry.c's evaluate(), for an event site being registered (under its lock): 1 when the
 * site's slices are watched (the site then takes the EXACT path, whose weft__cpumem calls
 * weft_trigger_slice); exact: cpu_mem_exact= also matches it. */
WEFT_HIDDEN int weft_trigger_site(uint32_t id, const char *name, int exact);
/* weft__cpumem (collect/procstat.c): a watched slice's begin (at_end 0: its time is kept) or
 * end (1: before the END; weft__exact_end checks after it). Returns 1 when the CPUMEM record
 * is wanted too (cpu_mem_exact= matches the site, or it is no trigger's). */
WEFT_HIDDEN int weft_trigger_slice(uint32_t id, unsigned at_end);
/* Set (release) once a trigger site is registered: weft__cpumem asks weft_trigger_slice only then. */
WEFT_HIDDEN extern int weft_triggers_on;

#endif
