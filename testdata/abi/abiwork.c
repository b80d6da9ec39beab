/*
 * abiwork: functions whose parameters and return values a calling
 * convention places in every way a uprobe meets them: integer registers,
 * the stack, register pairs, structs by value and by reference, floats
 * and homogeneous float aggregates (which probes cannot read), variadic
 * arguments. main calls each once; each function prints what it received
 * as "CALL NAME VALUE...", and main prints what the return-value functions
 * returned as "RET NAME VALUE...", so a recording can be compared with the
 * program's own account of its arguments.
 *
 * Every value follows one scheme, which record/ctypes' tests rely on:
 * the j-th scalar (struct members and array elements in order, from 0) of
 * parameter i (from 0) is 10*(i+1)+j, plus 0.5 for a float, and both
 * halves of an __int128 hold it; a return value is numbered as parameter
 * 0. See testdata/abi/README.
 *
 * Built for arm64 with aarch64-linux-gnu-gcc (or gcc in an arm64 guest),
 * and for x86-64 with gcc; noipa keeps each function's calling
 * convention the ABI's (no clone, no interprocedural change).
 */
#include <complex.h>
#include <stdarg.h>
#include <stdio.h>

#define API __attribute__((noipa, used))

struct s12 { int a, b, c; };		/* 12 bytes: two registers */
struct s16 { long a, b; };		/* 16 bytes: two registers */
struct q16 { __int128 v; };		/* 16-byte aligned: an even register pair */
struct m16 { long a __attribute__((aligned(16))); long b; }; /* a 16-aligned member: even pair */
struct t16 { long a, b; } __attribute__((aligned(16))); /* the type's alignment: AAPCS64 ignores it */
struct big { long a, b, c; };		/* 24 bytes: by reference on arm64, on the stack on x86-64 */
struct hfa { float a, b, c, d; };	/* a homogeneous float aggregate: v0..v3 */
struct hd4 { double a, b, c, d; };	/* 32 bytes, homogeneous: v0..v3, not by reference */
struct fi { float f; int i; };		/* not homogeneous: an integer register */
struct s9 { char c[9]; };		/* 9 bytes: two registers */
struct __attribute__((packed)) pk { char c; long l; }; /* 9 bytes, alignment 1 */

static void p128(__int128 v)
{
	printf(" %ld:%ld", (long)(v >> 64), (long)v);
}

API long f8(long a, long b, long c, long d, long e, long f, long g, long h)
{
	printf("CALL f8 %ld %ld %ld %ld %ld %ld %ld %ld\n", a, b, c, d, e, f, g, h);
	return a + h;
}

API long f10(long a, long b, long c, long d, long e, long f, long g, long h, long i, long j)
{
	printf("CALL f10 %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld\n", a, b, c, d, e, f, g, h, i, j);
	return a + j;
}

API long mix(char a, short b, int c, long d, unsigned char e, signed char f, unsigned short g,
	     long long h, char i, short j, int k)
{
	printf("CALL mix %d %d %d %ld %u %d %u %lld %d %d %d\n", a, b, c, d, e, f, g, h, i, j, k);
	return a + k;
}

API long pass12(int a, struct s12 s, int b)
{
	printf("CALL pass12 %d %d %d %d %d\n", a, s.a, s.b, s.c, b);
	return a + s.c + b;
}

API long pass16(struct s16 s, long b)
{
	printf("CALL pass16 %ld %ld %ld\n", s.a, s.b, b);
	return s.a + b;
}

API long pass_q16(int a, struct q16 q, int b)
{
	printf("CALL pass_q16 %d", a);
	p128(q.v);
	printf(" %d\n", b);
	return a + b;
}

API long pass_i128(int a, __int128 v, int b)
{
	printf("CALL pass_i128 %d", a);
	p128(v);
	printf(" %d\n", b);
	return a + b;
}

API long pass_m16(int a, struct m16 m, int b)
{
	printf("CALL pass_m16 %d %ld %ld %d\n", a, m.a, m.b, b);
	return a + b;
}

API long pass_t16(int a, struct t16 t, int b)
{
	printf("CALL pass_t16 %d %ld %ld %d\n", a, t.a, t.b, b);
	return a + b;
}

