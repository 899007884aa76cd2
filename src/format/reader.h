/*
 * reader.h - loads a trace directory into memory: every process's metadata (call sites,
 * tracks, threads, clock calibration, totals) and every thread's decompressed records in
 * chunk order, with timestamps still in ticks (weft_proc_ns converts). Damage is salvaged,
 * never fatal: a truncated or corrupt frame ends or skips that part of a file with a warning
 * in `warnings`, and everything readable is kept. Only an unusable directory (missing, no
 * weft files, a newer major version) is an error.
 */
#ifndef WEFT_READER_H
#define WEFT_READER_H

#include <stddef.h>
#include <stdint.h>
#include "hosts.h"
#include "chunkindex.h"

struct weft_site_def {
	uint32_t id;
	uint8_t kind, is_double, defined;
	char *name, *cat, *unit;
	char *file;    /* its source location (SOURCE record, 1.4), or NULL */
	uint32_t line;
};

/* A chunk as stored; weft_chunk_decode gives its records. */
struct weft_chunk_view {
	uint64_t seq;
	uint32_t events, dropped; /* from the frame header */
	const unsigned char *stored;
	uint32_t stored_size, raw_size, flags;
	const struct weft_ns_fix *fix; /* its process's host correction (hosts.h), or NULL */
	struct weft_index_rec ix;      /* its time index entry (CHUNK_INDEX, 1.8), when has_ix */
	int has_ix;
	/* where ix.flags has WEFT_IX_FUNCS (1.13): its function addresses, funcs_n of them from
	 * its process's ix_funcs[funcs_at] (until the process is symbolized) */
	uint32_t funcs_at, funcs_n;
};

struct weft_thread_data {
	uint32_t tid;
	uint32_t serial; /* the runtime's number for the thread: tells reused tids apart */
	char *name;
	struct weft_chunk_view *chunks;
	size_t nchunks, cap;
	uint64_t events;  /* events in its chunks (frame headers) */
	uint64_t dropped; /* sum of DROPPED records, or THREAD_END if larger */
	int ended;        /* THREAD_END seen */
	uint64_t seq_end; /* chunks the thread handed off (THREAD_END), to find missing ones */
	int weft_own;     /* a thread of weft's runtime, not the program's (THREAD flags) */
};

struct weft_clock_pt { uint64_t ticks, boot_ns, real_ns; };

/* The system sampler (format 1.5): a channel (SYS_CHANNEL) and a source's last word (SYS_SOURCE). */
struct weft_sys_chan_def {
	uint32_t id;
	unsigned kind, index; /* enum weft_sys_kind; the CPU, GPU or RAPL zone */
	uint64_t aux;         /* RAPL: max_energy_range_uj */
	char *name;
};
struct weft_sys_src_def {
	int present;        /* a SYS_SOURCE record of this source was read */
	uint32_t state;     /* enum weft_sys_state */
	uint32_t tid;       /* the sampler thread */
	uint64_t period_ns;
	char *text;         /* what it samples, or why it cannot */
};
#define WEFT_SYS_NSOURCES 8 /* sys_sources[] is indexed by enum weft_sys_source */

/* The GPU collector (format 1.6): a point of the device -> host clock map (GPU_CLOCK: boot_ns
 * the middle of the host readings around the device one, width their distance), and a GPU. */
struct weft_gpu_clock_pt { uint64_t gpu_ns, boot_ns, width; };
struct weft_gpu_device_def {
	uint32_t id, sms, cc_major, cc_minor, max_warps_sm, max_blocks_sm, max_shared_sm, max_regs_sm;
	uint32_t max_regs_block, max_shared_block, max_threads_block, warp_size, clock_khz;
	uint64_t global_mem;
	char name[256];
};
#define WEFT_GPU_MAX_TIDS 16

