/* hostpair send|recv FIFO: two processes (on two "hosts" in the tests: one of them in other
 * UTS and time namespaces) that exchange one message through a fifo in a known order. The
 * sender's "send" slice writes it and sends a flow (id 0x77); the receiver's "recv" slice
 * begins once the read returned and ends that flow, and carries its own clock reading
 * (weft_now_ns, the argument `boot_ns`) at its begin, so a test can tell how the converters
 * moved its times. */
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
	uint64_t now = weft_now_ns();
	WEFT_SCOPE("recv", WEFT_I("boot_ns", now));
	weft_flow_in(0x77);
	close(fd);
	return 0;
}
