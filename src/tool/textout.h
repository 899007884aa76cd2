/* textout.h - quoting for the CLI's machine-readable outputs (CSV, JSON) on stdout. */
#ifndef WEFT_TEXTOUT_H
#define WEFT_TEXTOUT_H

/* A JSON string, quoted and escaped. */
void weft_json_str(const char *s);
/* An RFC 4180 CSV field: quoted, with quotes doubled (C++ names hold commas and quotes). */
void weft_csv_str(const char *s);

#endif