struct weft_proc {
	int pid, ppid;
	int gen;       /* 0, or N for the N-th image after exec (files PID.N.*) */
	char stem[320]; /* file name stem: PID[.N], HOST-rRANK-PID[.N] in a job; DIR#/ before it when
			 * several directories are loaded */
	char *name, *host, *options;
	char **notes; /* NOTE records' texts, in order */
	char *sources; /* SOURCES: "NAME: what it records\n" per data source that ran, or NULL */
	size_t nnotes;
	char **argv;
	int argc;
	uint64_t start_ns;
	int clock_kind; /* 0 ns, 1 tsc, 2 cntvct */
	int clock_said; /* its metadata has the CLOCK_SOURCE record (every weft writes one) */
	uint64_t nominal_hz;
	struct weft_clock_pt *clock;
	size_t nclock;
	/* tick -> ns: ns = base_ns + ((ticks - base_ticks) * mult) >> 32 */
	uint64_t base_ticks, base_ns;
	unsigned __int128 mult;
	struct weft_site_def *sites; /* indexed by id */
	size_t nsites;
	/* argument keys "file" and "line" (sites the reader adds when some site has a source
	 * location): the walker gives those sites' events these two arguments; 0 when none has */
	uint32_t key_file, key_line;
	char **tracks; /* indexed by track id */
	size_t ntracks;
	struct weft_thread_data *threads;
	size_t nthreads, thread_cap;
	uint64_t *thkey; /* hash table (tid, serial) -> index in threads */
	size_t *thidx, thcap;
	/* every MAPS record's text, concatenated, maps_len bytes: kept zstd-compressed (maps_z,
	 * maps_zlen; maps NULL) once its metadata file is read, since a process's map is tens of
	 * KB of text held for every rank of a job; read it with weft_proc_maps. A reader that
	 * fills in a process itself may set maps (and maps_len) plainly instead. */
	char *maps;
	size_t maps_len;
	void *maps_z;
	size_t maps_zlen;
	uint64_t *func_addr;   /* open-addressing table: function address -> site id */
	uint32_t *func_id;
	size_t func_cap, nfuncs;
	uint64_t func_filtered; /* left out by func_depth=/func_min= */
	int has_window;         /* WINDOW (1.8): the trace is a flight recorder's snapshot */
	uint64_t window[9];     /* start, end, trigger ticks; not in window, in window, slices
				 * re-emitted; the ring's events taken, evicted, written in snapshots */
	uint32_t window_number;
	int has_ring;           /* RING (1.9): the ring's size, bytes held and their events then */
	uint64_t ring[3];
	char *window_reason;
	uint64_t disabled;      /* emitted while recording was disabled (DISABLED, 1.8) */
	uint64_t writer_cpu_ns, slow_paths; /* overhead, from a clean stop */
	int has_overhead;
	int has_meta, finished;
	int symbolized; /* weft_symbolize ran (at open, or later where weft_trace_defer_symbols) */
	uint32_t write_errno;     /* writing events failed with this errno (later chunks dropped) */
	uint32_t end_signal, end_signal_tid; /* the fatal signal that ended it, and on which thread */
	uint64_t end_signal_ticks;
	uint64_t fin[7]; /* events, dropped, after_stop, bytes_raw, bytes_written, chunks, end_ns */
	int mem_recorded, mem_stacks; /* the allocation interposer ran (MEMORY record) */
	uint64_t mem_threshold, mem_sample, mem_sample_full;
	uint32_t mem_nested_lost; /* allocation calls of signal handlers dropped (inside another event) */
	int mem_not_interposed; /* the program's own malloc came first: not recorded */
	uint32_t fork_tid;      /* FORK (a fork child): the parent's thread that forked, 0: none */
	uint64_t fork_ticks;    /* and when */
	char *mem_allocator;    /* the allocator's object when not glibc's (or the program's own) */
	int has_rusage;                       /* RUSAGE record (at a clean stop) */
	int has_access;                       /* ACCESS totals: memory access sampling ran */
	uint64_t access_samples, access_lost, access_throttled;
	uint64_t access_own;                  /* (1.6) samples left out: weft's own memory */
	uint32_t access_source;               /* its source (enum weft_access_source; 0 unknown) */
	int has_sched;                        /* SCHED record (1.5): sched=1 was asked for here */
	uint32_t sched_mode, sched_cpus, sched_readers; /* mode: 0 unavailable, 1 tracepoints, 2 own switches */
	uint64_t sched_records, sched_lost;
	char sched_release[65], sched_machine[65]; /* uname() of the recording machine */
	char sched_why[200];                  /* mode 0: why */
	uint32_t sched_pinned;                /* reader threads pinned to their CPUs */
	char sched_sets[2048];                /* each reader's CPUs, '/' between readers ("" from older weft) */
	uint64_t sched_unreported;            /* switches the kernel did not report (0 from older weft) */
	struct weft_watch_total {             /* WATCH record: watch= hardware watchpoints */
		uint64_t addr, hits;
		uint32_t len, source;
		char name[128];               /* the symbol, or "" for an address */
	} watches[4];
	size_t nwatches;
	int has_watch;
	uint64_t watch_lost, watch_unwatched; /* samples lost; threads whose watchpoints failed */
	uint64_t max_rss, user_ns, sys_ns;
	struct weft_sys_chan_def *sys_chans; /* SYS_CHANNEL records, in order */
	size_t nsys_chans;
	struct weft_sys_src_def sys_sources[WEFT_SYS_NSOURCES];
	int has_sys_overhead;                /* SYS_OVERHEAD: the sampler thread's own cost */
	uint64_t sys_cpu_ns, sys_wall_ns, sys_rounds;
	/* COUNTERS record (1.5, counters=): the counters whose values slice records carry, in
	 * their order; flags 1 user space only, 2 rdpmc */
	unsigned nctr;
	uint32_t ctr_flags;
	char ctr_names[8][32];
	/* GPU (format 1.6, gpu=1): the collector's last word (state 0 unavailable, 1 used), the
	 * threads whose chunks hold GPU records, the clock map's points in file order, the GPUs */
	int has_gpu;
	uint32_t gpu_state, cupti_version, gpu_ntids;
	uint32_t gpu_tids[WEFT_GPU_MAX_TIDS];
	uint64_t gpu_records, gpu_dropped, gpu_buffers, gpu_api_calls;
	char gpu_text[512];
	struct weft_gpu_clock_pt *gpu_clock;
	size_t ngpu_clock;
	struct weft_gpu_device_def *gpu_devices;
	size_t ngpu_devices;
	/* A task of a parallel job (format 1.7): JOB from the launcher's environment, MPI from the
	 * MPI wrappers (its rank is MPI's: it wins over the launcher's), CLOCK_SYNC offsets to the
	 * reference rank's clock measured over MPI */
	int has_job;
	uint32_t job_rank, job_size, job_local_rank, job_local_size; /* WEFT_RANK_NONE / 0: unknown */
	char *job_id, *job_launcher;
	int has_mpi;
	int rank_carrier; /* has_job, no MPI, while a process of its rank has: a wrapper that only
			   * carried the rank's environment (a shell, unshare), not named as the rank */
	uint32_t mpi_rank, mpi_size, mpi_flavor, mpi_flags;
	uint64_t mpi_calls, mpi_sent, mpi_received, mpi_undrawn;
	char *mpi_library;
	struct weft_clock_sync {
		uint32_t phase, ref_rank;
		int64_t offset_ns;  /* reference BOOTTIME - this process's BOOTTIME at `at` */
		uint64_t at_ns, rtt_ns;
		uint32_t rounds;
		uint32_t took_us; /* the phase's cost on this process (0: not measured) */
		char ref_host[64];
	} *clock_sync;
	size_t nclock_sync;
	/* SNAPSHOT records (1.8): every snapshot request, taken or refused, in order */
	struct weft_snap_mark {
		uint64_t ticks;  /* as recorded: weft_proc_ns() gives its time */
		uint32_t origin; /* enum weft_snap_origin (src/lib/internal.h) */
		uint32_t number; /* DIR/snapshot-N written, 0: none */
		uint32_t refused; /* enum weft_snap_refusal (format.h), 0: taken */
		uint32_t err;    /* refused WEFT_SNAP_FAILED: the errno */
		char *reason;
	} *snaps;
	size_t nsnaps;
	uint64_t bytes_stored, bytes_raw, nchunks_read, bad_chunks;
	struct weft_index_rec *index; /* CHUNK_INDEX records (1.8), until matched to their chunks */
	size_t nindex, index_cap;
	uint64_t *index_funcs; /* per record: its listing (1.13) as (first << 32 | count) in ix_funcs */
	uint64_t *ix_funcs;    /* the listings' addresses (funcset.h), until the process is symbolized */
	size_t nix_funcs, ix_funcs_cap;
	/* hosts.h: the host's index in the trace's hosts (0 the reference), the pid as recorded
	 * (pid may have been made unique), the correction applied when `fixed` */
	unsigned host_index;
	int orig_pid, fixed;
	struct weft_ns_fix fix;
};