API long after7(int a, int b, int c, int d, int e, int f, int g, struct s16 s, int h)
{
	printf("CALL after7 %d %d %d %d %d %d %d %ld %ld %d\n", a, b, c, d, e, f, g, s.a, s.b, h);
	return a + h;
}

API long pass_big(int a, struct big s, int b)
{
	printf("CALL pass_big %d %ld %ld %ld %d\n", a, s.a, s.b, s.c, b);
	return a + s.c + b;
}

API long big_stack(long a, long b, long c, long d, long e, long f, long g, long h, struct big s, char i)
{
	printf("CALL big_stack %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %d\n", a, b, c, d, e, f, g, h, s.a, s.b, s.c, i);
	return a + i;
}

API long floats(int a, double b, int c, float d, long e)
{
	printf("CALL floats %d %g %d %g %ld\n", a, b, c, d, e);
	return a + c + e;
}

API long pass_hfa(int a, struct hfa h, int b)
{
	printf("CALL pass_hfa %d %g %g %g %g %d\n", a, h.a, h.b, h.c, h.d, b);
	return a + b;
}

API long pass_hd4(int a, struct hd4 h, int b)
{
	printf("CALL pass_hd4 %d %g %g %g %g %d\n", a, h.a, h.b, h.c, h.d, b);
	return a + b;
}

API long pass_cplx(int a, _Complex double z, int b)
{
	printf("CALL pass_cplx %d %g %g %d\n", a, creal(z), cimag(z), b);
	return a + b;
}

API long pass_fi(int a, struct fi s, int b)
{
	printf("CALL pass_fi %d %g %d %d\n", a, s.f, s.i, b);
	return a + s.i + b;
}

API long doubles9(double d0, double d1, double d2, double d3, double d4, double d5, double d6, double d7, double d8,
		  long a, long b, long c, long d, long e, long f, long g, long h, long i)
{
	printf("CALL doubles9 %g %g %g %g %g %g %g %g %g %ld %ld %ld %ld %ld %ld %ld %ld %ld\n",
	       d0, d1, d2, d3, d4, d5, d6, d7, d8, a, b, c, d, e, f, g, h, i);
	return a + i;
}

API long floats9(float f0, float f1, float f2, float f3, float f4, float f5, float f6, float f7, float f8,
		 long a, long b, long c, long d, long e, long f, long g, long h, long i)
{
	printf("CALL floats9 %g %g %g %g %g %g %g %g %g %ld %ld %ld %ld %ld %ld %ld %ld %ld\n",
	       f0, f1, f2, f3, f4, f5, f6, f7, f8, a, b, c, d, e, f, g, h, i);
	return a + i;
}

API long pass_s9(long a, long b, long c, long d, long e, long f, long g, struct s9 s, long h)
{
	printf("CALL pass_s9 %ld %ld %ld %ld %ld %ld %ld", a, b, c, d, e, f, g);
	for (int n = 0; n < 9; n++)
		printf(" %d", s.c[n]);
	printf(" %ld\n", h);
	return a + h;
}

API long pass_pk(int a, struct pk p, int b)
{
	printf("CALL pass_pk %d %d %ld %d\n", a, p.c, p.l, b);
	return a + p.l + b;
}

API long stack_i128(long a, long b, long c, long d, long e, long f, long g, __int128 v, long h)
{
	printf("CALL stack_i128 %ld %ld %ld %ld %ld %ld %ld", a, b, c, d, e, f, g);
	p128(v);
	printf(" %ld\n", h);
	return a + h;
}

API long stack_q16(long a, long b, long c, long d, long e, long f, long g, long h, char i, struct q16 q, long j)
{
	printf("CALL stack_q16 %ld %ld %ld %ld %ld %ld %ld %ld %d", a, b, c, d, e, f, g, h, i);
	p128(q.v);
	printf(" %ld\n", j);
	return a + j;
}

API long hfa_stack(double d0, double d1, double d2, double d3, double d4, double d5, double d6, struct hfa h, long a)
{
	printf("CALL hfa_stack %g %g %g %g %g %g %g %g %g %g %g %ld\n", d0, d1, d2, d3, d4, d5, d6, h.a, h.b, h.c, h.d, a);
	return a;
}

/* vararg(n, long, double, long): the unnamed arguments are passed as named
 * ones would be (Linux; Apple's arm64 ABI puts them on the stack). */
