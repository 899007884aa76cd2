/*
 * cmd-top.c - `weft top [DIR]`: a live view of a run being recorded into DIR (docs/top.md),
 * refreshed every -d SECS from the traced processes themselves (top-sample.c asks every
 * recorder writing DIR; each process answers from the state its writer keeps, src/lib/live.c),
 * as htop and perf top do: per process (rank and host in a job) and thread, what is open now
 * and where the self time goes. On a terminal it redraws in place (plain ANSI: the alternate
 * screen, cursor home, clear) and reads keys without waiting for Enter: s sort, f filter, p
 * pause, q quit. --once prints one frame (two samples -d apart) and exits; -f csv|json writes
 * frames for machines. A directory whose run has ended shows its final totals from the trace;
 * one with neither a recorder nor a trace is an error (exit 1).
 */
#include "tool/cmd.h"
#include "tool/top.h"
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static void help(FILE *f)
{
	fprintf(f, "usage: weft top [OPTIONS] [DIR]   (default DIR weft.data)\n"
		   "Watch the run being recorded into DIR: per process (rank and host in a job) and thread,\n"
		   "events and calls per second, drops, the share of time in MPI, the calls open now, and\n"
		   "the functions and slices with the most self time; in a job, which rank the others wait\n"
		   "for. The data comes from the traced processes (asked through each weft record's control\n"
		   "socket), not from the files. A run that has ended shows its final totals.\n\n"
		   "  -d, --delay SECS     refresh every SECS seconds (default 1; 0.1 to 3600)\n"
		   "      --once           print one frame (two samples SECS apart) as text and exit\n"
		   "  -n, --frames N       exit after N frames\n"
		   "  -f, --format FMT     text (default), csv or json (one object per frame)\n"
		   "  -s, --sort KEY       self (default), calls, events or name\n"
		   "      --filter F       rank=N, pid=N, tid=N, or a part of a process, host or thread name\n"
		   "      --memory         show each process's heap in use (glibc's count)\n"
		   "  -h, --help           this text\n\n"
		   "Keys: s next sort, f filter (Enter applies, empty clears), p or space pause, q quit.\n"
		   "Exit status: 0; 1 when nothing records DIR and it holds no trace; 2 usage.\n");
}

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static struct termios saved_tio;
static int raw_on;

static void raw_mode(int on)
{
	if (on && !raw_on && !tcgetattr(0, &saved_tio)) {
		struct termios t = saved_tio;
		t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		t.c_cc[VMIN] = 1;
		t.c_cc[VTIME] = 0;
		tcsetattr(0, TCSANOW, &t);
		raw_on = 1;
		fputs("\033[?1049h\033[?25l", stdout);
	} else if (!on && raw_on) {
		tcsetattr(0, TCSANOW, &saved_tio);
		raw_on = 0;
		fputs("\033[?25h\033[?1049l", stdout);
		fflush(stdout);
	}
}