/* The process's rank in its job: MPI's world rank, else the launcher's, else WEFT_RANK_NONE. */
uint32_t weft_proc_rank(const struct weft_proc *p);

/* A time window to read (weft_trace_open_window, format/window.c): FROM and TO relative to the
 * trace's first event, each optional (the trace's start, its end). */
struct weft_window_req {
	int from_set, to_set;
	uint64_t from_ns, to_ns;
};
/* What reading the window did (the reader's statistics: tests count decoded chunks with it). */
struct weft_window_info {
	int active;                  /* the trace holds only the window */
	uint64_t from_ns, to_ns;     /* the window, absolute (the trace's clock) */
	uint64_t trace_first_ns, trace_last_ns; /* the whole trace's span */
	uint64_t chunks;             /* chunks of the whole trace */
	uint64_t scanned;            /* decoded to find their times: no index entry */
	uint64_t decoded;            /* decoded to cut the window's edges and find its context */
	uint64_t kept;               /* inside the window, handed on undecoded */
	uint64_t open_slices;        /* slices open at FROM, carried into the window */
	uint64_t counters;           /* counters' last values before FROM, carried in */
};

struct weft_trace {
	char *dir;
	struct weft_window_info window;
	struct weft_proc *procs;
	size_t nprocs, proc_cap;
	size_t *stem_ix, stem_cap; /* while reading (trace.c) */
	char **warnings;
	size_t nwarnings;
	struct { const char *fmt; uint64_t n; char last[512]; } wkinds[32]; /* warnings by kind */
	size_t nwkinds;
	void **blobs; /* file contents owned by the trace */
	size_t nblobs;
	uint64_t first_ns, last_ns; /* span of all events */
	struct weft_hosts hosts;    /* the hosts, aligned onto hosts.h[0]'s clock (hosts.h) */
	int machines; /* set by the caller: the .pftrace gives each host's packets its machine_id */
	uint64_t site_id_max; /* the highest call-site id the metadata read can define (load()) */
};

