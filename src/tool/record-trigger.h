/*
 * record-trigger.h - weft record's snapshot options (record-trigger.c): --snapshot-signal,
 * --trigger, --max-snapshots, --min-interval, --after, passed on as WEFT_OPTIONS keys; and at
 * the end, each DIR/snapshot-N converted to DIR/snapshot-N/trace.pftrace.
 */
#ifndef WEFT_RECORD_TRIGGER_H
#define WEFT_RECORD_TRIGGER_H

#include <stddef.h>

enum {
	WEFT_RECOPT_SNAPSHOT_SIGNAL = 0x300,
	WEFT_RECOPT_TRIGGER,
	WEFT_RECOPT_MAX_SNAPSHOTS,
	WEFT_RECOPT_MIN_INTERVAL,
	WEFT_RECOPT_AFTER,
};
/* entries of cmd-record.c's getopt_long table */
#define WEFT_RECORD_TRIGGER_OPTIONS \
	{"snapshot-signal", required_argument, 0, WEFT_RECOPT_SNAPSHOT_SIGNAL}, \
	{"trigger", required_argument, 0, WEFT_RECOPT_TRIGGER}, \
	{"max-snapshots", required_argument, 0, WEFT_RECOPT_MAX_SNAPSHOTS}, \
	{"min-interval", required_argument, 0, WEFT_RECOPT_MIN_INTERVAL}, \
	{"after", required_argument, 0, WEFT_RECOPT_AFTER},
#define WEFT_RECORD_TRIGGER_HELP \
	"      --snapshot-signal=SIG  the signal SIG (USR2, RTMIN+1, ...) asks for a snapshot; the\n" \
	"                          program's own handler for SIG, if it sets one, wins\n" \
	"      --trigger PAT>DUR   a slice whose name matches PAT (glob or /regex/) and lasts longer\n" \
	"                          than DUR (e.g. 'slow*>20ms') asks for a snapshot at its end\n" \
	"                          (repeatable, up to 8)\n" \
	"      --max-snapshots=N   take at most N snapshots (default 16); later requests are refused\n" \
	"      --min-interval=T    refuse a request sooner than T after the last snapshot\n" \
	"      --after=T           keep T more of data after a trigger before the snapshot is written\n" \
	"                          (every snapshot and refusal is a `weft: snapshot` marker; weft info\n" \
	"                          counts them)\n"

/* One of the options above (c, optarg): appends its WEFT_OPTIONS key to extra. 0, or -1 after
 * printing a usage error. */
int weft_record_trigger_option(int c, const char *arg, char *extra, size_t n);
/* Converts every DIR/snapshot-N (a complete trace directory) to DIR/snapshot-N/trace.pftrace;
 * prints a line for each that fails. Returns how many were converted. */
int weft_record_convert_snapshots(const char *dir, int quiet);

#endif
