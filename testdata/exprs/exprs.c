/*
 * exprs: a workload for typed arguments and expressions. Each call of rx()
 * prints the values a probe on it should record, in this order:
 *
 *   rx ID SIZE DELTA LABEL HDR_KIND HDR_SIZE NEXT_ID NAME TAG VALS1 NEXT_OK
 *
 * NEXT_OK is 0 when req->next cannot be read (NULL or an unmapped
 * address), and NEXT_ID is then 0. The return value is ID + SIZE.
 *
 * Build it at -O0 and -O2 with -g: the parameters are in the ABI's
 * registers at rx's first instruction either way.
 */
#include <stdio.h>
#include <stdlib.h>

#define PROBED __attribute__((noipa, used))

struct hdr {
	unsigned short kind; /* offset 0 */
	unsigned int size;   /* offset 4 */
};

struct req {
	long id;	  /* offset 0 */
	struct hdr hdr;	  /* offset 8: kind 8, size 12 */
	struct req *next; /* offset 16 */
	const char *name; /* offset 24 */
	char tag[8];	  /* offset 32 */
	int vals[3];	  /* offset 40 */
};

PROBED long rx(struct req *req, unsigned int size, short delta, const char *label)
{
	volatile long frame = 0;
	(void)frame;
	return req->id + size + (delta ? 0 : 0) + (label ? 0 : 0);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;
	static const char *names[] = {"alpha", "beta", "a-name-longer-than-sixty-three-bytes-which-the-recorder-cuts-short-there"};
	static const char *labels[] = {"small", "big"};
	struct req prev = {.id = 7};
	struct req r;

	for (int i = 0; i < n; i++) {
		r.id = 1000 + i;
		r.hdr.kind = (unsigned short)(i * 3);
		r.hdr.size = 100u * (unsigned)i + 1;
		/* Every third request has no next, every fifth a bad one. */
		r.next = i % 3 == 0 ? NULL : i % 5 == 0 ? (struct req *)0x10 : &prev;
		r.name = names[i % 3];
		snprintf(r.tag, sizeof(r.tag), "t%d", i % 1000);
		r.vals[0] = i, r.vals[1] = -i * 11, r.vals[2] = i * i;
		unsigned int size = 512u * (unsigned)i;
		short delta = (short)(i % 2 ? -i : i);
		const char *label = labels[size >= 4096];
		int next_ok = r.next == &prev;
		long ret = rx(&r, size, delta, label);
		printf("rx %ld %u %d %s %u %u %ld %s %s %d %d %ld\n", r.id, size, delta, label, r.hdr.kind, r.hdr.size,
		       next_ok ? prev.id : 0L, r.name, r.tag, r.vals[1], next_ok, ret);
	}
	return 0;
}
