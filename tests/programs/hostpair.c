/* hostpair send|recv FIFO: two processes (on two "hosts" in the tests: one of them in other
 * UTS and time namespaces) that exchange one message through a fifo in a known order. The
 * sender's "send" slice writes it and sends a flow (id 0x77); the receiver's "recv" slice
 * begins once the read returned and ends that flow. Then "tick" instants carry the receiver's
 * own clock reading (weft_now_ns, the argument `boot_ns`) and a complete slice "mark" spans
 * [t, t + 1 us] of it, so a test can tell how the converters moved its times. The sender
 * first creates FIFO.started: its process has begun (and weft taken its first clock reading),
 * so a test can start the other host's recording after it, deterministically. */
#include <weft.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	if (!strcmp(argv[1], "send")) {
		char started[4096];
		snprintf(started, sizeof(started), "%s.started", argv[2]);
		int sf = open(started, O_WRONLY | O_CREAT, 0644);
		if (sf >= 0)
			close(sf);
		int fd = open(argv[2], O_WRONLY);
		if (fd < 0)
			return 1;
		WEFT_SCOPE("send");
		weft_flow_out(0x77);
		char c = 'x';
		if (write(fd, &c, 1) != 1)
			return 1;
		close(fd);
		return 0;
	}
	int fd = open(argv[2], O_RDONLY);
	if (fd < 0)
		return 1;
	WEFT_INSTANT("ready"); /* the thread's first event (its buffer) before the timed part */
	char c;
	if (read(fd, &c, 1) != 1)
		return 1;
	{
		uint64_t now = weft_now_ns();
		WEFT_SCOPE("recv", WEFT_I("boot_ns", now));
		weft_flow_in(0x77);
	}
	close(fd);
	/* instants that carry their own clock reading (one of them is not preempted between the
	 * two), and a complete slice whose times are that clock's (a record holding ns, not ticks) */
	for (int i = 0; i < 5; i++) {
		uint64_t now = weft_now_ns();
		WEFT_INSTANT("tick", WEFT_I("boot_ns", now));
	}
	uint64_t t0 = weft_now_ns();
	WEFT_COMPLETE("mark", t0, t0 + 1000);
	return 0;
}
