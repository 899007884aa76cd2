/*
 * record-options.c - what `weft record` takes (record.h): its help text, and the checks of
 * the values it passes on to the runtime as WEFT_OPTIONS keys, made here so that a bad one is
 * a usage error before anything runs: each through the runtime's own option table
 * (lib/config.c), --memory's list, --counters' names (each probed: one this machine cannot
 * count is a failure that names what it can), --python's modes.
 */
#include "tool/cmd.h"
#include "tool/record.h"
#include "tool/record-trigger.h"
#include "lib/internal.h"
#include "collect/counters.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void weft_record_help(FILE *f)
{
	fprintf(f,
		"usage: weft record [OPTIONS] -- PROGRAM [ARGS...]\n"
		"Run PROGRAM with tracing injected; record it and every process it starts.\n"
		"Code built with -finstrument-functions has every function entry and exit recorded.\n\n"
		"  -o, --output DIR        trace directory (default weft.data; an old one is moved to DIR.old)\n"
		"      --no-convert        do not write DIR/trace.pftrace at the end\n"
		"      --open[=PORT]       then show DIR/trace.pftrace in the Perfetto UI, as weft open\n"
		"                          does (served once on 127.0.0.1:PORT, default 9001)\n"
		"      --host NAME         record as host NAME (default: the hostname)\n"
		"  -b, --buffer-size SIZE  most buffer memory per process (default 256M, used as needed)\n"
		"      --writers N         writer threads per process (default 1)\n"
		"  -z, --compression L     zstd level, 0 = none (default 1)\n"
		"  -F, --filter PATTERN    record only functions and slices whose name matches (repeatable)\n"
		"  -N, --notrace PATTERN   leave out functions and slices whose name matches (repeatable)\n"
		"                          PATTERN: a glob (fib*, is_?dd) or /regex/ (POSIX extended,\n"
		"                          unanchored: /^is_(even|odd)$/); C++ names as mangled\n"
		"  -L, --libs PATTERNS     record functions only of these files, e.g. 'app,libcore*' or\n"
		"                          '-libm*' (comma list of basename patterns, '-' excludes)\n"
		"  -D, --depth N           record functions only up to call depth N (native functions:\n"
		"                          not Python calls)\n"
		"  -t, --time-filter T     leave out function calls shorter than T (e.g. 5us) that\n"
		"                          made no recorded call themselves (native functions)\n"
		"  -m, --memory[=OPTS]     record every allocation (malloc & co., anonymous mmap), each\n"
		"                          charged to the innermost slice; OPTS, comma-separated:\n"
		"                          threshold:SIZE  only blocks of at least SIZE (e.g. 4K)\n"
		"                          sample:SIZE     a Poisson sample, one per SIZE bytes on\n"
		"                                          average (e.g. 64K); totals are scaled back\n"
		"                          stacks          each allocation's call stack (frame pointers:\n"
		"                                          build with -fno-omit-frame-pointer), which the\n"
		"                                          reports and heap profile show instead of slices\n"
		"      --mem-access[=SRC]  sample memory accesses: pagefault (the first touch of each page,\n"
		"                          any Linux; the default), pebs or ibs (said unavailable where\n"
		"                          missing); joined to allocations by weft export\n"
		"      --mem-access-period N  one sample per N events (default: every page fault;\n"
		"                          1009 PEBS loads, 10007 PEBS stores, 65536 IBS ops)\n"
		"      --watch SPEC[,SPEC] record every write to these bytes with hardware watchpoints\n"
		"                          (at most 4 in all; repeatable). SPEC: SYMBOL (a variable of the\n"
		"                          program) or 0xADDR, then :LEN (1, 2, 4 or 8; default 8, or the\n"
		"                          variable's size) and :w (writes, the default) or :rw (reads\n"
		"                          too). Each hit stops the thread in the kernel: watch what is\n"
		"                          written rarely. Said unavailable where a self-test at start\n"
		"                          sees watchpoints not fire (some virtual machines)\n"
		"      --sched             scheduling on the timeline: as root every task's switches,\n"
		"                          wakeups, new tasks and renames on every CPU (kernel\n"
		"                          tracepoints), so Perfetto shows Running/Runnable/Sleeping\n"
		"                          under each thread; without root the program's own context\n"
		"                          switches, as on/off-CPU slices\n"
		"      --sched-threads SPEC  threads reading the per-CPU rings, each pinned to the\n"
		"                          CPUs it reads: N (1 to 16, every N-th CPU; default 1),\n"
		"                          cpu, core, package, numa (one per CPU, core, package,\n"
		"                          node) or CPU lists separated by '/' (0-3,8/4-7)\n"
		"      --cpu-mem           sample the CPU time and RSS of every process every 10 ms (see\n"
		"                          --sample-period): counter tracks, and every slice longer than\n"
		"                          the period gets cpu.user_ns, cpu.sys_ns, mem.rss_bytes args\n"
		"      --cpu-mem=exact:PATTERN  the same, and the slices whose names match PATTERN (globs\n"
		"                          or /regex/, comma-separated) get their thread's own CPU time\n"
		"                          and the RSS read exactly at their begin and end\n"
		"      --power             sample CPU frequency (every --sample-period), RAPL and NVIDIA\n"
		"                          GPU power, SM clock and utilization (every --power-period,\n"
		"                          default 1s); what the machine lacks is said unavailable in\n"
		"                          weft info\n"
		"      --sample-period T   cpu-mem and CPU frequency period (default 10ms)\n"
		"      --power-period T    RAPL and NVIDIA GPU period (default 1s)\n"
		"      --gpu               CUDA kernels, copies and memsets on one track per GPU and\n"
		"                          stream, with their resources and an arrow from the CUDA call\n"
		"                          that launched them; CUDA calls as slices; device memory as\n"
		"                          a heap per GPU; GPU power, SM clock and utilization (NVML,\n"
		"                          every --power-period). Through CUPTI, loaded at run time\n"
		"                          (CUDA_HOME, /usr/local/cuda; --options cupti_lib=PATH)\n"
		"      --mpi=on|off        MPI calls as slices and messages as arrows (Open MPI, MPICH;\n"
		"                          C and Fortran): on by default where the program loads MPI\n"
		"      --counters LIST     read these counters at every slice's begin and end (perf's\n"
		"                          names, comma-separated: instructions, cycles, cache-misses,\n"
		"                          branch-misses, task-clock, page-faults, context-switches,\n"
		"                          cpu-migrations, ...); weft report --counters shows them\n"
		"      --python[=MODES]    record every Python function call (CPython 3.11: a frame-\n"
		"                          evaluation hook, 3.12+: sys.monitoring; installed at start-up\n"
		"                          through a sitecustomize module weft puts first on\n"
		"                          PYTHONPATH), nested with the native functions on each\n"
		"                          thread; -F/-N select by qualified name. `import weft` works\n"
		"                          in the program with or without it.\n"
		"                          MODES, comma-separated: calls (the default), and with it\n"
		"                          c-calls          the C functions Python calls too (len,\n"
		"                                           list.append, math.sqrt: category python-c)\n"
		"                                           in every thread\n"
		"                          tasks            each asyncio Task as an async slice from its\n"
		"                                           creation to its end, named after its coroutine\n"
		"      --flight-recorder[=SIZE[,AGE][,noexit]]\n"
		"                          keep only the last SIZE (default 64M) of events per process in\n"
		"                          memory, at least AGE of time where SIZE allows; nothing is\n"
		"                          written until a snapshot (weft_snapshot(), the program's exit\n"
		"                          unless noexit) writes DIR/snapshot-N\n"
		"      --switch-output=SIZE|TIME\n"
		"                          write the trace as consecutive parts DIR/part-N, each a trace\n"
		"                          directory (the slices open at its start re-emitted): a new\n"
		"                          part every SIZE (K/M/G) of compressed events or TIME (s/m/h)\n"
		"      --switch-max-files=N keep only the last N parts\n"
		"      --delay MS          start recording MS ms after the program starts (perf's -D; -D\n"
		"                          here is --depth); -1: disabled until an enable command\n"
		"      --control SPEC      commands while it runs: fifo:CTL[,ACK] (FIFOs, made if missing)\n"
		"                          or fd:N[,M]; one per line: enable, disable, snapshot [REASON],\n"
		"                          stop, ping; each answered on ACK with 'ack' once every traced\n"
		"                          process applied it ('error: WHY' if not). From another shell:\n"
		"                          weft enable|disable|snapshot|stop DIR (docs/control.md)\n"
		WEFT_RECORD_TRIGGER_HELP
		"      --options OPTS      further WEFT_OPTIONS, key=value:key=value\n"
		"  -q, --quiet             no summary line, no hints\n"
		"  -h, --help              this text\n\n"
		"Under a job launcher (mpirun -np N weft record -o DIR -- ./app, mpiexec, srun) the\n"
		"ranks share DIR: each writes files named HOST-rRANK-PID, and the last to end writes\n"
		"DIR/trace.pftrace. Hosts without a shared DIR: weft convert D1 D2 ... -o FILE.\n\n"
		"Traced processes the program leaves running are waited for up to WEFT_RECORD_LINGER\n"
		"seconds (1) before the conversion; those still running then are named in a warning.\n\n"
		"Exit status: the program's (weft dies of the signal that ended it); 1 if weft failed, 2 usage,\n"
		"127 if the program could not be run.\n");
}

