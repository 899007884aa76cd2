/* A C++ program built against an installed weft (tests/install/test_install.sh). */
#include <weft.h>
#include <cstdio>
#include <vector>

static int work(int n)
{
	WEFT_FUNC();
	WEFT_SCOPE("step", WEFT_I("n", n));
	WEFT_COUNTER("n", n);
	return n * 2;
}

int main(void)
{
	int s = 0;
	for (int i = 0; i < 10; i++)
		s += work(i);
	printf("%d\n", s);
	return 0;
}
