/*
 * format.h - the trace directory format, shared by the runtime (writer side), the reader, the
 * converters and the fuzzers. docs/format.md is the prose specification of the same layout.
 *
 * A trace directory holds, per traced process P:
 *   P.wmeta        metadata: a file header, then records {u16 type, u16 0, u32 len, payload}
 *   P-K.wevents    events from writer thread K: a file header, then chunk frames
 * All integers little-endian. A reader accepts any minor version of its major and skips
 * metadata record types it does not know; a newer major version is rejected.
 */
#ifndef WEFT_FORMAT_H
#define WEFT_FORMAT_H

#include <stdint.h>
#include <string.h>
#include "weft_fastpath.h" /* record types and site kinds */

#define WEFT_FMT_MAJOR 1
#define WEFT_FMT_MINOR 16 /* 1: packing version 2; 2: thread serials (chunk seq, THREAD records);
                          * 3: memory records (ALLOC..STACK), RUSAGE; 4: SOURCE records, END flags;
                          * 5: SCHED records and metadata; the system sampler (SAMPLE records,
                          *    SYS_SOURCE, SYS_CHANNEL, SYS_OVERHEAD); the COUNTERS record
                          *    and counter values as extra words of slice records; 6: GPU records, GPU,
                          *    GPU_CLOCK and GPU_DEVICE metadata;
                          * 7: JOB, MPI and CLOCK_SYNC metadata; arguments and flows after an
                          *    END belong to the slice it ends;
                          * 8: DISABLED metadata (events emitted while recording was disabled);
                          *    SNAPSHOT metadata (snapshot requests and refusals);
                          *    CHUNK_INDEX metadata (the chunks' time index, chunkindex.h);
                          *    WINDOW metadata (flight recorder snapshots);
                          * 9: the chunk checksum weft_sum32 (chunk flag WEFT_CHUNK_SUM);
                          *    packing version 3 (memory records' words in columns);
                          * 10: packing version 4 (deltas, memory widths, addresses and sizes in
                          *    fixed-width columns, pack4.h);
                          * 11: MAPS_Z (a MAPS record's lines zstd-compressed);
                          * 12: LEAF records (a slice with nothing inside: its BEGIN and END
                          *    in one record; chunk flag WEFT_CHUNK_LEAF);
                          * 13: a CHUNK_INDEX record lists its chunk's function addresses
                          *    (index flag WEFT_IX_FUNCS, funcset.h);
                          * 14: packing version 5 (pack4.h: the deltas of long-form timestamp
                          *    records but function entries and exits, and flow ids, in the
                          *    columns; chunk flag WEFT_CHUNK_PACKED5);
                          * 15: index flag WEFT_IX_JUMPS (a chunk with LONGJMP records);
                          * 16: a DROPPED record is at the drop's start, and the begins and ends
                          *    that still matter after it follow it (src/lib/dropkeep.h) */
#define WEFT_META_MAGIC "WEFTMETA"
#define WEFT_EVENTS_MAGIC "WEFTEVTS"
#define WEFT_CHUNK_MAGIC 0x4b4e4843u /* "CHNK" */

/* Feature bits in the file header. */
#define WEFT_FEAT_ZSTD 0x1u    /* chunks may be zstd-compressed */
#define WEFT_FEAT_TSC 0x2u     /* timestamps are TSC/counter ticks, calibrated by CLOCK records */

struct weft_file_header { /* 32 bytes */
	char magic[8];
	uint16_t major, minor;
	uint32_t features;
	uint32_t pid;
	uint32_t writer; /* writer index for events files, 0 for meta */
	uint64_t reserved;
};

#define WEFT_CHUNK_ZSTD 0x1u
#define WEFT_CHUNK_PACKED 0x2u  /* records in packing version 1 (pack.h; format 1.0, read only) */
#define WEFT_CHUNK_PACKED2 0x4u /* records in packing version 2 (pack.h) */
#define WEFT_CHUNK_SUM 0x8u     /* checksum is weft_sum32, not FNV-1a (format 1.9) */
#define WEFT_CHUNK_PACKED3 0x10u /* records in packing version 3 (pack.h; format 1.9) */
#define WEFT_CHUNK_PACKED4 0x20u /* records in packing version 4 (pack4.h; format 1.10) */
#define WEFT_CHUNK_LEAF 0x40u    /* the records hold LEAF records (format 1.12): an older reader,
				  * which would misread them, refuses the chunk as a newer weft's */
/* the flags this weft reads; a chunk with any other is a later format's: refused, said so */
#define WEFT_CHUNK_PACKED5 0x80u  /* records in packing version 5 (pack4.h; format 1.14): an older
				   * reader refuses the chunk as a newer weft's */
#define WEFT_CHUNK_KNOWN_FLAGS 0xffu
struct weft_chunk_header { /* 40 bytes */
	uint32_t magic;
	uint32_t flags;
	uint32_t tid;
	uint32_t raw_size;    /* bytes of records once decompressed and unpacked (multiple of 8) */
	uint32_t stored_size; /* bytes that follow this header */
	uint32_t checksum;    /* of the stored bytes: weft_chunk_sum (FNV-1a 32, or weft_sum32) */
	uint64_t seq;         /* the thread's serial << 40 | its chunk index (from 0); see below */
	uint32_t events;      /* events in the chunk (args and flows are part of their event) */
	uint32_t dropped;     /* events dropped just before the chunk (its DROPPED record) */
};

/* Is this file name one of a trace directory's data files (P.wmeta, P-W.wevents)? */
static inline int weft_is_trace_file(const char *name)
{
	const char *dot = strrchr(name, '.');
	return dot && (!strcmp(dot, ".wmeta") || !strcmp(dot, ".wevents"));
}

/* A chunk's seq: the runtime numbers the threads of a process (serial, 24 bits; tids are
 * reused by the kernel) and each thread's chunks (index, 40 bits). Traces before format 1.2
 * have serial 0 everywhere. */
#define WEFT_SEQ_SERIAL_SHIFT 40
#define WEFT_SEQ_INDEX_MASK ((1ull << WEFT_SEQ_SERIAL_SHIFT) - 1)

/* Metadata record types. */
enum weft_meta_type {
	WEFT_M_PROCESS = 1, /* u32 pid, u32 ppid, u64 start_ns, then strings: host, cmdline (\0-sep, \0\0 end) */
	WEFT_M_OPTIONS = 2, /* the options string as given */
	WEFT_M_CLOCK = 3,   /* u64 ticks, u64 boottime_ns, u64 realtime_ns */
	WEFT_M_SITE = 4,    /* u32 id, u8 kind, u8 flags(bit0 double counter), u16 0, then name\0 category\0 unit\0 */
	WEFT_M_TRACK = 5,   /* u32 id, then name\0 */
	WEFT_M_THREAD = 6,  /* u32 tid, then name\0 (also used to rename), then u64 serial (1.2), then
			     * u32 flags (WEFT_THREAD_*; absent before 1.6: 0) */
	WEFT_M_THREAD_END = 7, /* u64 tid, u64 serial (1.2; 0 before), u64 dropped, u64 next seq */
	WEFT_M_PROCESS_NAME = 8, /* name\0 */
	WEFT_M_FINISH = 9,  /* u64 events, dropped, after_stop, bytes_raw, bytes_written, chunks, end_ns */
	WEFT_M_CLOCK_SOURCE = 10, /* u32 kind (0 ns, 1 x86 tsc, 2 arm64 cntvct), u32 0, u64 nominal_hz */
	WEFT_M_MAPS = 11,   /* u64 ticks, then lines of /proc/self/maps: at start whole, after a dlopen the new ones */
	WEFT_M_MAPS_Z = 43, /* (1.11) a MAPS record whose lines are compressed (what writers write):
			     * u64 ticks, u64 their length, u32 flags (1: continues the zstd stream of
			     * the file's previous MAPS_Z record; 0: begins one), u32 weft_sum32 of
			     * the lines, then the stream's next flushed block, holding them */
	WEFT_M_FUNC_FILTER = 12, /* u64 functions filtered out by -D/-t (intentional, not drops) */
	WEFT_M_OVERHEAD = 13, /* u64 CPU ns used by writer threads, u64 slow paths taken (at stop) */
	WEFT_M_WRITE_FAILED = 14, /* u32 errno, u32 0: writing events failed; later chunks dropped */
	WEFT_M_SIGNAL = 15, /* u32 signal, u32 tid, u64 ticks: the process ended by this signal */
	WEFT_M_COUNTERS = 26, /* (1.5) u32 n, u32 flags (1 user space only, 2 rdpmc), then n names\0 */
	WEFT_M_SOURCE = 20, /* (1.4) u32 site id, u32 line, then file\0: the site's source location */
	WEFT_M_RUSAGE = 16, /* at stop: u64 max RSS bytes, u64 user ns, u64 system ns (getrusage) */
	WEFT_M_ACCESS = 18, /* u32 source (1 page faults), u32 0, u64 samples, u64 lost, u64 throttled: at stop */
	WEFT_M_WATCH = 19,  /* u32 n, u32 threads not watched, u64 lost, n x (u64 addr, u32 len, u32
			     * source, u64 hits), then n names (\0-terminated, "" for an address): at stop */
	WEFT_M_SCHED = 21,  /* (1.5) u32 mode (0 off, 1 tracepoints, 2 own switches), u32 cpus, u64
			     * records, u64 lost, u32 readers, u32 0, then release\0 machine\0 why\0 */
	WEFT_M_SYS_SOURCE = 23, /* (1.5) u32 source (enum weft_sys_source), u32 state (enum
				 * weft_sys_state), u64 period ns, u32 the sampler thread's tid, u32 0,
				 * then text\0: what it samples, or why not (the last one of a source counts) */
	WEFT_M_SYS_CHANNEL = 24, /* (1.5) u32 channel, u16 kind (enum weft_sys_kind), u16 0, u32 index
				  * (CPU, GPU, RAPL domain), u32 0, u64 aux (RAPL: max_energy_range_uj),
				  * then name\0 */
	WEFT_M_SYS_OVERHEAD = 25, /* (1.5) at stop: u64 CPU ns of the sampler thread, u64 its wall ns,
				   * u64 rounds (wake-ups that sampled something) */
	WEFT_M_GPU = 27,    /* (1.6) the CUPTI collector (gpu=1): u32 state (0 unavailable, 1 used), u32 n
			     * tids, u64 records, u64 dropped by CUPTI, u64 buffers, u64 API calls, u32
			     * CUPTI version, u32 0, n x u32 tids (the threads that wrote GPU records), then
			     * text\0: the library, or why it is unavailable (at start; again at stop) */
	WEFT_M_GPU_CLOCK = 28, /* (1.6) u64 CUPTI ns (cuptiGetTimestamp), u64 CLOCK_BOOTTIME ns read
				* before it, u64 after it: a point of the device -> host clock map */
	WEFT_M_FORK = 30,   /* (1.6) in a fork child (memory=1): u32 tid of the parent's thread that
			     * forked (the child's main thread continues it), u32 0, u64 ticks at the fork */
	WEFT_M_GPU_DEVICE = 29, /* (1.6) a GPU (CUPTI's device record): u32 id, u32 multiprocessors,
				 * u32 compute capability major, minor, u32 max warps per SM, max blocks
				 * per SM, max shared bytes per SM, max registers per SM, max registers
				 * per block, max shared bytes per block, max threads per block, threads
				 * per warp, u64 global memory bytes, u32 core clock kHz, u32 0, then
				 * name\0 */
	WEFT_M_NOTE = 31,   /* (1.6) text\0: a note on the recording from a part of weft that ran in the
			     * process (weft_note): weft info lists it, weft record prints it */
	WEFT_M_JOB = 32,    /* (1.7) the process is a task of a parallel job (launcher environment, at
			     * start): u32 rank (WEFT_RANK_NONE unknown), u32 size (0 unknown), u32 local
			     * rank, u32 local size (on this host), then job id\0 launcher\0 */
	WEFT_M_MPI = 33,    /* (1.7) the MPI wrappers ran (after MPI_Init; again at stop, the last
			     * counts): u32 world rank, u32 world size, u32 flavor (enum weft_mpi_flavor),
			     * u32 flags (WEFT_MPI_F_*), u64 calls recorded, u64 messages sent with an
			     * arrow, u64 receives completed with an arrow, u64 messages not drawn (not
			     * matchable for sure), then the library's version line\0 */
	WEFT_M_CLOCK_SYNC = 34, /* (1.7) an offset to the reference rank's clock measured over MPI:
				 * u32 phase (0 after MPI_Init, 1 before MPI_Finalize), u32 the
				 * reference's world rank, i64 offset ns (the reference's CLOCK_BOOTTIME
				 * minus this process's, at `at`), u64 at (this process's CLOCK_BOOTTIME
				 * ns, the middle of the best round trip), u64 that round trip ns, u32
				 * round trips made, u32 us the phase took on this process (its
				 * `weft: clock sync` slice, outside the program's MPI calls; 0: not
				 * measured, before 1.9), then the reference's host\0 */
	WEFT_M_DISABLED = 35, /* (1.8) at stop: u64 events emitted while recording was disabled
			       * (weft record --delay, the disable command): not recorded, not drops */
	WEFT_M_SNAPSHOT = 36, /* (1.8) a snapshot request (weft_snapshot(), a control command, a signal,
			       * a trigger, a fatal signal, the exit): u64 ticks, u32 origin (enum
			       * weft_snap_origin), u32 snapshot number (DIR/snapshot-N; 0: none written:
			       * no flight recorder runs, or refused), u32 refused (enum
			       * weft_snap_refusal; 0 taken), u32 errno (refused 3: why the dump
			       * failed), then reason\0 */
	WEFT_M_CHUNK_INDEX = 40, /* (1.8) one per chunk written: struct weft_index_rec (chunkindex.h):
				  * u32 tid, u32 file (writer index), u64 seq, u64 offset of the
				  * frame, u64 first/last ticks, u64 first/last ns, i32 depth
				  * delta, i32 depth min, u32 flags, u32 0 */
	WEFT_M_RING = 42, /* (1.9) a flight recorder's ring at a snapshot (DIR/snapshot-N): u64 its size
			   * in bytes, u64 bytes its frames and their summaries held then, u64 events
			   * of those frames (what a full ring holds is size x events / bytes) */
	WEFT_M_SOURCES = 41, /* (1.9) at stop: the data sources that ran (collect/source.h), one line
			      * each, "NAME: what it records\n" (their describe), NUL-terminated */
	WEFT_M_WINDOW = 37, /* (1.8) a flight recorder's snapshot (DIR/snapshot-N): u64 window start
			     * ticks, u64 end ticks, u64 trigger ticks, u64 events not in the window (evicted
			     * or before its start, since the previous snapshot), u64 events of the window,
			     * u64 open slices re-emitted (context), u64 events the ring took in all, u64
			     * evicted in all, u64 written in snapshots in all (this one included), u32
			     * snapshot number, u32 0, then reason\0 */
	WEFT_M_MEMORY = 17, /* u32 flags (1 recording, 2 stacks), u32 allocation calls of signal
			     * handlers dropped (inside another event; 0 from older writers), u64 threshold bytes, u64
			     * sampling bytes (0: every block), u64 frees not recorded (unknown
			     * to the interposer) */
};

/* SNAPSHOT records (1.8): why a request was refused (0: taken) */
enum weft_snap_refusal {
	WEFT_SNAP_TAKEN = 0,
	WEFT_SNAP_MAX = 1,      /* max_snapshots= were taken already */
	WEFT_SNAP_INTERVAL = 2, /* within min_interval= of the previous one */
	WEFT_SNAP_FAILED = 3,   /* the flight recorder could not write it (errno in the record) */
	WEFT_SNAP_BUSY = 4,     /* another snapshot was being taken (a fatal signal) or too many waited */
};

/* JOB and MPI records (1.7) */
/* The highest sampler channel id a reader accepts (SYS_CHANNEL; a writer numbers them from 1, at
 * most 1024 today): the analysis indexes them by id. */
#define WEFT_SYS_CHANNEL_MAX 65535u
#define WEFT_RANK_NONE 0xffffffffu
enum weft_mpi_flavor { WEFT_MPI_UNKNOWN = 0, WEFT_MPI_OPENMPI = 1, WEFT_MPI_MPICH = 2 };
#define WEFT_MPI_F_FORTRAN 0x1u /* Fortran bindings were called */
#define WEFT_MPI_F_OFF 0x2u     /* mpi=0: the wrappers pass calls through unrecorded */

/* System sampler sources (SYS_SOURCE) and their state. */
/* THREAD record flags */
#define WEFT_THREAD_OWN 0x1u /* a thread of weft's runtime (a sched reader, a sampler), not the program's */

enum weft_sys_source { WEFT_SYS_CPU_MEM = 1, WEFT_SYS_CPUFREQ = 2, WEFT_SYS_CPUIDLE = 3, WEFT_SYS_RAPL = 4,
		       WEFT_SYS_NVML = 5 };
enum weft_sys_state {
	WEFT_SYS_UNAVAILABLE = 0, /* asked for, cannot run here: the text says why */
	WEFT_SYS_USED = 1,        /* sampled by this process: the text says what */
	WEFT_SYS_STANDBY = 2,     /* a system-wide source another process of the trace samples */
};
/* What a channel's SAMPLE readings are (SYS_CHANNEL kind). */
enum weft_sys_kind {
	WEFT_SYSK_CPU_USER_NS = 1, /* the process's user CPU time so far (getrusage) */
	WEFT_SYSK_CPU_SYS_NS = 2,  /* ... system CPU time */
	WEFT_SYSK_RSS_BYTES = 3,   /* its resident set */
	WEFT_SYSK_CPUFREQ_KHZ = 4, /* index = CPU: scaling_cur_freq, written when it changes */
	WEFT_SYSK_RAPL_UJ = 5,     /* index = domain: energy_uj (wraps at aux = max_energy_range_uj) */
	WEFT_SYSK_GPU_POWER_MW = 6, /* index = GPU: nvmlDeviceGetPowerUsage */
	WEFT_SYSK_GPU_ENERGY_MJ = 7, /* index = GPU: nvmlDeviceGetTotalEnergyConsumption */
	WEFT_SYSK_CPUIDLE_US = 8,  /* index = CPU: us idle (sum of cpuidle stateK/time) in the sampling
				    * period ending at the reading, written when it changes */
	WEFT_SYSK_GPU_SM_CLOCK_MHZ = 9, /* index = GPU: nvmlDeviceGetClockInfo(NVML_CLOCK_SM), MHz */
	WEFT_SYSK_GPU_UTIL_PCT = 10,     /* index = GPU: nvmlDeviceGetUtilizationRates .gpu, percent */
	WEFT_SYSK_GPU_MEM_UTIL_PCT = 11, /* index = GPU: nvmlDeviceGetUtilizationRates .memory, percent */
};

/* GPU records (WEFT_R_GPU): the kind, in the record's track field. */
enum weft_gpu_kind {
	WEFT_GPU_KERNEL = 1, /* 9 extra words: end; device | context << 32; stream | name site << 32;
			      * grid x | y << 32; grid z | block x << 32; block y | z << 32;
			      * registers per thread | static shared bytes << 32; dynamic shared
			      * bytes | local bytes per thread << 32; local bytes total | shared
			      * memory executed << 32 */
	WEFT_GPU_MEMCPY = 2, /* 4: end; device | context << 32; stream | copy kind << 32 | source
			      * memory kind << 40 | destination kind << 48 | flags << 56; bytes */
	WEFT_GPU_MEMSET = 3, /* 4: end; device | context << 32; stream | value << 32; bytes */
};
/* The flow id that links a CUDA API call (its FLOW out) to the device activity it caused: unique
 * across the processes of a trace (CUPTI's correlation ids are per process). */
static inline uint64_t weft_gpu_flow_id(uint32_t pid, uint32_t correlation)
{
	return (1ull << 63) | ((uint64_t)pid << 32) | correlation;
}

struct weft_meta_rec_header {
	uint16_t type;
	uint16_t zero;
	uint32_t len;
};

/* Record header word (word1) fields; see include/weft_fastpath.h. */
static inline uint32_t weft_rec_id(uint64_t h) { return (uint32_t)h; }
static inline unsigned weft_rec_type(uint64_t h) { return (unsigned)(h >> 32) & 0xff; }
static inline unsigned weft_rec_extra(uint64_t h) { return (unsigned)(h >> 40) & 0xff; }
static inline unsigned weft_rec_track(uint64_t h) { return (unsigned)(h >> 48); }
static inline uint64_t weft_rec_addr(uint64_t h) { return (h & 0xffffffffu) | ((h >> 48) << 32); }
/* A slice's begin (BEGIN, FUNC_ENTER) or end (END, FUNC_EXIT), and the stack it is on as the
 * converter's walker (export/model.c) has it: a function's is the thread's own track's, 0 (its
 * track field holds address bits). An end closes the innermost open slice on its stack with its
 * id (weft_rec_id). */
static inline int weft_rec_opens(unsigned type) { return type == WEFT_R_BEGIN || type == WEFT_R_FUNC_ENTER; }
static inline int weft_rec_closes(unsigned type) { return type == WEFT_R_END || type == WEFT_R_FUNC_EXIT; }
static inline unsigned weft_rec_stack(unsigned type, uint64_t h)
{
	return type == WEFT_R_FUNC_ENTER || type == WEFT_R_FUNC_EXIT ? 0 : weft_rec_track(h);
}

/* The header of the BEGIN (or END: type) a LEAF record's header h stands for: same site and track. */
static inline uint64_t weft_leaf_hdr(uint64_t h, unsigned type)
{
	return (h & 0xffff0000ffffffffull) | ((uint64_t)type << 32);
}

/* Whether records w[0..n) hold a LEAF record: a chunk of them is flagged WEFT_CHUNK_LEAF. */
static inline int weft_records_have_leaf(const uint64_t *w, size_t n)
{
	for (size_t i = 0; i + 2 <= n; i += 2 + weft_rec_extra(w[i + 1]))
		if (weft_rec_type(w[i + 1]) == WEFT_R_LEAF)
			return 1;
	return 0;
}

/* Decoded records w[0..n) (absolute times) with every LEAF record [begin, LEAF, ticks to the
 * end] made the BEGIN and END it stands for ([begin, BEGIN, begin + ticks, END]), in place; w has
 * room for cap words. Returns the words now, or (size_t)-1 when cap is too small. */
static inline size_t weft_leaf_expand(uint64_t *w, size_t n, size_t cap)
{
	size_t leaves = 0, i = 0;
	for (; i + 2 <= n; i += 2 + weft_rec_extra(w[i + 1]))
		leaves += weft_rec_type(w[i + 1]) == WEFT_R_LEAF && weft_rec_extra(w[i + 1]) == 1 && i + 3 <= n;
	if (!leaves)
		return n;
	if (n + leaves > cap)
		return (size_t)-1;
	for (size_t k = n; k-- > 0;) /* the records moved up by `leaves` words, then read forward */
		w[k + leaves] = w[k];
	size_t o = 0, r = leaves, end = n + leaves;
	while (r + 2 <= end) {
		uint64_t t = w[r], h = w[r + 1];
		size_t len = 2 + weft_rec_extra(h);
		if (weft_rec_type(h) == WEFT_R_LEAF && len == 3 && r + 3 <= end) {
			uint64_t d = w[r + 2];
			w[o] = t;
			w[o + 1] = weft_leaf_hdr(h, WEFT_R_BEGIN);
			w[o + 2] = t + d;
			w[o + 3] = weft_leaf_hdr(h, WEFT_R_END);
			o += 4;
			r += 3;
			continue;
		}
		if (r + len > end)
			len = end - r;
		for (size_t k = 0; k < len; k++)
			w[o + k] = w[r + k];
		o += len;
		r += len;
	}
	return o;
}

/* Records whose word0 is a clock reading (delta-coded in chunks). */
static inline int weft_rec_has_ticks(unsigned type)
{
	return (type >= WEFT_R_BEGIN && type <= WEFT_R_ASYNC_END) ||
	       (type >= WEFT_R_DROPPED && type <= WEFT_R_HEAP_USAGE) || type == WEFT_R_LEAF;
}

/* Memory records: their extra words are packed as varints (addresses as differences). */
static inline int weft_rec_is_mem(unsigned type)
{
	return type >= WEFT_R_ALLOC && type <= WEFT_R_REALLOC;
}

/* How many events of the program a record is: 1, 2 for a LEAF (a slice's begin and its end), 0
 * for the records that annotate or mark. */
static inline unsigned weft_rec_events(unsigned type)
{
	return (unsigned)((type >= WEFT_R_BEGIN && type <= WEFT_R_COMPLETE) ||
			  (type >= WEFT_R_ASYNC_INSTANT && type <= WEFT_R_FUNC_EXIT) ||
			  (type >= WEFT_R_ALLOC && type <= WEFT_R_HEAP_USAGE) || type == WEFT_R_ACCESS ||
			  type == WEFT_R_SAMPLE || type == WEFT_R_GPU) +
	       2u * (type == WEFT_R_LEAF);
}

static inline void weft_file_header_init(struct weft_file_header *h, const char *magic, int pid,
					 int writer, int ticks)
{
	for (unsigned i = 0; i < sizeof(*h); i++)
		((unsigned char *)h)[i] = 0;
	for (unsigned i = 0; i < 8; i++)
		h->magic[i] = magic[i];
	h->major = WEFT_FMT_MAJOR;
	h->minor = WEFT_FMT_MINOR;
	h->features = WEFT_FEAT_ZSTD | (ticks ? WEFT_FEAT_TSC : 0);
	h->pid = (uint32_t)pid;
	h->writer = (uint32_t)writer;
}

static inline uint32_t weft_fnv1a(const void *data, uint64_t n)
{
	const unsigned char *p = (const unsigned char *)data;
	uint32_t h = 2166136261u;
	for (uint64_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	return h;
}

/* The chunk checksum of format 1.9 (chunk flag WEFT_CHUNK_SUM): FNV-1a takes a multiply per
 * byte, one after another (about 3 ns of a writer's time per memory event); this one takes
 * 32 bytes per step, in four independent lanes: each lane mixes its 8-byte words in by
 * x = (x ^ w) * K, x ^= x >> 32; a tail of under 32 bytes goes in as whole words (the last one
 * zero-padded) to lanes 0, 1, 2 in turn; then the lanes and the length are folded together and
 * the result is the upper half. Damage detection, not cryptography. */
static inline uint64_t weft__sum_mix(uint64_t x, uint64_t w)
{
	x = (x ^ w) * 0x9e3779b97f4a7c15ull;
	return x ^ (x >> 32);
}

static inline uint32_t weft_sum32(const void *data, uint64_t n)
{
	const unsigned char *p = (const unsigned char *)data;
	uint64_t a = 0x243f6a8885a308d3ull, b = 0x13198a2e03707344ull, c = 0xa4093822299f31d0ull,
		 d = 0x082efa98ec4e6c89ull, w[4];
	uint64_t i = 0;
	for (; i + 32 <= n; i += 32) {
		memcpy(w, p + i, 32);
		a = weft__sum_mix(a, w[0]);
		b = weft__sum_mix(b, w[1]);
		c = weft__sum_mix(c, w[2]);
		d = weft__sum_mix(d, w[3]);
	}
	if (i < n) {
		memset(w, 0, sizeof(w));
		memcpy(w, p + i, (size_t)(n - i));
		a = weft__sum_mix(a, w[0]);
		if (n - i > 8)
			b = weft__sum_mix(b, w[1]);
		if (n - i > 16)
			c = weft__sum_mix(c, w[2]);
	}
	uint64_t x = weft__sum_mix(weft__sum_mix(weft__sum_mix(weft__sum_mix(n, a), b), c), d);
	return (uint32_t)(x >> 32);
}

/* The checksum a chunk header with these flags carries. */
static inline uint32_t weft_chunk_sum(uint32_t flags, const void *data, uint64_t n)
{
	return (flags & WEFT_CHUNK_SUM) ? weft_sum32(data, n) : weft_fnv1a(data, n);
}

/* Largest chunk a reader accepts (guards allocations against corrupt headers). */
#define WEFT_MAX_CHUNK (64u << 20)

#endif
