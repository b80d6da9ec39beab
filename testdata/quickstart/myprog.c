// myprog: the program of the README's quick start. `myprog --serve N`
// handles N requests of sizes 1 to 4096 bytes, each through
// handle_request(req, size), and prints how many and their total size:
// the truth a recording of it is checked against.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct request {
	int id;
	char path[32];
};

__attribute__((noinline)) int handle_request(struct request *req, int size)
{
	// Work that takes longer for larger requests.
	volatile unsigned long x = 0;
	for (int i = 0; i < size * 4; i++)
		x += (unsigned long)i ^ (unsigned long)req->id;
	return size > 2048 ? -1 : 0;
}

int main(int argc, char **argv)
{
	if (argc != 3 || strcmp(argv[1], "--serve") != 0) {
		fprintf(stderr, "usage: myprog --serve N\n");
		return 2;
	}
	int n = atoi(argv[2]);
	unsigned long total = 0;
	unsigned int seed = 1;
	for (int i = 0; i < n; i++) {
		struct request req = {.id = i};
		snprintf(req.path, sizeof req.path, "/item/%d", i);
		seed = seed * 1103515245 + 12345;
		int size = 1 + (seed >> 16) % 4096;
		handle_request(&req, size);
		total += size;
	}
	printf("handled %d requests, %lu bytes\n", n, total);
	return 0;
}
