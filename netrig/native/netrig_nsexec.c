// netrig-nsexec: run a program inside a lab node, as `ip netns exec` does.
//
//   netrig-nsexec NSPATH RUNDIR|- PROGRAM [ARG...]
//
// Enters the network namespace mounted at NSPATH, unshares a mount namespace that does not
// propagate back to the host, mounts a sysfs that shows the node's devices, bind-mounts
// RUNDIR over /run and RUNDIR/../var-tmp (if there) over /var/tmp (unless "-"), keeping
// RUNDIR/.. at its path if it lies under /run (see below), then execs
// PROGRAM (an absolute path: the caller resolves
// it, so "command not found" is reported in the caller, as subprocess does).
//
// netrig starts it with a plain subprocess (posix_spawn/vfork, no Python code between fork
// and exec): Python documents preexec_fn as unsafe when threads run, and netrig's runner
// starts processes from several threads at once. Exit 125 (with a message) when the node
// cannot be entered, 126/127 when PROGRAM cannot be run, as env(1) and nsenter(1) do.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(const char *what, const char *arg)
{
	fprintf(stderr, "netrig-nsexec: %s %s: %s\n", what, arg, strerror(errno));
	return 125;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: netrig-nsexec NSPATH RUNDIR|- PROGRAM [ARG...]\n");
		return 125;
	}
	const char *ns_path = argv[1], *run_dir = argv[2];
	int fd = open(ns_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail("open", ns_path);
	if (setns(fd, CLONE_NEWNET) != 0)
		return fail("setns", ns_path);
	close(fd);
	if (unshare(CLONE_NEWNS) != 0)
		return fail("unshare", "mount namespace");
	if (mount("", "/", NULL, MS_SLAVE | MS_REC, NULL) != 0)
		return fail("mount", "/ (slave)");
	// a sysfs that shows the host's devices is a nuisance, not an error
	char name[4096];
	snprintf(name, sizeof name, "%s", ns_path);
	if (umount2("/sys", MNT_DETACH) == 0)
		(void)mount(basename(name), "/sys", "sysfs", 0, NULL);
	if (strcmp(run_dir, "-") != 0) {
		// RUNDIR/../var-tmp over /var/tmp first (RUNDIR may lie under /run): what
		// programs leave there (FRR's /var/tmp/frr/watchfrr.PID) goes with the lab
		// (only over a real directory: a /var/tmp that links to /tmp would hide /tmp; and
		// like /sys, a nuisance if it fails, not an error)
		char var_tmp[4096];
		struct stat host;
		int n = snprintf(var_tmp, sizeof var_tmp, "%s/../var-tmp", run_dir);
		if (n > 0 && (size_t)n < sizeof var_tmp && access(var_tmp, F_OK) == 0 &&
		    lstat("/var/tmp", &host) == 0 && S_ISDIR(host.st_mode))
			(void)mount(var_tmp, "/var/tmp", NULL, MS_BIND, NULL);
		// the node's own directory (RUNDIR/..: its daemons' and services' config files)
		// stays at its path when that lies under /run, which RUNDIR now hides: bound on
		// the mount point the lab made for it inside RUNDIR, which comes along (MS_REC)
		// (nginx in an FRR-routed lab could not open its nginx.conf)
		char node_dir[4096], point[8192];
		n = snprintf(node_dir, sizeof node_dir, "%s", run_dir);
		char *slash = n > 0 && (size_t)n < sizeof node_dir ? strrchr(node_dir, '/') : NULL;
		if (slash != NULL) {
			*slash = '\0';
			n = snprintf(point, sizeof point, "%s/%s", run_dir, node_dir + 5);
			if (strncmp(node_dir, "/run/", 5) == 0 && n > 0 && (size_t)n < sizeof point &&
			    access(point, F_OK) == 0)
				(void)mount(node_dir, point, NULL, MS_BIND, NULL);
		}
		if (mount(run_dir, "/run", NULL, MS_BIND | MS_REC, NULL) != 0)
			return fail("bind-mount /run from", run_dir);
	}
	execv(argv[3], argv + 3);
	int code = errno == ENOENT ? 127 : 126;
	fprintf(stderr, "netrig-nsexec: %s: %s\n", argv[3], strerror(errno));
	return code;
}
