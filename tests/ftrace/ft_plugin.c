/* dlopen: plugin_work() of a library loaded (and unloaded) at run time, 10 calls. */
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	void *h = dlopen(argc > 1 ? argv[1] : "./libft_plugin.so", RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	void (*work)(int) = (void (*)(int))dlsym(h, "plugin_work");
	for (int i = 0; i < 10; i++)
		work(i);
	dlclose(h);
	return 0;
}
