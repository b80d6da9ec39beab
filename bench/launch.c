/*
 * launch: runs a tool for the bench driver and reports its resource usage.
 *
 *   launch CMD ARGS...
 *
 * The Go driver starts processes with vfork (CLONE_VM): the child's
 * ru_maxrss then starts at the driver's own peak RSS, since exec folds the
 * old (shared) address space's high-water mark into it. launch is exec'd
 * that way but then fork()s for real, so CMD's ru_maxrss is its own (plus
 * at most launch's few hundred KiB).
 *
 * On fd 3 it writes "pid PID\n" once CMD is forked and, when CMD is done,
 * "rusage MAXRSS_KB UTIME_US STIME_US STATUS\n" (STATUS as wait4 gives it).
 * SIGINT and SIGTERM are passed on to CMD; CMD gets SIGTERM if launch dies.
 * Exit status: CMD's (128+N if signal N ended it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile pid_t child;

static void forward(int sig)
{
	if (child > 0)
		kill(child, sig);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: launch CMD ARGS...\n");
		return 2;
	}
	FILE *report = fdopen(3, "w");
	if (!report) {
		perror("launch: fd 3");
		return 2;
	}
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = forward;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	pid_t pid = fork();
	if (pid < 0) {
		perror("launch: fork");
		return 2;
	}
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		fclose(report);
		execvp(argv[1], argv + 1);
		fprintf(stderr, "launch: exec %s: %s\n", argv[1], strerror(errno));
		_exit(127);
	}
	child = pid;
	fprintf(report, "pid %d\n", pid);
	fflush(report);

	int status;
	struct rusage ru;
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			perror("launch: wait4");
			return 2;
		}
	}
	fprintf(report, "rusage %ld %ld %ld %d\n", ru.ru_maxrss,
		(long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec,
		(long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec, status);
	fclose(report);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}
