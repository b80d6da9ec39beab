/*
 * Guest workload for `make vmtest` (scripts/vmtest), built static:
 *
 *   gcc -O2 -static -fno-omit-frame-pointer -fcf-protection=none -pthread \
 *       -o vmwork vmwork.c
 *
 * Every mode prints its ground truth on stdout, one fact per line.
 *
 *   vmwork open N PATH   openat(PATH) N times; prints "open N PATH"
 *   vmwork read N PATH   read(2) PATH N times, the i-th read asking for
 *                        i % 4096 + 1 bytes; prints "read N BYTES NS" (the
 *                        bytes read in all, and the loop's CLOCK_MONOTONIC
 *                        nanoseconds, for the probes' overhead)
 *   vmwork hold N PATH   read's loop between two bytes read from stdin: it
 *                        starts on the first, prints read's line, and exits
 *                        on the second, so that a tracer can attach before
 *                        the loop and read its BPF statistics after it,
 *                        with the process still there (make vmbench)
 *   vmwork tcp N         a loopback TCP connection (127.0.0.1, lo must be
 *                        up) over which it sends N messages, the i-th of
 *                        i % 1000 + 1 bytes, with send(2), and reads them
 *                        back; prints "tcp N BYTES"
 *   vmwork comm K EXE    fires mark(1) K times under its own comm, renames
 *                        itself "vmt-prctl" with prctl(PR_SET_NAME) and fires
 *                        mark(2) K times, then execs EXE (a link to this
 *                        binary under another name) as "vmwork comm-after K",
 *                        which fires mark(3) K times; prints "comm V NAME K"
 *                        per phase, NAME being the comm prctl(PR_GET_NAME)
 *                        read back
 *   vmwork comm-after K  the third phase of comm
 *   vmwork rt R K        two threads, each R rounds: rename itself
 *                        "rtT-R" and fire mark(T*10000+R) K times; prints
 *                        "rt V NAME K" per round (V: mark's argument)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

__attribute__((noipa, used)) long mark(long v)
{
	volatile long frame_ = v;
	return frame_ + 1;
}

static void fire(long v, long k, const char *what)
{
	char name[17] = {0};

	prctl(PR_GET_NAME, name);
	for (long i = 0; i < k; i++)
		mark(v);
	printf("%s %ld %s %ld\n", what, v, name, k);
}

static long rounds, per;

static void *rt_thread(void *arg)
{
	long t = (long)arg;

	for (long r = 0; r < rounds; r++) {
		char name[16];

		snprintf(name, sizeof(name), "rt%ld-%ld", t, r);
		prctl(PR_SET_NAME, name);
		fire(t * 10000 + r, per, "rt");
	}
	return NULL;
}

/* read(2) PATH n times, the i-th read asking for i % 4096 + 1 bytes; prints "read N BYTES NS". */
static int read_loop(long n, const char *path)
{
	static char buf[4096];
	long total = 0;
	int fd = open(path, O_RDONLY);
	struct timespec t0, t1;

	if (fd < 0)
		return 3;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++) {
		ssize_t got = read(fd, buf, i % 4096 + 1);

		if (got < 0)
			return 4;
		total += got;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	close(fd);
	printf("read %ld %ld %lld\n", n, total,
	       (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && !strcmp(argv[1], "open")) {
		long n = atol(argv[2]);

		for (long i = 0; i < n; i++) {
			int fd = open(argv[3], O_RDONLY | O_CREAT, 0600);

			if (fd < 0)
				return 3;
			close(fd);
		}
		printf("open %ld %s\n", n, argv[3]);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "hold")) {
		char c;
		int st;

		if (read(0, &c, 1) != 1)
			return 5;
		st = read_loop(atol(argv[2]), argv[3]);
		if (read(0, &c, 1) != 1)
			return 5;
		return st;
	}
	if (argc == 4 && !strcmp(argv[1], "read"))
		return read_loop(atol(argv[2]), argv[3]);
	if (argc == 3 && !strcmp(argv[1], "tcp")) {
		static char buf[1000];
		long n = atol(argv[2]), total = 0;
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		socklen_t alen = sizeof(a);
		int l = socket(AF_INET, SOCK_STREAM, 0), c, s;

		if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
		    getsockname(l, (struct sockaddr *)&a, &alen))
			return 6;
		c = socket(AF_INET, SOCK_STREAM, 0);
		if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)))
			return 7;
		s = accept(l, NULL, NULL);
		if (s < 0)
			return 8;
		for (long i = 0; i < n; i++) {
			long want = i % 1000 + 1, got = 0;

			if (send(c, buf, want, 0) != want)
				return 9;
			while (got < want) {
				ssize_t r = recv(s, buf, want - got, 0);

				if (r <= 0)
					return 10;
				got += r;
			}
			total += want;
		}
		close(c);
		close(s);
		close(l);
		printf("tcp %ld %ld\n", n, total);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "comm")) {
		long k = atol(argv[2]);

		fire(1, k, "comm");
		prctl(PR_SET_NAME, "vmt-prctl");
		fire(2, k, "comm");
		fflush(stdout);
		execl(argv[3], argv[3], "comm-after", argv[2], (char *)NULL);
		return 4;
	}
	if (argc == 3 && !strcmp(argv[1], "comm-after")) {
		fire(3, atol(argv[2]), "comm");
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "rt")) {
		pthread_t th[2];

		rounds = atol(argv[2]);
		per = atol(argv[3]);
		for (long t = 0; t < 2; t++)
			if (pthread_create(&th[t], NULL, rt_thread, (void *)t))
				return 5;
		for (long t = 0; t < 2; t++)
			pthread_join(th[t], NULL);
		return 0;
	}
	fprintf(stderr, "usage: vmwork open N PATH | read N PATH | tcp N | comm K EXE | rt ROUNDS K\n");
	return 1;
}
