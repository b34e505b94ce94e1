/*
 * bsplib/spawn.h -- run P processes of this program on this machine when it was
 * started without a launcher (./prog), with the calling process as pid 0 and
 * the others fork()s of it, made here (as MulticoreBSP's threads start at
 * bsp_begin: what the program did before runs once; what it read, its
 * globals, its heap are theirs as they were).
 *
 * bsplib_spawn_self(P) flushes this process's stdio output (nothing buffered
 * is copied; from now on stdout is line-buffered in every process, so that
 * lines of different processes do not mix on a pipe or in a file), then forks
 * a helper, which forks pids 1..P-1 from itself and executes bspkrun in adopt
 * mode:
 *
 *     bspkrun --adopt <pid 0's os pid> --adopt-fd 3 -n P
 *             --adopt-children <os pid 1>,...,<os pid P-1> --children-fd 4
 *
 * so that bspkrun is the parent of pids 1..P-1 (it reaps them and knows how
 * each ended) and this process's child. bspkrun starts no program. It writes
 * the job's variables as NAME=VALUE lines (BSPK_BOOT_SOCKET, BSPK_JOBID,
 * BSPK_RANK=0, BSPK_NPROCS, BSPK_STATUS_FILE, ...) and a line "ready" on
 * fd 3, a pipe to this process, and the same (less BSPK_RANK) as one record
 * per fork on fd 4, a SOCK_SEQPACKET socket whose other end the forks share;
 * a line "exec-error E" or "fork-error E" on fd 3 comes from the helper
 * instead. bsplib_spawn_self sets them in the environment (each fork adds
 * BSPK_RANK=k), so that the next bspk_init() joins that job.
 *
 * Returns this process's pid in the job: 0 here, k (1..P-1) in fork k, which
 * returns from this call with a copy of this process's memory. A fork's stdin
 * is /dev/null, and nothing pid 0 had read ahead into stdin's buffer is left
 * in its own; stdout and stderr are pid 0's (the same terminal, pipe or file:
 * a fork writes there itself). Signal handlers and mask are pid 0's. Files
 * pid 0 had open are shared with the forks (and so is their file position):
 * read a file before the spawn, or in one process only. Call it while this
 * process has one thread (as for any fork: only the calling thread is
 * copied), once, before bspk_init.
 *
 * Failures end the job as under bspkrun: if a process fails (a signal, a
 * non-zero exit, bspk_abort, an exit before bspk_finalize), bspkrun says
 * which pid, how and in which superstep, and ends the others (SIGTERM, then
 * SIGKILL 2 s later; each process by itself, never the process group, which
 * is the shell's); if this one dies, bspkrun ends the others within a second
 * and says that pid 0 died. A fork dies with bspkrun (PR_SET_PDEATHSIG).
 *
 * At exit (an atexit handler; a fork skips it) this process tells bspkrun
 * that it is leaving (by closing its end of the pipe: an exit before
 * bspk_finalize ends the job with a message) and waits until bspkrun has
 * reaped the others and exited, so that their output is complete and no
 * process is left. A non-zero exit status stays its own; an exit with 0 while
 * bspkrun ended the job as failed (this process left before bspk_finalize --
 * a BSPlib SPMD function that returned without bsp_end --, or another one
 * failed) becomes bspkrun's status (1), as under bsprun (glibc's on_exit
 * tells the handler the status; elsewhere it stays the process's own).
 *
 * Where bspkrun is: $BSPK_BSPKRUN if set (a path, or a name searched in PATH);
 * else ../bin/bspkrun next to the library or program that holds this code
 * (<prefix>/lib/../bin/bspkrun when installed); else bspkrun in the build tree.
 *
 * Returns -1 with a message in error (truncated to error_size bytes,
 * NUL-terminated; error may be NULL) if the job cannot start; then no other
 * process is left running and the environment is unchanged (it calls setenv:
 * no other thread may use the environment meanwhile).
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

/* C++: the same, with the message in a std::string (set on failure only). */
inline int bsplib_spawn_self(int nprocs, std::string *error) {
  char buf[1024];
  buf[0] = '\0';
  int rc = bsplib_spawn_self(nprocs, buf, sizeof buf);
  if (rc < 0 && error) *error = buf;
  return rc;
}
#endif

#endif /* BSPK_BSPLIB_SPAWN_H */