/* Decompress a chunk into *buf (grown as needed; reuse it across calls) and undo the delta
 * coding of timestamps. *nwords covers complete records only. Returns 0, or with a reason
 * -ENOMEM (no memory for the records) or -EBADMSG (the stored bytes do not decode: a chunk
 * whose checksum matched, so written wrong rather than damaged later). */
int weft_chunk_decode(const struct weft_chunk_view *c, uint64_t **buf, size_t *cap, size_t *nwords,
		      const char **why);
/* Records ready for a walk: timestamps converted to ns (weft_proc_ns), and each function entry
 * or exit given its site id (weft_func_id) in place of the address, with track 0. */
void weft_records_prepare(const struct weft_proc *p, uint64_t *records, size_t nwords);
/* weft_chunk_decode, then weft_records_prepare, in one pass where the chunk is packed. */
int weft_chunk_decode_prepared(const struct weft_chunk_view *c, const struct weft_proc *p, uint64_t **buf,
			       size_t *cap, size_t *nwords, const char **why);

/* Calls fn on the header words of a chunk, each distinct one at least once, without decoding
 * the records where the chunk is packed (a pass that only wants to know which functions or
 * sites a chunk mentions). *buf is scratch as for weft_chunk_decode. Returns as it does. */
int weft_chunk_headers(const struct weft_chunk_view *c, uint64_t **buf, size_t *cap,
		       void (*fn)(uint64_t h, void *ud), void *ud, const char **why);

/* The memory map text of p (its MAPS records, concatenated): a NUL-terminated copy for the
 * caller to free, maps_len bytes; NULL when p recorded none or memory ran out. */
char *weft_proc_maps(const struct weft_proc *p);