int weft_record_python_modes(const char *arg, int *modes)
{
	int m = PY_CALLS;
	for (const char *w = arg; w && *w;) {
		size_t n = strcspn(w, ",");
		if (n == 5 && !strncmp(w, "calls", n))
			;
		else if (n == 7 && !strncmp(w, "c-calls", n))
			m |= PY_C_CALLS;
		else if (n == 5 && !strncmp(w, "tasks", n))
			m |= PY_TASKS;
		else
			return -1;
		w += n + (w[n] == ',');
	}
	*modes |= m;
	return 0;
}

/* A value for one of the options record passes on: checked here, so a bad one is a usage
 * error before anything runs. */
int weft_record_check_option(const char *flag, const char *key, const char *val)
{
	static struct weft_config scratch;
	weft_config_defaults(&scratch);
	if (weft_config_set(&scratch, key, val, 0) == 0)
		return 0;
	weft_cli_error("record", "bad value '%s' for %s: expected %s", val, flag, weft_config_valid(key));
	return -1;
}

/* --options key=value:key=value, checked here with the runtime's table but without its log
 * lines ("...; using the default", "... ignored": true of WEFT_OPTIONS, not of a refused
 * command line): the first bad one said in one line. */
int weft_record_check_options(const char *opts)
{
	static struct weft_config scratch;
	char buf[4096], keys[1024];
	if (strlen(opts) >= sizeof(buf)) {
		weft_cli_error("record", "bad --options: longer than %zu characters", sizeof(buf) - 1);
		return -1;
	}
	weft_config_defaults(&scratch);
	snprintf(buf, sizeof(buf), "%s", opts);
	char *save = NULL;
	for (char *tok = strtok_r(buf, ":", &save); tok; tok = strtok_r(NULL, ":", &save)) {
		char *eq = strchr(tok, '=');
		if (!eq) {
			weft_cli_error("record", "bad --options '%s': '%s' is not key=value", opts, tok);
			return -1;
		}
		*eq = 0;
		int rc = weft_config_set(&scratch, tok, eq + 1, 0);
		if (rc == -ENOENT)
			weft_cli_error("record", "bad --options '%s': unknown option '%s'; valid keys: %s", opts, tok,
				       weft_config_keys(keys, sizeof(keys)));
		else if (rc)
			weft_cli_error("record", "bad --options '%s': bad value '%s' for option %s: expected %s", opts,
				       eq + 1, tok, weft_config_valid(tok));
		if (rc)
			return -1;
	}
	return 0;
}

