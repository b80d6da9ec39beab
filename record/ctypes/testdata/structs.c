// structs.c is the workload of the ctypes tests: functions whose
// parameters exercise the x86-64 System V ABI's classification, and structs
// whose layout the tests resolve. "./structs --layout" prints offsetof and
// sizeof of every member the tests resolve (the ground truth for offsets);
// "./structs" calls every function once with the values the tests expect
// to find at their entries (under gdb).
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define API __attribute__((noinline, noipa, used))

struct hdr {
	unsigned short size;
	unsigned char flags;
	int id;
};

struct buf {
	char *data;
	unsigned long len;
};

struct req {
	struct hdr hdr;       /* nested struct */
	struct req *next;     /* pointer member */
	char name[16];        /* char array */
	union {               /* named union member */
		int i;
		long l;
		void *p;
	} u;
	struct {              /* anonymous struct member */
		int x, y;
	};
	union {               /* anonymous union, with a struct of bitfields */
		unsigned int raw;
		struct {
			unsigned int lo : 4, hi : 12;
		} bits;
	};
	unsigned int bf1 : 3, bf2 : 5; /* bitfields */
	struct buf *buf;
	void *opaque;
	long arr[4];
	double ratio;
};

struct big { long a, b, c; };                        /* 24 bytes: MEMORY */
struct pair { char *p; long n; };                    /* 16 bytes: two INTEGER eightbytes */
struct small { int a; int b; };                      /* 8 bytes: one INTEGER eightbyte */
struct mixed { long a; double d; };                  /* INTEGER, SSE */
struct packed_s { char c; long l; } __attribute__((packed)); /* unaligned: MEMORY */

long opaque_user(struct req *r, int n); /* in structs2.c, which sees struct req only declared */

API long rx(struct req *req, size_t size) { return req->hdr.id + (long)size; }
API long by_value(struct big b, int x) { return b.a + b.b + b.c + x; }
API double with_double(double d, int x) { return d * x; }
API long many(long a, long b, long c, long d, long e, long f, long g, long h) { return a + b + c + d + e + f + g + h; }
API struct big ret_big(int x) { struct big b = {x, x + 1, x + 2}; return b; }
API struct pair ret_pair(char *p, long n) { struct pair r = {p, n}; return r; }
API long pass_pair(struct pair p, struct small s, long z) { return (long)p.p + p.n + s.a + s.b + z; }
API long pass_mixed(struct mixed m, long z) { return m.a + (long)m.d + z; }
API long pass_packed(struct packed_s s, long z) { return s.c + s.l + z; }
API long after_stack(long a, long b, long c, long d, long e, __int128 f, long g) { return a + b + c + d + e + (long)f + (long)(f >> 64) + g; }
API long align_stack(long a, long b, long c, long d, long e, long f, long s1, __int128 w, long t) { return a + b + c + d + e + f + s1 + (long)w + t; }
API int vararg(const char *fmt, ...) { return fmt[0]; }
API static int local_static(struct req *r) { return r->x; }

/* inl_twice is inlined into main at -O2 and kept out of line (it is
   external): its DWARF is an abstract instance and a concrete copy. */
__attribute__((used)) long inl_twice(struct req *r, int k) { return r->y * k + r->hdr.flags; }

#define L(s, m) printf("%s %s %zu %zu\n", #s, #m, offsetof(struct s, m), sizeof(((struct s *)0)->m))

static void layout(void)
{
	L(req, hdr.size); L(req, hdr.flags); L(req, hdr.id);
	L(req, next); L(req, name); L(req, u.i); L(req, u.l); L(req, u.p);
	L(req, x); L(req, y); L(req, raw); L(req, buf); L(req, opaque);
	L(req, arr); L(req, arr[2]);
	L(buf, data); L(buf, len);
	L(big, c); L(pair, n); L(small, b);
	printf("sizeof req %zu\n", sizeof(struct req));
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--layout") == 0) {
		layout();
		return 0;
	}
	static struct buf b = {"payload", 0x77};
	static struct req r2, r;
	r2.hdr.id = 0x2b;
	r.hdr.size = 100;
	r.hdr.flags = 3;
	r.hdr.id = 0x2a;
	r.next = &r2;
	strcpy(r.name, "first");
	r.u.l = 0x5555;
	r.x = 7;
	r.y = 8;
	r.buf = &b;
	r.arr[2] = 0x33;
	long (*volatile inl)(struct req *, int) = inl_twice;
	long sum = rx(&r, 0x1234);
	struct big bg = {0x1111, 0x2222, 0x3333};
	sum += by_value(bg, 0x44);
	sum += (long)with_double(1.5, 0x55);
	sum += many(0x101, 0x102, 0x103, 0x104, 0x105, 0x106, 0x107, 0x108);
	sum += ret_big(0x66).c;
	sum += ret_pair((char *)0x7777, 0x88).n;
	struct pair pp = {(char *)0x9999, 0xaa};
	struct small sm = {0xbb, 0xcc};
	sum += pass_pair(pp, sm, 0xdd);
	struct mixed mx = {0xee, 2.5};
	sum += pass_mixed(mx, 0xff);
	struct packed_s ps = {'c', 0x1212};
	sum += pass_packed(ps, 0x1313);
	sum += after_stack(1, 2, 3, 4, 5, ((__int128)0x1414 << 64) | 0x1515, 0x1616);
	sum += align_stack(1, 2, 3, 4, 5, 6, 0x1717, ((__int128)0x1818 << 64) | 0x1919, 0x2020);
	sum += vararg("x", 1, 2);
	sum += local_static(&r);
	sum += inl_twice(&r, 0x99) + inl(&r, 0x99);
	sum += opaque_user(&r, 0x3c);
	printf("%ld\n", sum);
	return 0;
}