/* Open DIR. Returns 0, or -errno with a one-line reason in err. */
int weft_trace_open(const char *dir, struct weft_trace **out, char *err, size_t errlen);
/* Keeps the processes keep() says yes to (in their order), frees the others: the number kept. */
size_t weft_trace_keep(struct weft_trace *t, int (*keep)(const struct weft_proc *p, void *arg), void *arg);
/* Several trace directories as one trace (the hosts of a job that share no filesystem, the
 * runs of one workflow): every directory's processes, in the order given. t->dir is the first
 * directory. Errors as weft_trace_open; a directory without trace files is an error. */
int weft_trace_open_dirs(const char *const *dirs, size_t ndirs, struct weft_trace **out, char *err,
			 size_t errlen);
/* weft_trace_open_dirs, keeping only a time window (docs/time-window.md): every thread's
 * chunks are cut to the window (plus the begins of the slices open at its start and counters'
 * last values before it), so that converters and reports read only that. Errors as
 * weft_trace_open_dirs, and -ERANGE when the window starts after the trace's end. */
int weft_trace_open_window(const char *const *dirs, size_t ndirs, const struct weft_window_req *win,
			   struct weft_trace **out, char *err, size_t errlen);
/* The same on a trace loaded from buffers, for tests: applies the window to t (window.c). */
int weft_trace_window_apply(struct weft_trace *t, const struct weft_window_req *req, char *err, size_t errlen);
/* Load from in-memory file images (used by the fuzzers): names[i] is the file name. */
int weft_trace_from_buffers(const char *const *names, const unsigned char *const *data,
			    const size_t *sizes, size_t n, struct weft_trace **out, char *err,
			    size_t errlen);
void weft_trace_free(struct weft_trace *t);
/* The events its chunks hold, every thread of every process (their frame headers' counts). */
/* Set before an open: function addresses are not named then (weft_symbolize each process
 * later, as a conversion run as a job does for its share). Default 0. */
extern int weft_trace_defer_symbols;
/* Set before an open when only some ranks of a job are read (convert --ranks): the ranks of a
 * job that left no files are then not said in a warning. Default 0: they are. */
extern int weft_trace_rank_subset;
uint64_t weft_trace_events(const struct weft_trace *t);
uint64_t weft_proc_events(const struct weft_proc *p); /* the events in its threads' chunks */

static inline uint64_t weft_proc_ns(const struct weft_proc *p, uint64_t ticks)
{
	int64_t d = (int64_t)(ticks - p->base_ticks);
	if (d >= 0)
		return p->base_ns + (uint64_t)(((unsigned __int128)(uint64_t)d * p->mult) >> 32);
	uint64_t back = (uint64_t)(((unsigned __int128)(uint64_t)(-d) * p->mult) >> 32);
	return back > p->base_ns ? 0 : p->base_ns - back;
}

/* Out of memory in the readers' and converters' bookkeeping (a chunk that cannot be decoded
 * for want of memory is counted and reported instead): weft_oom calls the handler the program
 * set, which must not return (the CLI prints one line and exits 1: the output is incomplete);
 * without one it aborts. `what` says where. */
typedef void (*weft_oom_fn)(const char *what);
void weft_set_oom_handler(weft_oom_fn fn);
__attribute__((noreturn)) void weft_oom(const char *what);

void weft_trace_warn(struct weft_trace *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Adds one "... and N more of this kind" line per kind that had more warnings than shown. */
void weft_trace_warn_close(struct weft_trace *t);
/* Adds a site definition to a process (symbolized functions); returns its id. */
uint32_t weft_proc_add_site(struct weft_proc *p, const char *name, const char *cat);
/* Events the process dropped: per thread, or the runtime's total at a clean stop if larger
 * (it also counts events refused inside a signal handler, which belong to no chunk). */
uint64_t weft_proc_dropped(const struct weft_proc *p);
const char *weft_site_name(const struct weft_proc *p, uint32_t id);
const char *weft_track_name(const struct weft_proc *p, unsigned id);
/* A snapshot request's origin and a refusal, in words ("api", "signal"; "max-snapshots"). */
const char *weft_snap_origin_name(uint32_t origin);
const char *weft_snap_refusal_name(uint32_t refused);

#endif
