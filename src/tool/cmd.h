/* cmd.h - the weft CLI's subcommands: one file each, a table in main.c. */
#ifndef WEFT_CMD_H
#define WEFT_CMD_H

#include <stddef.h>

/* Exit codes shared by every subcommand. */
#define WEFT_EXIT_OK 0
#define WEFT_EXIT_FAIL 1  /* input unreadable, output unwritable */
#define WEFT_EXIT_USAGE 2 /* bad command line */

/* The events of a .pftrace the Perfetto UI loads in a browser, about: its trace processor runs
 * as wasm (4 GiB at most), and a 46 MB .pftrace of 70 M function events did not load there
 * (issue 27); 30 M leaves a margin. WEFT_UI_EVENTS=N in the environment says otherwise (a UI
 * backed by a native `trace_processor --httpd` loads far more; 0: no limit, no warning). */
#define WEFT_UI_EVENTS 30000000u
unsigned long long weft_cli_ui_events(void);

int cmd_top(int argc, char **argv);
int cmd_control(int argc, char **argv); /* snapshot, enable, disable, stop (argv[0]) */
int cmd_convert(int argc, char **argv);
int cmd_estimate(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_open(int argc, char **argv);
int cmd_overhead(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);

/* `weft plot` runs the weft-plot executable (cairo stays out of the main CLI). */
int cmd_plot_exec(int argc, char **argv);
/* Installs the readers' out-of-memory handler, naming the command in its line. */
void weft_cli_set_oom(const char *cmd);
/* Finds one of weft's own files (libweft-preload.so, weft-plot) beside the weft executable
 * (build tree) or in LIBDIR/weft (installed); NULL if it is not there. */
const char *weft_cli_find_file(const char *name, char *out, size_t n);

/* weft record's program ended by signal sig: weft_cli_exit(128 + sig) then has weft end of the
 * same signal, after its exit handlers (weft_cli_exit_setup registers that first, in main);
 * any other status is returned as it is. */
void weft_cli_program_signal(int sig);
void weft_cli_exit_setup(void);
int weft_cli_exit(int rc);

/* Prints "weft: CMD: message" on stderr. */
void weft_cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Integer option values, parsed strictly: the whole string, decimal digits (a leading '-' only
 * where lo < 0; no spaces, no '+', no fraction, no trailing junk), lo <= value <= hi, no
 * overflow. 0 with *v set, or -1 printing nothing: the caller names the option and the value. */
int weft_cli_parse_int(const char *s, long long lo, long long hi, long long *v);
/* A 64-bit hexadecimal value (an optional 0x, then hex digits only; more than 64 bits is -1). */
int weft_cli_parse_hex(const char *s, unsigned long long *v);
/* --format of the table commands (report, estimate, overhead): 0 text, 1 csv, 2 json; -1 after
 * saying which are valid. */
int weft_cli_table_format(const char *cmd, const char *arg);
/* libweft-preload.so's path into out (next to the weft executable, or where it is installed
 * relative to it); NULL if there is none (cmd-record.c). */
const char *weft_cli_find_preload(char *out, size_t n);
/* Warns that n chunks could not be decoded (why: the first reason) and their events are left
 * out (of `of`, when given). Printed even in quiet mode: nothing is left out silently. */
void weft_cli_warn_undecoded(const char *cmd, unsigned long long n, const char *why, const char *of);
/* The .pftrace nests deeper than the Perfetto UI shows (WEFT_UI_LEVELS): one warning line. */
void weft_cli_warn_deep(const char *cmd, unsigned long long tracks);
/* record-flight.c: --flight-recorder[=SIZE[,AGE][,noexit]] appended to extra as flight= (0,
 * or a usage error printed and WEFT_EXIT_USAGE); at the end, the snapshots converted (convert)
 * and said (returns code). */
int weft_record_flight_option(const char *arg, char *extra, size_t n);
int weft_record_flight_end(const char *dir, int quiet, int convert, int code);
/* --switch-output / --switch-max-files: key switch_output or switch_max_files, checked */
int weft_record_switch_option(const char *key, const char *arg, char *extra, size_t n);
/* cmd-open.c: --port N checked (1..65535; -1 after a usage error); weft record --open[=PORT]:
 * DIR/trace.pftrace served once to the Perfetto UI after recording; returns code if nonzero,
 * else weft open's status (130 on Ctrl-C) */
int weft_open_port(const char *cmd, const char *arg);
int weft_record_open(const char *dir, int port, int quiet, int code);

#endif
