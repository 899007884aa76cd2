/*
 * open-serve.c - hands one trace file to the Perfetto UI in a browser, the way Perfetto's own
 * tools/open_trace_in_ui does: a small HTTP server on 127.0.0.1 (port 9001 by default, the only
 * local port ui.perfetto.dev's content security policy lets it fetch from) serves the file under
 * its name with CORS headers for the UI's origin, and the UI is pointed at it by the URL
 * ORIGIN/#!/?url=http://127.0.0.1:PORT/NAME, printed, and opened with xdg-open where there is a
 * desktop. The server ends after the first complete GET of the file.
 *
 * Requests: GET or HEAD of /NAME -> 200 with the file; OPTIONS (the CORS preflight, or the
 * Private Network Access one Chrome sends before a public page reads from 127.0.0.1) -> 204
 * allowing GET from the origin; a request that names another Origin -> 403 (no other web page
 * can read the trace or take its one fetch; requests without Origin, such as curl's, are
 * served); another path -> 404; another method -> 405. Each connection gets one answer
 * (Connection: close). Connections are read side by side through poll(2), so an idle connection
 * a browser opens ahead does not hold up the fetch; answers are written blocking, with a send
 * timeout that drops a client that stops reading.
 *
 * Ctrl-C: the handler writes one line and _exit()s with 130 (128 + SIGINT): the file is only
 * read, there is nothing to undo.
 */
#include "tool/open-serve.h"
#include "tool/cmd.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CLIENTS 16
#define REQ_MAX 8192 /* a request's line and headers */
#define IDLE_S 30    /* a connection that sends no complete request in this time is closed */
#define SEND_S 30    /* a client that takes no bytes in this time is dropped */

struct client {
	int fd;
	size_t len;
	time_t since;
	char buf[REQ_MAX + 1];
};

struct served {
	const char *cmd;
	int fd; /* the file */
	off_t size;
	char name[256];	   /* the URL's path: /NAME */
	const char *ctype; /* its Content-Type */
	char origin[256];  /* scheme://host[:port] of the UI, the only origin allowed */
};

/* the Ctrl-C line, written by on_sigint; set before the handler is installed */
static char sigint_msg[128];
static size_t sigint_len;

static void on_sigint(int sig)
{
	(void)sig;
	ssize_t w = write(STDERR_FILENO, sigint_msg, sigint_len);
	(void)w; /* nothing to do if it fails */
	_exit(WEFT_EXIT_INTERRUPTED);
}

static time_t now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

/* NAME in the URL: the file's name where it needs no escaping, else trace.json / trace.pftrace */
static void url_name(const char *file, char *out, size_t n)
{
	const char *b = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
	size_t len = strlen(b);
	int ok = len > 0 && len < n && b[0] != '.';
	for (const char *p = b; ok && *p; p++)
		ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		     *p == '.' || *p == '_' || *p == '-';
	const char *dot = strrchr(b, '.');
	int json = dot && !strcmp(dot, ".json");
	snprintf(out, n, "%s", ok ? b : json ? "trace.json" : "trace.pftrace");
}

/* the origin of a URL: scheme://host[:port], without path, query or fragment */
static void origin_of(const char *url, char *out, size_t n)
{
	snprintf(out, n, "%s", url);
	char *host = strstr(out, "://");
	char *cut = strpbrk(host ? host + 3 : out, "/?#");
	if (cut)
		*cut = 0;
}

/* the value of header NAME (case-insensitive) in request REQ into out; 0 if found */
static int header(const char *req, const char *name, char *out, size_t n)
{
	size_t nl = strlen(name);
	for (const char *l = strstr(req, "\r\n"); l && l[2] != '\r'; l = strstr(l + 2, "\r\n")) {
		const char *h = l + 2;
		if (strncasecmp(h, name, nl) || h[nl] != ':')
			continue;
		h += nl + 1;
		while (*h == ' ' || *h == '\t')
			h++;
		size_t len = strcspn(h, "\r\n");
		while (len && (h[len - 1] == ' ' || h[len - 1] == '\t'))
			len--;
		snprintf(out, n, "%.*s", (int)len, h);
		return 0;
	}
	return -1;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* an answer without the file: STATUS, the CORS origin, EXTRA header lines, a short text body */
static void reply(const struct served *s, int fd, const char *status, const char *extra, const char *body)
{
	char h[1024];
	int n = snprintf(h, sizeof(h),
			 "HTTP/1.1 %s\r\nAccess-Control-Allow-Origin: %s\r\nCache-Control: no-cache\r\n%s"
			 "Content-Type: text/plain\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
			 status, s->origin, extra, strlen(body), body);
	if (n > 0 && (size_t)n < sizeof(h))
		send_all(fd, h, (size_t)n);
}

/* the file: headers, and for GET the bytes; 1 when every byte went out */
static int send_file(const struct served *s, int fd, int head)
{
	char h[1024];
	int n = snprintf(h, sizeof(h),
			 "HTTP/1.1 200 OK\r\nAccess-Control-Allow-Origin: %s\r\nCache-Control: no-cache\r\n"
			 "Content-Type: %s\r\nContent-Length: %lld\r\nConnection: close\r\n\r\n",
			 s->origin, s->ctype, (long long)s->size);
	if (n <= 0 || (size_t)n >= sizeof(h) || send_all(fd, h, (size_t)n))
		return 0;
	if (head)
		return 0;
	off_t off = 0;
	while (off < s->size) {
		ssize_t w = sendfile(fd, s->fd, &off, (size_t)(s->size - off));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) /* the client went away or stalled, or the file shrank */
			return 0;
	}
	return 1;
}

