/*
 * bsplib/spawn.h -- run P processes of this program on this machine when it was
 * started without a launcher (./prog), with the calling process as pid 0.
 *
 * bsplib_spawn_self(P) starts bspkrun in adopt mode for this process:
 *
 *     bspkrun --adopt <getpid()> --adopt-fd 3 -n P --exe <this executable>
 *             -- <argv[0]> <argv[1]> ...           (argv as in /proc/self/cmdline)
 *
 * bspkrun is a child of this process; it starts pids 1..P-1 as fresh runs of
 * the same executable with the same argv (they run main from the start, stdin
 * /dev/null, output forwarded line by line to this process's stdout/stderr),
 * then writes on fd 3 the variables bspkrun sets for its own processes, as
 * NAME=VALUE lines (BSPK_BOOT_SOCKET, BSPK_JOBID, BSPK_RANK=0, BSPK_NPROCS,
 * BSPK_STATUS_FILE, ...) and a line "ready". bsplib_spawn_self sets them in
 * this process's environment, so that the next bspk_init() joins that job as
 * pid 0. This process is not re-executed: what it read from stdin and its
 * globals are kept.
 *
 * Failures end the job as under bspkrun: if another process fails, this one is
 * ended too (SIGTERM, then SIGKILL 2 s later), after bspkrun's message on
 * stderr; if this one dies, bspkrun ends the others within a second and says
 * that pid 0 died.
 *
 * At exit (an atexit handler) this process tells bspkrun that it is leaving
 * (by closing its end of the pipe: an exit before bspk_finalize ends the job
 * with a message) and waits until the other processes have exited, so that
 * their output is complete and bspkrun is reaped. Its exit status stays its
 * own.
 *
 * Where bspkrun is: $BSPK_BSPKRUN if set (a path, or a name searched in PATH);
 * else ../bin/bspkrun next to the library or program that holds this code
 * (<prefix>/lib/../bin/bspkrun when installed); else bspkrun in the build tree.
 *
 * Call it once, before bspk_init, while no other thread uses the environment
 * (it calls setenv). Returns 0, or -1 with a message in error (truncated to
 * error_size bytes, NUL-terminated; error may be NULL); on failure nothing is
 * left running and the environment is unchanged.
 */
#ifndef BSPK_BSPLIB_SPAWN_H
#define BSPK_BSPLIB_SPAWN_H

#include <stddef.h>

#ifdef __cplusplus
#include <string>
extern "C" {
#endif

int bsplib_spawn_self(int nprocs, char *error, size_t error_size);

#ifdef __cplusplus
}

/* C++: the same, with the message in a std::string. */
inline int bsplib_spawn_self(int nprocs, std::string *error) {
  char buf[1024];
  buf[0] = '\0';
  int rc = bsplib_spawn_self(nprocs, buf, sizeof buf);
  if (rc != 0 && error) *error = buf;
  return rc;
}
#endif

#endif /* BSPK_BSPLIB_SPAWN_H */
