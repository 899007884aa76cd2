/* replay.c - runs every file of a fuzz corpus directory through the fuzz target once, so the
 * corpus is a regression suite in every test run (no libFuzzer needed). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: fuzz_replay CORPUS_DIR\n");
		return 2;
	}
	DIR *d = opendir(argv[1]);
	if (!d) {
		perror(argv[1]);
		return 1;
	}
	struct dirent *e;
	int n = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", argv[1], e->d_name);
		FILE *f = fopen(path, "rb");
		if (!f)
			continue;
		fseek(f, 0, SEEK_END);
		long size = ftell(f);
		fseek(f, 0, SEEK_SET);
		uint8_t *buf = malloc((size_t)size + 1);
		size_t got = fread(buf, 1, (size_t)size, f);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, got);
		free(buf);
		n++;
	}
	closedir(d);
	if (n == 0) {
		fprintf(stderr, "fuzz_replay: %s holds no inputs\n", argv[1]);
		return 1;
	}
	printf("%d passed, 0 failed\n", n);
	return 0;
}
