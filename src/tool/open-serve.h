/* open-serve.h - serve one trace file once over HTTP to the Perfetto UI (weft open). */
#ifndef WEFT_OPEN_SERVE_H
#define WEFT_OPEN_SERVE_H

#define WEFT_OPEN_PORT 9001 /* the only port ui.perfetto.dev's content policy lets it fetch from */
#define WEFT_OPEN_ORIGIN "https://ui.perfetto.dev"
#define WEFT_EXIT_INTERRUPTED 130 /* Ctrl-C before the UI fetched the file: 128 + SIGINT */

struct weft_open_opts {
	int port;	    /* on 127.0.0.1 */
	const char *origin; /* the UI: its URL and the CORS origin; WEFT_OPEN_ORIGIN */
	int browser;	    /* open the URL with xdg-open where there is a desktop */
	int quiet;	    /* only the URL on stdout, errors on stderr */
};

/* Serves FILE at http://127.0.0.1:PORT/NAME until one GET of it is answered completely, printing
 * the UI's URL first. Returns an exit status: 0 fetched, WEFT_EXIT_FAIL (port busy, file
 * unreadable; said as "weft: CMD: why"); Ctrl-C ends the process with WEFT_EXIT_INTERRUPTED. */
int weft_open_serve(const char *cmd, const char *file, const struct weft_open_opts *o);

#endif