const struct weft_record_passed *weft_record_passed_option(int opt)
{
	static const struct weft_record_passed table[] = {
		{'b', "-b/--buffer-size", "buffer_size"}, {'w', "--writers", "writers"},
		{'z', "-z/--compression", "compression"}, {'D', "-D/--depth", "func_depth"},
		{'t', "-t/--time-filter", "func_min"}, {'R', "--mem-access-period", "mem_access_period"},
		{'T', "--sched-threads", "sched_threads"},
		{'Q', "--sample-period", "sample_period"}, {'U', "--power-period", "power_period"},
	};
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].opt == opt)
			return &table[i];
	return &table[0];
}

int weft_record_memory_options(const char *arg, char *out, size_t n)
{
	size_t l = strlen(out);
	snprintf(out + l, n - l, ":memory=1");
	if (!arg || !*arg)
		return 0;
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", arg);
	char *save = NULL;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "stacks")) {
			l = strlen(out);
			snprintf(out + l, n - l, ":memory_stacks=1");
			continue;
		}
		char *colon = strchr(tok, ':');
		const char *key = NULL;
		if (colon) {
			*colon = 0;
			key = !strcmp(tok, "threshold") ? "memory_threshold" : !strcmp(tok, "sample") ? "memory_sample" : NULL;
		}
		if (!key) {
			weft_cli_error("record", "bad --memory option '%s': expected stacks, threshold:SIZE or sample:SIZE", tok);
			return -1;
		}
		if (weft_record_check_option("--memory", key, colon + 1))
			return -1;
		l = strlen(out);
		snprintf(out + l, n - l, ":%s=%s", key, colon + 1);
	}
	return 0;
}

/* --counters=LIST: every name known (else a usage error) and countable here (else a failure),
 * each refusal one line naming what this machine has. */
int weft_record_counters_check(const char *list)
{
	const struct weft_ctr_def *d[WEFT_CTR_MAX];
	char why[600], avail[512];
	int n = weft_ctr_parse(list, d, why, sizeof(why));
	if (n < 0) {
		weft_cli_error("record", "--counters: %s", why);
		return WEFT_EXIT_USAGE;
	}
	for (int i = 0; i < n; i++) {
		int rc = weft_ctr_probe(d[i]);
		if (!rc)
			continue;
		weft_ctr_available(avail, sizeof(avail));
		if (d[i]->type == PERF_TYPE_HARDWARE && (rc == -ENOENT || rc == -EOPNOTSUPP || rc == -ENODEV))
			weft_cli_error("record", "--counters: no hardware PMU here (%s unavailable); available: %s",
				       d[i]->name, avail);
		else
			weft_cli_error("record", "--counters: %s unavailable (perf_event_open: %s); available: %s",
				       d[i]->name, strerror(-rc), avail);
		return WEFT_EXIT_FAIL;
	}
	return 0;
}