/* answers the complete request in c; 1 when it was the file's complete GET */
static int answer(const struct served *s, struct client *c)
{
	char method[16], target[1024], origin[256], want[512], allow[1024];
	if (sscanf(c->buf, "%15s %1023s", method, target) != 2) {
		reply(s, c->fd, "400 Bad Request", "", "bad request\n");
		return 0;
	}
	if (!header(c->buf, "Origin", origin, sizeof(origin)) && strcasecmp(origin, s->origin)) {
		reply(s, c->fd, "403 Forbidden", "", "origin not allowed\n");
		return 0;
	}
	if (!strcmp(method, "OPTIONS")) {
		if (header(c->buf, "Access-Control-Request-Headers", want, sizeof(want)))
			snprintf(want, sizeof(want), "*");
		snprintf(allow, sizeof(allow),
			 "Access-Control-Allow-Methods: GET, HEAD, OPTIONS\r\n"
			 "Access-Control-Allow-Headers: %s\r\n"
			 "Access-Control-Allow-Private-Network: true\r\n"
			 "Access-Control-Max-Age: 86400\r\n", want);
		reply(s, c->fd, "204 No Content", allow, "");
		return 0;
	}
	char *q = strpbrk(target, "?#");
	if (q)
		*q = 0;
	if (target[0] != '/' || strcmp(target + 1, s->name)) {
		reply(s, c->fd, "404 Not Found", "", "not found\n");
		return 0;
	}
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		reply(s, c->fd, "405 Method Not Allowed", "Allow: GET, HEAD, OPTIONS\r\n", "method not allowed\n");
		return 0;
	}
	return send_file(s, c->fd, !strcmp(method, "HEAD"));
}

/* closes after the client has read the answer: our side shut, its rest read for up to MS ms
 * (closing with unread input would reset the connection and could cut the answer short) */
static void close_gently(int fd, int ms)
{
	char sink[4096];
	shutdown(fd, SHUT_WR);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	while (poll(&p, 1, ms) > 0 && recv(fd, sink, sizeof(sink), 0) > 0)
		;
	close(fd);
}

static int have_desktop(void)
{
	const char *x = getenv("DISPLAY"), *w = getenv("WAYLAND_DISPLAY");
	return (x && *x) || (w && *w);
}

/* xdg-open somewhere on PATH */
static int have_xdg_open(void)
{
	const char *path = getenv("PATH");
	char dir[4096];
	while (path && *path) {
		size_t len = strcspn(path, ":");
		snprintf(dir, sizeof(dir), "%.*s/xdg-open", (int)len ? (int)len : 1, len ? path : ".");
		if (!access(dir, X_OK))
			return 1;
		path += len + (path[len] == ':');
	}
	return 0;
}

