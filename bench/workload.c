/*
 * workload: the traced process of `make bench`. It fires one probe site as
 * fast as it can on one thread per CPU of its affinity mask (or on -T
 * threads) and times its own loop with clock_gettime(CLOCK_MONOTONIC).
 *
 * Build (bench/bench.sh does, and checks with objdump that bench_func,
 * bench_ret and bench_req start with push %rbp, which uprobes emulate instead of
 * single-stepping):
 *
 *   gcc -O2 -g -fno-omit-frame-pointer -fcf-protection=none -pthread -o workload workload.c
 *
 * (-g: bpftape types bench_req's parameter from DWARF.)
 *
 * Usage: workload [-w] [-T THREADS] MODE N|-t SECONDS
 *
 *   MODE   call   bench_func(size) N times per thread: the uprobe, the
 *                 uretprobe and the ustack workloads (probe bench_func);
 *                 with -t and no probe, the profile row's CPU-bound loop
 *          usdt   the USDT site bpftape_bench:tick(size), a nop, N times
 *          write  write(/dev/null, buf, size) N times: sys_exit_write
 *          chain  bench_req(req) N times, where req->hdr->size is the
 *                 size: the pointer-chain row (probe bench_req), which
 *                 reads through two pointers what the uprobe row reads
 *                 from a register
 *          all    call bench_func, bench_ret, the USDT site and write
 *                 once each per iteration (the time-to-ready probe set)
 *   N      iterations per thread; with -t, loop for SECONDS instead
 *   -w     print "waiting pid PID" and wait for one byte on stdin (after
 *          creating the threads) before starting, so that a tracer can
 *          attach first
 *   -T     number of threads (default: one per CPU of the affinity mask);
 *          thread i is pinned to the i-th CPU of the mask
 *
 * The sizes come from a fixed table of 4096 seed-like values (virtio-net
 * frames: mostly 1514, 66 or 9014 bytes, in bursts, some noise), the same
 * on every run.
 *
 * Output (after the -w line), once all threads are done, one line per
 * thread and a total:
 *
 *   thread I cpu C events N ns T cpu_ns U
 *   total threads K events N wall_ns T sum S
 *
 * T is the thread's loop time (CLOCK_MONOTONIC), U its CPU time over the
 * loop (CLOCK_THREAD_CPUTIME_ID). They go out in one writev(2), so that a
 * tracer of sys_exit_write counts only the loop's writes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define PROBED __attribute__((noipa, used))

/*
 * report writes the results with writev, not write: the tracepoint and
 * time-to-ready workloads are traced at sys_exit_write filtered by this
 * pid, with the tracer still attached while the results go out, and a
 * write(2) here would be one event more than the loop fired.
 */
static void report(const char *buf, size_t len)
{
	while (len > 0) {
		struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
		ssize_t n = writev(1, &iov, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			perror("workload: writev");
			exit(1);
		}
		buf += n;
		len -= (size_t)n;
	}
}
/* GCC 12 sets up no frame in a leaf that needs no stack, even with
 * -fno-omit-frame-pointer: a volatile local forces push %rbp. */
#define FRAME volatile long frame_ = 0; (void)frame_

#define TABLE 4096
static uint64_t sizes[TABLE];

PROBED uint64_t bench_func(uint64_t size)
{
	FRAME;
	return size;
}

PROBED uint64_t bench_ret(uint64_t size)
{
	FRAME;
	return size + 1;
}

/* A request whose size is two pointers away, as a server's often is. */
struct hdr {
	uint64_t flags;
	uint64_t size;
};

struct req {
	uint64_t id;
	struct hdr *hdr;
};

static struct hdr hdrs[TABLE];
static struct req reqs[TABLE];

PROBED uint64_t bench_req(struct req *req)
{
	FRAME;
	return req->hdr->size;
}

enum mode { CALL, USDT, WRITE, ALL, CHAIN };

static enum mode mode;
static long iterations;
static double seconds;
static int devnull;
static char buf[1 << 15];
static pthread_barrier_t start_barrier;

struct thread {
	pthread_t th;
	int index, cpu;
	long events;
	int64_t ns, cpu_ns;
	uint64_t sum;
};

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* thread_cpu_ns: the calling thread's CPU time, which (without
 * CONFIG_IRQ_TIME_ACCOUNTING) includes the interrupts taken while it ran
 * but not the time other tasks ran on its CPU. */
static int64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/*
 * One loop function per mode, never inlined or cloned, so that the USDT
 * site exists once in the binary (one note, one attachment for every tool).
 * Each runs iterations [i, i+n) and returns what they add to the sum.
 */
PROBED uint64_t loop_call(long i, long n)
{
	uint64_t sum = 0;
	for (long end = i + n; i < end; i++)
		sum += bench_func(sizes[i & (TABLE - 1)]);
	return sum;
}

PROBED uint64_t loop_usdt(long i, long n)
{
	uint64_t sum = 0;
	for (long end = i + n; i < end; i++) {
		uint64_t size = sizes[i & (TABLE - 1)];
		DTRACE_PROBE1(bpftape_bench, tick, size);
		sum += size;
	}
	return sum;
}

PROBED uint64_t loop_write(long i, long n)
{
	uint64_t sum = 0;
	for (long end = i + n; i < end; i++) {
		uint64_t size = sizes[i & (TABLE - 1)];
		if (write(devnull, buf, size) != (ssize_t)size)
			die("write /dev/null");
		sum += size;
	}
	return sum;
}

PROBED uint64_t loop_chain(long i, long n)
{
	uint64_t sum = 0;
	for (long end = i + n; i < end; i++)
		sum += bench_req(&reqs[i & (TABLE - 1)]);
	return sum;
}

