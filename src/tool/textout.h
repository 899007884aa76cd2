/* textout.h - quoting for the CLI's machine-readable outputs (CSV, JSON) on stdout. */
#ifndef WEFT_TEXTOUT_H
#define WEFT_TEXTOUT_H

#include <stdint.h>

/* A JSON string, quoted and escaped. */
void weft_json_str(const char *s);
/* An RFC 4180 CSV field: quoted, with quotes doubled (C++ names hold commas and quotes). */
void weft_csv_str(const char *s);

/* The unit of a column of durations, chosen from the column's largest value (ns below 100 us,
 * us below 100 ms, ms below 100 s, else s), so a column reads down. */
struct weft_unit {
	const char *name;
	double div;
	int decimals;
};
struct weft_unit weft_unit_for(uint64_t max_ns);
/* `weft report --unit ns|us|ms|s`: every later weft_unit_for gives that unit (scripts and
 * runs compared side by side read the same unit everywhere). 0, or -1 for an unknown name. */
int weft_unit_force(const char *name);

#endif