/* runs xdg-open URL on its own, its output discarded; its pid or -1 */
static pid_t launch_browser(const char *url)
{
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
		}
		setsid(); /* not in the terminal's job: Ctrl-C is for weft open */
		execlp("xdg-open", "xdg-open", url, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static int listen_on(const char *cmd, int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	if (fd < 0) {
		weft_cli_error(cmd, "cannot make a socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)); /* past a previous run's TIME_WAIT */
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 16)) {
		if (errno == EADDRINUSE)
			weft_cli_error(cmd, "port %d of 127.0.0.1 is in use (another weft open, or trace_processor "
				       "--httpd?): end that, or choose another port with --port N", port);
		else
			weft_cli_error(cmd, "cannot listen on 127.0.0.1:%d: %s", port, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

int weft_open_serve(const char *cmd, const char *file, const struct weft_open_opts *o)
{
	static struct client cl[MAX_CLIENTS]; /* this function's, one call at a time */
	struct served s = {.cmd = cmd};
	struct stat st;
	s.fd = open(file, O_RDONLY | O_CLOEXEC);
	if (s.fd < 0 || fstat(s.fd, &st) || !S_ISREG(st.st_mode)) {
		weft_cli_error(cmd, "cannot serve %s: %s", file, s.fd < 0 ? strerror(errno) : "not a regular file");
		if (s.fd >= 0)
			close(s.fd);
		return WEFT_EXIT_FAIL;
	}
	s.size = st.st_size;
	url_name(file, s.name, sizeof(s.name));
	const char *dot = strrchr(s.name, '.');
	s.ctype = dot && !strcmp(dot, ".json") ? "application/json" : "application/octet-stream";
	origin_of(o->origin, s.origin, sizeof(s.origin));
	int lfd = listen_on(cmd, o->port);
	if (lfd < 0) {
		close(s.fd);
		return WEFT_EXIT_FAIL;
	}
	struct sigaction sa = {.sa_handler = on_sigint}, old_int, old_pipe;
	sigint_len = (size_t)snprintf(sigint_msg, sizeof(sigint_msg),
				      "\nweft: %s: interrupted before the UI fetched the trace\n", cmd);
	if (sigint_len >= sizeof(sigint_msg))
		sigint_len = sizeof(sigint_msg) - 1;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sa.sa_handler = SIG_IGN; /* a client that goes away is an error of its send, not our end */
	sigaction(SIGPIPE, &sa, &old_pipe);

	char url[1024];
	snprintf(url, sizeof(url), "%s/#!/?url=http://127.0.0.1:%d/%s", o->origin, o->port, s.name);
	printf("%s\n", url);
	fflush(stdout);
	int browse = o->browser && have_desktop() && have_xdg_open();
	if (!o->quiet) {
		fprintf(stderr, "weft: %s: serving %s (%.1f MB) once at http://127.0.0.1:%d/%s for %s; %s; Ctrl-C to stop\n",
			cmd, file, (double)s.size / 1e6, o->port, s.name, s.origin,
			browse ? "opening it in the browser" : "open the URL above in a browser");
		if (o->port != WEFT_OPEN_PORT && !strcmp(s.origin, WEFT_OPEN_ORIGIN))
			fprintf(stderr, "weft: %s: note: ui.perfetto.dev fetches only from 127.0.0.1:%d (its content "
				"security policy); port %d needs a tunnel to 9001 or a UI of your own (--origin)\n",
				cmd, WEFT_OPEN_PORT, o->port);
	}
	pid_t browser = browse ? launch_browser(url) : -1;

	int ncl = 0, fetched = 0, rc = WEFT_EXIT_OK;
	while (!fetched) {
		struct pollfd p[MAX_CLIENTS + 1];
		p[0] = (struct pollfd){.fd = lfd, .events = ncl < MAX_CLIENTS ? POLLIN : 0};
		for (int i = 0; i < ncl; i++)
			p[i + 1] = (struct pollfd){.fd = cl[i].fd, .events = POLLIN};
		if (poll(p, (nfds_t)ncl + 1, 1000) < 0) {
			if (errno == EINTR)
				continue;
			weft_cli_error(cmd, "poll: %s", strerror(errno));
			rc = WEFT_EXIT_FAIL;
			break;
		}
		time_t now = now_s();
		/* backwards, so the last client moved into a closed one's place was already looked at */
		for (int i = ncl - 1; i >= 0 && !fetched; i--) {
			struct client *c = &cl[i];
			int done = 0;
			if (p[i + 1].revents) {
				ssize_t r = recv(c->fd, c->buf + c->len, REQ_MAX - c->len, 0);
				if (r < 0 && errno == EINTR)
					continue;
				if (r <= 0) {
					done = 1;
				} else {
					c->len += (size_t)r;
					c->buf[c->len] = 0;
					if (strstr(c->buf, "\r\n\r\n")) {
						fetched = answer(&s, c);
						done = 1;
					} else if (c->len == REQ_MAX) {
						reply(&s, c->fd, "431 Request Header Fields Too Large", "", "request too large\n");
						done = 1;
					}
				}
			} else if (now - c->since > IDLE_S) {
				done = 1;
			}
			if (done) {
				close_gently(c->fd, fetched ? 1000 : 200);
				cl[i] = cl[--ncl];
			}
		}
		if (!fetched && (p[0].revents & POLLIN)) {
			int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0) {
				struct timeval tv = {.tv_sec = SEND_S};
				setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
				cl[ncl].fd = fd;
				cl[ncl].len = 0;
				cl[ncl].since = now;
				ncl++;
			}
		}
	}
	for (int i = 0; i < ncl; i++)
		close(cl[i].fd);
	close(lfd);
	close(s.fd);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
	if (browser > 0)
		waitpid(browser, NULL, WNOHANG); /* xdg-open usually has ended; if not, init reaps it */
	if (fetched && !o->quiet)
		fprintf(stderr, "weft: %s: the UI fetched %s (%lld bytes); done\n", cmd, s.name, (long long)s.size);
	return rc;
}