PROBED uint64_t loop_all(long i, long n)
{
	uint64_t sum = 0;
	for (long end = i + n; i < end; i++)
		sum += loop_call(i, 1) + bench_ret(sizes[i & (TABLE - 1)]) + loop_usdt(i, 1) + loop_write(i, 1);
	return sum;
}

static uint64_t loop(long i, long n)
{
	switch (mode) {
	case CALL:
		return loop_call(i, n);
	case USDT:
		return loop_usdt(i, n);
	case WRITE:
		return loop_write(i, n);
	case ALL:
		return loop_all(i, n);
	case CHAIN:
		return loop_chain(i, n);
	}
	return 0;
}

static void *run(void *arg)
{
	struct thread *t = arg;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(t->cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
		die("pthread_setaffinity_np");
	pthread_barrier_wait(&start_barrier);
	uint64_t sum = 0;
	long i = 0;
	int64_t c0 = thread_cpu_ns();
	int64_t t0 = now_ns(), t1;
	if (seconds > 0) {
		int64_t end = t0 + (int64_t)(seconds * 1e9);
		const long chunk = mode == CALL || mode == USDT || mode == CHAIN ? 65536 : 1024;
		do {
			sum += loop(i, chunk);
			i += chunk;
		} while (now_ns() < end);
	} else {
		sum = loop(0, iterations);
		i = iterations;
	}
	t1 = now_ns();
	t->cpu_ns = thread_cpu_ns() - c0;
	t->events = mode == ALL ? 4 * i : i;
	t->ns = t1 - t0;
	t->sum = sum;
	return NULL;
}

/* fill_sizes makes the seed-like table: bursts of 1-64 frames of one size. */
static void fill_sizes(void)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	int burst = 0;
	uint64_t size = 0;
	for (int i = 0; i < TABLE; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		if (burst == 0) {
			burst = 1 + (int)(x % 64);
			int r = (int)((x >> 8) % 10);
			size = r < 6 ? 1514 : r < 8 ? 66 : r < 9 ? 9014 : 64 + (x >> 16) % 16384;
		}
		burst--;
		sizes[i] = (x >> 40) % 20 == 0 ? 64 + (x >> 24) % 1500 : size;
		hdrs[i].size = sizes[i];
		reqs[i].id = (uint64_t)i;
		reqs[i].hdr = &hdrs[i];
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: workload [-w] [-T THREADS] call|usdt|write|chain|all N|-t SECONDS\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int wait = 0, nthreads = 0, opt;
	while ((opt = getopt(argc, argv, "wT:t:")) != -1) {
		switch (opt) {
		case 'w':
			wait = 1;
			break;
		case 'T':
			nthreads = atoi(optarg);
			break;
		case 't':
			seconds = atof(optarg);
			break;
		default:
			usage();
		}
	}
	if (optind >= argc)
		usage();
	const char *m = argv[optind++];
	if (!strcmp(m, "call"))
		mode = CALL;
	else if (!strcmp(m, "usdt"))
		mode = USDT;
	else if (!strcmp(m, "write"))
		mode = WRITE;
	else if (!strcmp(m, "chain"))
		mode = CHAIN;
	else if (!strcmp(m, "all"))
		mode = ALL;
	else
		usage();
	if (seconds <= 0) {
		if (optind >= argc)
			usage();
		iterations = atol(argv[optind]);
	}
	fill_sizes();
	if ((devnull = open("/dev/null", O_WRONLY)) < 0)
		die("open /dev/null");

	cpu_set_t mask;
	if (sched_getaffinity(0, sizeof mask, &mask) != 0)
		die("sched_getaffinity");
	int cpus[CPU_SETSIZE], ncpu = 0;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &mask))
			cpus[ncpu++] = c;
	if (nthreads <= 0)
		nthreads = ncpu;
	struct thread *ts = calloc(nthreads, sizeof *ts);
	pthread_barrier_init(&start_barrier, NULL, nthreads + 1);
	for (int i = 0; i < nthreads; i++) {
		ts[i].index = i;
		ts[i].cpu = cpus[i % ncpu];
		if (pthread_create(&ts[i].th, NULL, run, &ts[i]) != 0)
			die("pthread_create");
	}
	if (wait) {
		printf("waiting pid %d\n", (int)getpid());
		fflush(stdout);
		char c;
		ssize_t n;
		while ((n = read(0, &c, 1)) < 0 && errno == EINTR)
			;
		if (n != 1) {
			fprintf(stderr, "workload: stdin closed before the start byte\n");
			exit(1);
		}
	}
	int64_t t0 = now_ns();
	pthread_barrier_wait(&start_barrier);
	long events = 0;
	uint64_t sum = 0;
	for (int i = 0; i < nthreads; i++) {
		pthread_join(ts[i].th, NULL);
		events += ts[i].events;
		sum += ts[i].sum;
	}
	int64_t wall = now_ns() - t0;
	char *out = NULL;
	size_t outlen = 0;
	FILE *f = open_memstream(&out, &outlen);
	if (!f)
		die("open_memstream");
	for (int i = 0; i < nthreads; i++)
		fprintf(f, "thread %d cpu %d events %ld ns %lld cpu_ns %lld\n", i, ts[i].cpu, ts[i].events, (long long)ts[i].ns,
		        (long long)ts[i].cpu_ns);
	fprintf(f, "total threads %d events %ld wall_ns %lld sum %llu\n", nthreads, events, (long long)wall,
	        (unsigned long long)sum);
	if (fclose(f) != 0)
		die("open_memstream");
	report(out, outlen);
	return 0;
}