API long vararg(int n, ...)
{
	va_list ap;
	va_start(ap, n);
	long x = va_arg(ap, long);
	double y = va_arg(ap, double);
	long z = va_arg(ap, long);
	va_end(ap);
	printf("CALL vararg %d %ld %g %ld\n", n, x, y, z);
	return n + x + z;
}

API int ret_int(void) { return 10; }
API struct s12 ret12(void) { return (struct s12){10, 11, 12}; }
API struct s16 ret16(void) { return (struct s16){10, 11}; }
API struct big ret24(void) { return (struct big){10, 11, 12}; }
API double ret_double(void) { return 10.5; }
API struct hfa ret_hfa(void) { return (struct hfa){10.5, 11.5, 12.5, 13.5}; }
API __int128 ret_i128(void) { return ((__int128)10 << 64) | 10; }
API struct fi ret_fi(void) { return (struct fi){10.5, 11}; }

int main(void)
{
	f8(10, 20, 30, 40, 50, 60, 70, 80);
	f10(10, 20, 30, 40, 50, 60, 70, 80, 90, 100);
	mix(10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110);
	pass12(10, (struct s12){20, 21, 22}, 30);
	pass16((struct s16){10, 11}, 20);
	pass_q16(10, (struct q16){((__int128)20 << 64) | 20}, 30);
	pass_i128(10, ((__int128)20 << 64) | 20, 30);
	pass_m16(10, (struct m16){20, 21}, 30);
	pass_t16(10, (struct t16){20, 21}, 30);
	after7(10, 20, 30, 40, 50, 60, 70, (struct s16){80, 81}, 90);
	pass_big(10, (struct big){20, 21, 22}, 30);
	big_stack(10, 20, 30, 40, 50, 60, 70, 80, (struct big){90, 91, 92}, 100);
	floats(10, 20.5, 30, 40.5f, 50);
	pass_hfa(10, (struct hfa){20.5f, 21.5f, 22.5f, 23.5f}, 30);
	pass_hd4(10, (struct hd4){20.5, 21.5, 22.5, 23.5}, 30);
	pass_cplx(10, CMPLX(20.5, 21.5), 30);
	pass_fi(10, (struct fi){20.5f, 21}, 30);
	doubles9(10.5, 20.5, 30.5, 40.5, 50.5, 60.5, 70.5, 80.5, 90.5,
		 100, 110, 120, 130, 140, 150, 160, 170, 180);
	floats9(10.5f, 20.5f, 30.5f, 40.5f, 50.5f, 60.5f, 70.5f, 80.5f, 90.5f,
		100, 110, 120, 130, 140, 150, 160, 170, 180);
	pass_s9(10, 20, 30, 40, 50, 60, 70, (struct s9){{80, 81, 82, 83, 84, 85, 86, 87, 88}}, 90);
	pass_pk(10, (struct pk){20, 21}, 30);
	stack_i128(10, 20, 30, 40, 50, 60, 70, ((__int128)80 << 64) | 80, 90);
	stack_q16(10, 20, 30, 40, 50, 60, 70, 80, 90, (struct q16){((__int128)100 << 64) | 100}, 110);
	hfa_stack(10.5, 20.5, 30.5, 40.5, 50.5, 60.5, 70.5, (struct hfa){80.5f, 81.5f, 82.5f, 83.5f}, 90);
	vararg(10, 20L, 30.5, 40L);

	printf("RET ret_int %d\n", ret_int());
	struct s12 r12 = ret12();
	printf("RET ret12 %d %d %d\n", r12.a, r12.b, r12.c);
	struct s16 r16 = ret16();
	printf("RET ret16 %ld %ld\n", r16.a, r16.b);
	struct big r24 = ret24();
	printf("RET ret24 %ld %ld %ld\n", r24.a, r24.b, r24.c);
	printf("RET ret_double %g\n", ret_double());
	struct hfa rh = ret_hfa();
	printf("RET ret_hfa %g %g %g %g\n", rh.a, rh.b, rh.c, rh.d);
	printf("RET ret_i128");
	p128(ret_i128());
	printf("\n");
	struct fi rf = ret_fi();
	printf("RET ret_fi %g %d\n", rf.f, rf.i);
	return 0;
}
