/*
 * Dynamic workload of `make vmtest`'s USDT-in-a-library check:
 *
 *   gcc -O2 -o usdtlib usdtlib.c -L. -lvmusdt -Wl,-rpath,/lib/vmtest
 *
 *   usdtlib N   calls lib_fire(i) for i = 0..N-1; prints "lib N SEEN",
 *               SEEN counting the calls that saw the semaphore set
 */
#include <stdio.h>
#include <stdlib.h>

int lib_fire(long i);

int main(int argc, char **argv)
{
	long n, seen = 0;

	if (argc != 2)
		return 1;
	n = atol(argv[1]);
	for (long i = 0; i < n; i++)
		seen += lib_fire(i);
	printf("lib %ld %ld\n", n, seen);
	return 0;
}
