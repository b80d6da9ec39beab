/*
 * virtnet: a stand-in for QEMU's virtio-net data path, shaped like the
 * functions and USDT probes of the BCC virtio-net article, so that bpftape
 * can record it the way that article traced QEMU, and its tests can compare
 * what was recorded with what happened.
 *
 * Build (sys/sdt.h comes with Debian's systemtap-sdt-dev):
 *
 *   gcc -O2 -fno-omit-frame-pointer -fcf-protection=none -o virtnet virtnet.c
 *
 * Usage: virtnet [-w] [-s SEED] ITERATIONS
 *
 *   -w       wait for a line on stdin before starting, so that a recorder
 *            can attach to the running process (bpftape record -p PID)
 *   -s SEED  seed of the pseudo-random sizes (default 1); the same seed and
 *            ITERATIONS always give the same calls and the same output
 *
 * Each iteration receives one buffer chain, virtio_net_receive_rcu(nc, buf,
 * size), and flushes one TX queue, virtio_net_flush_tx(q), which sends its
 * 1-7 queued packets with qemu_sendv_packet_async() one by one. Sizes follow
 * the article's histograms: RX sizes mostly 1-16 KiB (70% 8-16 KiB), one TX
 * packet per flush 86% of the time and 2-3 most of the rest, TX packets
 * mostly 64-255 bytes. At the end it runs the article's usdt_example
 * (usdt1 every 100000 of a count to 1000000, then usdt2 x "Hello!" 5).
 *
 * Probe sites, recorded by bpftape (bpftrace's argument numbering):
 *
 *   uprobe    virtio_net_receive_rcu   arg2 = size
 *   uretprobe virtio_net_receive_rcu   retval = size (ssize_t)
 *   uretprobe virtio_net_flush_tx      retval = packets sent (int32_t)
 *   uprobe    qemu_sendv_packet_async  arg1 = iov, arg2 = iovcnt
 *   uretprobe qemu_sendv_packet_async  retval = bytes sent (ssize_t)
 *   usdt qemu:virtio-net-rx-end        arg0 = buffers used i, arg1 = size (size_t)
 *   usdt qemu:virtio-net-tx-get-len    arg0 = ret (ssize_t), once per packet
 *   usdt usdt-examples:usdt1           arg0 = x (int)
 *   usdt usdt-examples:usdt2           arg0 = x (int), arg1 = "Hello!", arg2 = 5
 *
 * The probed functions are noipa and, built as above, start with push %rbp,
 * which uprobes emulate; the USDT sites are nops.
 *
 * Ground truth, on stdout once the work is done, one fact per line:
 *
 *   iterations N / seed S
 *   count NAME N        calls or probe firings
 *   sum NAME S          sum of a value over all of them
 *   hist NAME LOW N     N values v with LOW <= v < 2*LOW (LOW a power of
 *                       two; LOW 0 counts zeros); only non-empty buckets
 *
 * for NAME in rx_size (per receive), rx_bufs (i of virtio-net-rx-end),
 * tx_packets (per flush), tx_len (per packet) and tx_total (bytes per flush),
 * and count usdt1, usdt2.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define PROBED __attribute__((noipa, used))

/*
 * GCC sets up no frame in a leaf that needs no stack, even with
 * -fno-omit-frame-pointer; a volatile local gives each probed function a
 * stack frame, hence a push %rbp prologue.
 */
#define FRAME volatile long frame_ = 0; (void)frame_

#define RX_BUF_SIZE 6144 /* bytes per RX descriptor buffer */
#define MAX_TX 8	 /* packets a TX queue holds */

typedef struct NetClientState {
	uint64_t rx_bytes;
	uint32_t csum;
} NetClientState;

typedef struct VirtIONetQueue {
	NetClientState *nc;
	int queued;		/* packets waiting */
	uint16_t len[MAX_TX];	/* their lengths */
	uint64_t tx_bytes;
} VirtIONetQueue;

static uint8_t rx_data[32768];
static uint8_t tx_data[1024];

/* xorshift64*: deterministic and the same everywhere. */
static uint64_t rng_state;

static uint32_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545F4914F6CDD1DULL) >> 32);
}

static uint32_t between(uint32_t lo, uint32_t hi) /* [lo, hi) */
{
	return lo + rnd() % (hi - lo);
}

/* Ground truth. */
enum { RX_SIZE, RX_BUFS, TX_PACKETS, TX_LEN, TX_TOTAL, NHIST };
static const char *hist_names[NHIST] = {"rx_size", "rx_bufs", "tx_packets", "tx_len", "tx_total"};
static uint64_t hist[NHIST][65], counts[NHIST], sums[NHIST];
static uint64_t usdt1_count, usdt2_count;

static void account(int h, uint64_t v)
{
	int b = v ? 64 - __builtin_clzll(v) : 0; /* bucket b holds [2^(b-1), 2^b) */

	hist[h][b]++;
	counts[h]++;
	sums[h] += v;
}

static uint32_t consume(const uint8_t *p, size_t n)
{
	uint32_t c = 0;

	for (size_t k = 0; k < n; k += 64)
		c += p[k];
	return c;
}

/* Receive one buffer chain of size bytes into RX_BUF_SIZE buffers. */
PROBED ssize_t virtio_net_receive_rcu(NetClientState *nc, const uint8_t *buf, size_t size)
{
	FRAME;
	size_t offset = 0, i = 0;

	while (offset < size) {
		size_t n = size - offset < RX_BUF_SIZE ? size - offset : RX_BUF_SIZE;

		nc->csum += consume(buf + offset, n);
		offset += n;
		i++;
	}
	nc->rx_bytes += size;
	account(RX_BUFS, i);
	DTRACE_PROBE2(qemu, virtio-net-rx-end, i, size);
	return size;
}