static void term_size(struct top_view *v)
{
	struct winsize ws;
	if (!ioctl(1, TIOCGWINSZ, &ws) && ws.ws_col) {
		v->width = ws.ws_col;
		v->height = ws.ws_row;
	}
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Waits up to secs, reading keys when interactive: 1 to refresh now, 0 at the deadline, -1 quit. */
static int wait_keys(double secs, int interactive, struct top_view *v, char *filter, size_t flen)
{
	double end = now_s() + secs;
	for (;;) {
		if (stop_flag)
			return -1;
		double left = end - now_s();
		if (left <= 0)
			return 0;
		struct pollfd p = {.fd = interactive ? 0 : -1, .events = POLLIN};
		int rc = poll(&p, 1, (int)(left * 1000) + 1);
		if (rc <= 0 || !(p.revents & POLLIN))
			continue;
		char c;
		if (read(0, &c, 1) != 1)
			return -1;
		switch (c) {
		case 'q': case 'Q': return -1;
		case 'p': case ' ': v->paused = !v->paused; return 1;
		case 's': case '>': v->sort = (enum top_sort)((v->sort + 1) % TOP_NSORT); return 1;
		case '<': v->sort = (enum top_sort)((v->sort + TOP_NSORT - 1) % TOP_NSORT); return 1;
		case 'm': v->memory = !v->memory; return 1;
		case 'f': case '/': {
			size_t l = 0;
			printf("\033[%d;1H\033[Kfilter (rank=N, pid=N, tid=N or a name part): ", v->height > 0 ? v->height : 1);
			fflush(stdout);
			while (read(0, &c, 1) == 1 && c != '\n' && c != '\r' && c != 27) {
				if ((c == 127 || c == 8) && l) {
					l--;
					fputs("\b \b", stdout);
				} else if (c >= 32 && l + 1 < flen) {
					filter[l++] = c;
					fputc(c, stdout);
				}
				fflush(stdout);
			}
			if (c != 27)
				filter[l] = 0;
			return 1;
		}
		default: break;
		}
	}
}

static void draw(const struct top_view *v, const struct top_sample *before, const struct top_sample *now, int interactive)
{
	if (interactive)
		fputs("\033[H\033[2J", stdout);
	top_frame_print(stdout, v, before, now);
	fflush(stdout);
}

int cmd_top(int argc, char **argv)
{
	static const struct option opts[] = {{"delay", required_argument, 0, 'd'}, {"once", no_argument, 0, 'O'},
					     {"frames", required_argument, 0, 'n'}, {"format", required_argument, 0, 'f'},
					     {"sort", required_argument, 0, 's'}, {"filter", required_argument, 0, 'F'},
					     {"memory", no_argument, 0, 'm'}, {"help", no_argument, 0, 'h'},
					     {0, 0, 0, 0}};
	struct top_view v = {.format = TOP_TEXT, .sort = TOP_SORT_SELF, .header_csv = 1};
	double delay = 1;
	long frames = -1;
	int once = 0, c;
	static char filter[256];
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "d:n:f:s:h", opts, NULL)) != -1) {
		char *end;
		switch (c) {
		case 'd':
			delay = strtod(optarg, &end);
			if (end == optarg || *end || !isfinite(delay) || delay < 0.1 || delay > 3600) {
				weft_cli_error("top", "bad -d '%s': expected seconds, 0.1 to 3600", optarg);
				return WEFT_EXIT_USAGE;
			}
			break;
		case 'O': once = 1; break;
		case 'n':
		{
			long long v;
			if (weft_cli_parse_int(optarg, 1, LONG_MAX, &v)) {
				weft_cli_error("top", "bad -n '%s': expected a number of frames, 1 or more", optarg);
				return WEFT_EXIT_USAGE;
			}
			frames = (long)v;
			break;
		}
		case 'f':
			if (!strcmp(optarg, "text"))
				v.format = TOP_TEXT;
			else if (!strcmp(optarg, "csv"))
				v.format = TOP_CSV;
			else if (!strcmp(optarg, "json"))
				v.format = TOP_JSON;
			else {
				weft_cli_error("top", "bad -f '%s': expected text, csv or json", optarg);
				return WEFT_EXIT_USAGE;
			}
			break;
		case 's': {
			int k;
			for (k = 0; k < TOP_NSORT && strcmp(optarg, top_sort_names[k]); k++)
				;
			if (k == TOP_NSORT) {
				weft_cli_error("top", "bad --sort '%s': expected self, calls, events or name", optarg);
				return WEFT_EXIT_USAGE;
			}
			v.sort = (enum top_sort)k;
			break;
		}
		case 'F': snprintf(filter, sizeof(filter), "%s", optarg); break;
		case 'm': v.memory = 1; break;
		case 'h': help(stdout); return WEFT_EXIT_OK;
		default:
			weft_cli_error("top", "unknown option '%s' (see 'weft top --help')", argv[optind - 1]);
			return WEFT_EXIT_USAGE;
		}
	}
	if (optind < argc - 1) {
		weft_cli_error("top", "one trace directory expected (usage: weft top [OPTIONS] [DIR])");
		return WEFT_EXIT_USAGE;
	}
	v.dir = optind < argc ? argv[optind] : "weft.data";
	v.filter = filter;
	if (once)
		frames = 1;
	struct top_syms *syms = top_syms_new();
	struct top_sample before, now;
	int rc = syms ? top_sample_live(v.dir, syms, &before) : -ENOMEM;
	if (rc == -ENOENT && before.elsewhere) { /* a job whose recorders here are gone or never were */
		weft_cli_error("top", "nothing records %s from this host; %d recorder%s of its job run%s on other hosts "
			       "(%s): run weft top there", v.dir, before.elsewhere, before.elsewhere == 1 ? "" : "s",
			       before.elsewhere == 1 ? "s" : "", before.other_hosts);
		top_syms_free(syms);
		return WEFT_EXIT_FAIL;
	}
	if (rc == -ENOENT || rc == -ENOTDIR) { /* no recorder: a run that ended, or nothing */
		char err[512];
		top_syms_free(syms);
		if (rc == -ENOTDIR || top_sample_ended(v.dir, &now, err, sizeof(err))) {
			weft_cli_error("top", "nothing records %s, and it holds no trace to show", v.dir);
			return WEFT_EXIT_FAIL;
		}
		if (v.format == TOP_TEXT)
			term_size(&v);
		v.width = v.format == TOP_TEXT && isatty(1) ? v.width : 0;
		v.height = 0;
		top_frame_print(stdout, &v, NULL, &now);
		top_sample_free(&now);
		return WEFT_EXIT_OK;
	}
	if (rc) {
		weft_cli_error("top", "%s: %s", v.dir, strerror(-rc));
		top_syms_free(syms);
		return WEFT_EXIT_FAIL;
	}
	int interactive = !once && v.format == TOP_TEXT && isatty(0) && isatty(1);
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (interactive) {
		raw_mode(1);
		term_size(&v);
		draw(&v, NULL, &before, 1);
	}
	int status = WEFT_EXIT_OK, ended = 0;
	for (long shown = 0; frames < 0 || shown < frames;) {
		int k = wait_keys(delay, interactive, &v, filter, sizeof(filter));
		if (k < 0)
			break;
		if (interactive)
			term_size(&v);
		if (v.paused) {
			if (k > 0)
				draw(&v, NULL, &before, interactive);
			continue;
		}
		rc = top_sample_live(v.dir, syms, &now);
		if (rc == -ENOENT) { /* every recorder ended */
			ended = 1;
			break;
		}
		if (rc) {
			weft_cli_error("top", "%s: %s", v.dir, strerror(-rc));
			status = WEFT_EXIT_FAIL;
			break;
		}
		draw(&v, &before, &now, interactive);
		if (v.format == TOP_CSV)
			v.header_csv = 0;
		shown++;
		top_sample_free(&before);
		before = now;
	}
	if (interactive && ended) { /* the last frame stays in view until a key */
		printf("\033[%d;1H\033[Kthe run has ended (its recorders are gone): press any key", v.height > 0 ? v.height : 1);
		fflush(stdout);
		char ch;
		while (!stop_flag && read(0, &ch, 1) < 0 && errno == EINTR)
			;
	}
	raw_mode(0);
	if (ended && once) { /* ended before the second sample: the first alone */
		top_frame_print(stdout, &v, NULL, &before);
	}
	if (ended)
		fprintf(stderr, "weft: top: the run recorded into %s has ended\n", v.dir);
	top_sample_free(&before);
	top_syms_free(syms);
	return status;
}