/* Send one packet; returns the bytes sent. */
PROBED ssize_t qemu_sendv_packet_async(NetClientState *sender, const struct iovec *iov, int iovcnt,
				       void (*sent_cb)(NetClientState *, ssize_t))
{
	FRAME;
	ssize_t len = 0;

	for (int k = 0; k < iovcnt; k++) {
		sender->csum += consume(iov[k].iov_base, iov[k].iov_len);
		len += iov[k].iov_len;
	}
	if (sent_cb)
		sent_cb(sender, len);
	return len;
}

/* Flush the TX queue; returns the number of packets sent. */
PROBED int32_t virtio_net_flush_tx(VirtIONetQueue *q)
{
	FRAME;
	int32_t num_packets = 0;
	uint64_t total = 0;

	for (;;) {
		struct iovec iov[2];
		ssize_t ret;
		size_t len;

		if (num_packets >= q->queued)
			break;
		len = q->len[num_packets];
		/* A virtio-net header and the frame, as QEMU sends them. */
		iov[0].iov_base = tx_data;
		iov[0].iov_len = 12;
		iov[1].iov_base = tx_data + 12;
		iov[1].iov_len = len - 12;
		ret = qemu_sendv_packet_async(q->nc, iov, 2, NULL);
		account(TX_LEN, ret);
		total += ret;
		DTRACE_PROBE1(qemu, virtio-net-tx-get-len, ret);
		num_packets++;
	}
	q->queued = 0;
	q->tx_bytes += total;
	account(TX_PACKETS, num_packets);
	account(TX_TOTAL, total);
	return num_packets;
}

/* The article's USDT example, as a function. */
static void usdt_example(void)
{
	int x = 0;

	while (x < 1000000) {
		x++;
		if (x % 100000 == 0) {
			DTRACE_PROBE1(usdt-examples, usdt1, x);
			usdt1_count++;
		}
	}
	DTRACE_PROBE3(usdt-examples, usdt2, x, "Hello!", 5);
	usdt2_count++;
}

static size_t rx_size(void)
{
	uint32_t r = rnd() % 10000;

	if (r < 2)
		return between(32, 1024);
	if (r < 812)
		return between(1024, 2048);
	if (r < 1335)
		return between(2048, 4096);
	if (r < 3030)
		return between(4096, 8192);
	if (r < 9995)
		return between(8192, 16384);
	return between(16384, 32768);
}

static int tx_packets(void)
{
	uint32_t r = rnd() % 10000;

	if (r < 8650)
		return 1;
	if (r < 9990)
		return between(2, 4);
	return between(4, 8);
}

static uint16_t tx_len(void)
{
	uint32_t r = rnd() % 10000;

	if (r < 8650)
		return between(64, 128);
	if (r < 9985)
		return between(128, 256);
	if (r < 9999)
		return between(256, 512);
	return between(512, 1024);
}

static void usage(void)
{
	fprintf(stderr, "usage: virtnet [-w] [-s SEED] ITERATIONS\n");
	exit(2);
}

int main(int argc, char **argv)
{
	NetClientState nc = {0};
	VirtIONetQueue q = {.nc = &nc};
	uint64_t seed = 1;
	long iterations;
	int wait = 0, opt;
	char *end;

	while ((opt = getopt(argc, argv, "ws:")) != -1) {
		switch (opt) {
		case 'w':
			wait = 1;
			break;
		case 's':
			seed = strtoull(optarg, &end, 0);
			if (*end || seed == 0)
				usage();
			break;
		default:
			usage();
		}
	}
	if (optind != argc - 1)
		usage();
	iterations = strtol(argv[optind], &end, 10);
	if (*end || iterations < 0)
		usage();
	if (wait) {
		char line[16];

		if (!fgets(line, sizeof(line), stdin))
			return 2;
	}
	rng_state = seed;
	for (size_t k = 0; k < sizeof(rx_data); k++)
		rx_data[k] = (uint8_t)k;

	for (long it = 0; it < iterations; it++) {
		size_t size = rx_size();

		account(RX_SIZE, virtio_net_receive_rcu(&nc, rx_data, size));
		q.queued = tx_packets();
		for (int k = 0; k < q.queued; k++)
			q.len[k] = tx_len();
		virtio_net_flush_tx(&q);
	}
	usdt_example();

	printf("iterations %ld\nseed %llu\n", iterations, (unsigned long long)seed);
	for (int h = 0; h < NHIST; h++) {
		printf("count %s %llu\n", hist_names[h], (unsigned long long)counts[h]);
		printf("sum %s %llu\n", hist_names[h], (unsigned long long)sums[h]);
	}
	printf("count usdt1 %llu\ncount usdt2 %llu\n", (unsigned long long)usdt1_count,
	       (unsigned long long)usdt2_count);
	for (int h = 0; h < NHIST; h++)
		for (int b = 0; b < 65; b++)
			if (hist[h][b])
				printf("hist %s %llu %llu\n", hist_names[h], b ? 1ULL << (b - 1) : 0ULL,
				       (unsigned long long)hist[h][b]);
	return nc.rx_bytes == sums[RX_SIZE] && q.tx_bytes == sums[TX_TOTAL] ? 0 : 1;
}
