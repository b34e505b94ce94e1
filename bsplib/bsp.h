/*
 * bsp.h -- BSPlib on BSPk: the Oxford BSPlib standard (Hill et al., "BSPlib:
 * The BSP programming library", Parallel Computing 24(14), 1998), with the
 * type names of MulticoreBSP for C 2.0 / BSPonMPI 1.1 (bsp_pid_t, bsp_nprocs_t,
 * bsp_size_t: int, as BSPonMPI; MulticoreBSP's size_t and unsigned variables
 * are accepted where calls write through pointers, see "Integer arguments of
 * any width"), run by BSPk's engine (superstep-tagged messages over comem
 * frames, lazy barriers).
 *
 * Build and run an existing program unchanged:
 *     bspcc -O2 prog.c -o prog -lm        (bspcxx for C++; options pass through)
 *     bsprun -n 4 ./prog args             (or srun under Slurm, or ./prog alone)
 * or: cc $(pkg-config --cflags bspk-bsplib) prog.c $(pkg-config --libs bspk-bsplib)
 *     CMake: find_package(bspk) ... target_link_libraries(prog bspk::bsplib)
 *
 * Where the standard leaves a choice open, this layer behaves like BSPonMPI
 * 1.1; every such choice is marked [choice] below. Every error ends the job
 * like bsp_abort: a message naming the function, the process and the
 * superstep on stderr, every process gone, exit status non-zero.
 *
 * Lazy barriers (beyond the standard): bspk_expect(m) from <bspk.h> called
 * before bsp_sync declares that m OTHER processes send this process a
 * request batch in the superstep, and the sync then skips the count
 * exchange (a process that has its m batches moves on at once). A process
 * sends process t one batch per superstep when it issued at least one of
 * bsp_put / bsp_hpput / bsp_send / bsp_hpsend to t or bsp_get / bsp_hpget
 * from t (t the owner of the source); in a superstep with bsp_push_reg,
 * bsp_pop_reg or bsp_set_tagsize every process sends every other one a batch
 * (declare m = bsp_nprocs() - 1). Operations on the process itself never
 * count, nor do puts and gets of 0 bytes (they send nothing), while a 0-byte
 * bsp_send is a message like any other. A too small m is reported when the
 * first batch beyond m arrives: the process may have left bsp_sync by then,
 * with that superstep's data incomplete, and may have run on for a while
 * before the error ends the job (a wrong declaration is a program error,
 * not a result to use); a too large one waits (BSPlib programs have no
 * sync time-out unless BSPK_SYNC_TIMEOUT sets one: then it is reported
 * after that). Not available while
 * processes beyond bsp_begin's P are idle (they make every sync counted: a
 * declaration is then an error, which bsp_sync names). Without a declaration bsp_sync counts the
 * batches itself. With every process on one host the batches go through
 * shared memory in one barrier superstep instead (BSPK_BSPLIB_BOARD): there a
 * declaration is checked against the batches that came (a wrong m, too small
 * or too large, is reported at once) rather than used, and idle processes do
 * not prevent it. See README "BSPlib programs".
 */
#ifndef BSPK_BSP_H
#define BSPK_BSP_H

#include <stdarg.h>
#include <stddef.h>
/* As the Oxford BSPlib toolset's bsp.h: its example programs use printf and
 * strlen without including these themselves. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#define BSPK_BSP_API __attribute__((visibility("default")))
#define BSPK_BSP_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define BSPK_BSP_NORETURN __attribute__((noreturn))
#else
#define BSPK_BSP_API
#define BSPK_BSP_PRINTF(f, a)
#define BSPK_BSP_NORETURN
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Marks this header for programs that test for a BSPlib flavour. */
#define BSPK_BSPLIB 1
#define BSPLIB_VERSION 1998

/* Process ids, process counts and byte counts: signed int, as in BSPlib 1998
 * and BSPonMPI 1.1 (programs compare them with -1 and pass int *). */
typedef int bsp_pid_t;
typedef int bsp_nprocs_t;
typedef int bsp_size_t;
/* What bsp_hpmove returns on an empty queue (-1), by the name LPF's BSPlib
 * gives it (non-standard). */
static const bsp_size_t bsp_size_unavailable = -1;

/* ---- SPMD framework ----------------------------------------------------------
 * bsp_begin(maxprocs): start the SPMD section. maxprocs is taken from pid 0
 * only (the others may pass anything, e.g. 0, when only pid 0 read it); it
 * must be >= 1 there. With bsprun -n N (or srun) and maxprocs < N, processes
 * with pid >= maxprocs never return from bsp_begin: they wait there, idle,
 * until the others call bsp_end, then exit with status 0 (they take part in
 * every sync, which is therefore counted); maxprocs > N runs N. Started without a launcher (./prog), bsp_begin(P) starts P
 * processes on this machine, as MulticoreBSP starts P threads there: this one
 * is pid 0, the others are fork()s of it made in bsp_begin, which go on from
 * there with a copy of its memory (what main did and read before bsp_begin
 * is done once; stdin is empty for them; stdout is line-buffered from then
 * on, in every process). Call it while the program has one thread. A second
 * bsp_begin is an error, also after bsp_end (one SPMD section per program;
 * MulticoreBSP allows several in sequence).
 * bsp_end(): end the SPMD section (collective; Err_SYNC if others are in
 * bsp_sync). Every process goes on after it ([choice] BSPonMPI: all run the
 * rest of main), except the forks made by bsp_begin without a launcher: they
 * exit(0) in bsp_end, so only pid 0 goes on (as in MulticoreBSP); bsp_* calls
 * other than bsp_nprocs are errors afterwards.
 * bsp_init(spmd, argc, argv): first statement of main when the SPMD section
 * is in spmd. Processes other than pid 0 call spmd at once and exit(0) after
 * it; pid 0 returns, runs main (stdin reaches pid 0 only) and calls spmd
 * itself, as the same OS process. */
BSPK_BSP_API void bsp_begin(bsp_pid_t maxprocs);
BSPK_BSP_API void bsp_end(void);
BSPK_BSP_API void bsp_init(void (*spmd)(void), int argc, char **argv);

/* Before bsp_begin and after bsp_end: the processes available (bsprun -n N /
 * srun tasks: N; started directly: the cores of this machine, or what
 * mcbsp-affinity.h's settings say); never fails. Inside: the processes of the
 * SPMD section. */
BSPK_BSP_API bsp_nprocs_t bsp_nprocs(void);
/* This process's id in [0, bsp_nprocs()). */
BSPK_BSP_API bsp_pid_t bsp_pid(void);
/* Seconds since bsp_begin on this process (CLOCK_MONOTONIC). */
BSPK_BSP_API double bsp_time(void);

/* End every process of the job: the printf-formatted message is printed once
 * on stderr, as given, and every process exits with a non-zero status. May be
 * called anywhere, also outside the SPMD section. */
BSPK_BSP_API void bsp_abort(const char *format, ...) BSPK_BSP_PRINTF(1, 2) BSPK_BSP_NORETURN;
BSPK_BSP_API void bsp_abort_va(const char *format, va_list ap) BSPK_BSP_NORETURN;
/* MulticoreBSP for C's name for bsp_abort_va. */
BSPK_BSP_API void bsp_vabort(const char *format, va_list ap) BSPK_BSP_NORETURN;

/* End the superstep: every put, get, send and registration of the superstep
 * takes effect, in this order on each process: (1) every get source is read
 * (after all of its owner's computation in the superstep, before any write of
 * this sync), (2) get results are written, (3) puts are written, in ascending
 * source pid and, within one source, in call order (so the highest pid's last
 * put wins [choice]), (4) registrations pushed or popped in the superstep take
 * effect, (5) messages sent in the superstep form the queue of the next one.
 * Errors: processes that pushed, popped or set the tag size differently
 * (named: the first process differing from pid 0); some in bsp_end. */
BSPK_BSP_API void bsp_sync(void);

/* ---- DRMA: registration --------------------------------------------------------
 * Collective, matched by call order: the k-th bsp_push_reg on every process
 * registers the same variable (addresses and sizes may differ; NULL with size
 * 0 on processes without a part). Takes effect at the next bsp_sync: a put or
 * get to a registration pushed in the same superstep is an error; one popped
 * in the same superstep still works. Push then pop in one superstep cancel.
 * The same address may be registered several times: the newest registration
 * is used and popped first. Pops need not be LIFO across addresses. A pop of
 * NULL on a process that registered NULL matches whatever registration the
 * processes popping a real address pop ([choice] BSPonMPI: a wildcard).
 * Errors: negative size, NULL with size > 0, popping an address with no
 * registration, processes pushing/popping differently (at the bsp_sync). */
BSPK_BSP_API void bsp_push_reg(const void *addr, bsp_size_t size);
BSPK_BSP_API void bsp_pop_reg(const void *addr);

/* ---- DRMA: communication --------------------------------------------------------
 * Addressing: dst (put) or src (get) is the caller's own address of a
 * registration; the data go to / come from that registration's memory on
 * process pid, at byte offset. Checked at the call: pid in range, offset and
 * nbytes >= 0, the address registered (and not pushed this superstep), and
 * offset + nbytes within the size pid registered (the message says how many
 * bytes past). NULL is an address like any other [choice, as BSPonMPI and
 * MulticoreBSP look registrations up by address]: a process that registered
 * NULL (size 0, it holds no part) names that registration with NULL, e.g. to
 * put into the other processes' parts (BSPedupack's bspmv does this); with
 * several NULL registrations live, the newest.
 * nbytes == 0 does nothing and checks nothing (not even that the call is made
 * inside the SPMD section: BSPonMPI 1.1, "unless nbytes is zero").
 * bsp_put: buffered -- src is copied at the call and may be reused at once;
 *   written at pid during the next bsp_sync (see bsp_sync for the order).
 *   At least BSPK_PUT_ZEROCOPY_MIN bytes (default auto: 1 MiB to processes
 *   on other hosts, never on this one) to another process
 *   are copied into a registered staging buffer at the call, and pid reads
 *   them from there by one fabric read during the sync, straight into the
 *   destination when no other write of the sync (a put, hpput or get result)
 *   and no zero-copy read by another process (an hpget of those bytes, or
 *   the read of this process's hpput source) touches them, else
 *   into a buffer written in the put order: one copy, or two on overlap.
 *   Smaller ones go through the batch: copied at the call and again into the
 *   destination ([choice]: here the read costs more than the second copy
 *   below 1 MiB, and on one host at every size, hence the auto default;
 *   README "BSPlib programs").
 * bsp_hpput: unbuffered: do not change src or the destination until
 *   bsp_sync returns. At least BSPK_HP_ZEROCOPY_MIN bytes (default 64 KiB) to
 *   another process move during the sync by one fabric read of src straight
 *   into the destination (zero copy: bytes_copied unchanged; adjacent hpputs,
 *   source and destination both continuing the previous one, are one read).
 *   Smaller ones, and those to the process itself, are copied at the call
 *   like bsp_put ([choice]: the standard permits buffering, and a read costs
 *   a round trip: README "BSPlib programs" has the crossover). The reads land
 *   after every get source of the sync was read and before its puts: a
 *   bsp_get of the same bytes sees the old value, a bsp_put of them wins;
 *   two processes' zero-copy hpputs of the same bytes land in no defined
 *   order (the standard leaves that undefined).
 * bsp_get: the remote source is read during the next bsp_sync, after all of
 *   its owner's computation, before any put of that sync lands; the result is
 *   written to dst before the puts of that sync.
 * bsp_hpget: as bsp_get (dst is written during the sync). At least
 *   BSPK_HP_ZEROCOPY_MIN bytes from another process are one fabric read of
 *   the owner's variable straight into dst (zero copy) once the owner's
 *   superstep is over -- in a counted bsp_sync after every process has
 *   entered it; under bspk_expect when the owner sent this process a batch
 *   in the superstep (it did so on entering the sync), else it is answered
 *   as a bsp_get -- and before any put of the sync lands. A zero-copy hpput
 *   into those bytes in the same superstep may or may not be seen
 *   (undefined in the standard). Below the size it is a bsp_get (copied
 *   into the reply and out of it).
 * Copies this layer makes count in bspk_stats.bytes_copied (added at each
 * bsp_sync): bsp_put its source at the call and once more into the
 * destination (from BSPK_PUT_ZEROCOPY_MIN bytes to another process: only at
 * the call, unless its bytes overlap another write of the sync), bsp_get the source into the reply and the reply into dst,
 * bsp_send tag and payload at the call, bsp_move the payload; bsp_hpmove
 * and zero-copy bsp_hpput / bsp_hpget none. A message (tag and payload) or a
 * buffered put larger than a frame (BSPK_FRAME_SIZE: 64 KiB on shm, 256 KiB
 * on tcp) reaches the receiver in several frames and is assembled there once
 * more, so that bsp_hpmove's pointers see one piece ([choice]: on one host a
 * fabric read instead would be the same copy made by the kernel; the README
 * "BSPlib programs" says what is copied where). */
BSPK_BSP_API void bsp_put(bsp_pid_t pid, const void *src, void *dst, bsp_size_t offset, bsp_size_t nbytes);
BSPK_BSP_API void bsp_hpput(bsp_pid_t pid, const void *src, void *dst, bsp_size_t offset, bsp_size_t nbytes);
BSPK_BSP_API void bsp_get(bsp_pid_t pid, const void *src, bsp_size_t offset, void *dst, bsp_size_t nbytes);
BSPK_BSP_API void bsp_hpget(bsp_pid_t pid, const void *src, bsp_size_t offset, void *dst, bsp_size_t nbytes);

/* bsp_direct_get (MulticoreBSP for C 1.x/2.0, beyond BSPlib 1998): copy nbytes
 * at byte offset of pid's part of the registered variable src into dst NOW,
 * blocking, not at the next bsp_sync. As in MulticoreBSP, it sees everything
 * the last bsp_sync wrote on pid (the first direct read of pid in a
 * superstep waits until pid has finished that sync: a sync lets a process
 * out once every process entered it, while pid may still be writing what it
 * delivered); beyond that the bytes are whatever pid's memory holds while
 * the read runs. Meant for data that no one changes in the current
 * superstep: a put into those bytes of this superstep lands only at the
 * sync, and an owner writing them meanwhile races with the read (undefined
 * bytes, as in MulticoreBSP). Counted nowhere: no batch, no message, no
 * effect on bspk_expect's m. Same checks at the call as bsp_get (pid, offset,
 * size, NULL dst, the registration in force, the range on pid); 0 bytes do
 * nothing and check nothing. From this process: one memmove. From another:
 * one fabric read of the owner's memory straight into dst (zero copy; with
 * the shm provider the kernel's cross-memory copy, one-sided; over tcp, on
 * one host too, the owner's provider answers it when the owner's runtime
 * next polls -- at once when it waits in a bsp call, else at its next one
 * (an owner computing for 0.5 s delays the read 0.5 s); the NIC on verbs). It
 * needs the variable registered with the fabric, which bsp_push_reg does
 * unless both BSPK_HP_ZEROCOPY_MIN and BSPK_PUT_ZEROCOPY_MIN are off (an
 * error names the cause). */
BSPK_BSP_API void bsp_direct_get(bsp_pid_t pid, const void *src, bsp_size_t offset, void *dst, bsp_size_t nbytes);

/* ---- BSMP -----------------------------------------------------------------------
 * bsp_set_tagsize(&t): collective (same number of calls and values on every
 * process), takes effect at the next bsp_sync; sets *t to the size requested
 * by the previous call in this superstep, or to the size in force if none
 * [choice, BSPonMPI 1.1; LPF's BSPlib and Krusche's BSPonMPI fork give the
 * size in force either way].
 * Default tag size 0. A message's tag size is the one in force when it was
 * sent.
 * bsp_send: tag (tag size bytes, may be NULL when 0) and payload are copied at
 *   the call; a 0-byte message is a message. Messages of superstep s are read
 *   in s + 1 only; unread ones are discarded at the next bsp_sync.
 *   Queue order [choice, BSPonMPI]: highest source pid first, and within one
 *   source the last sent first. bsp_hpsend (MulticoreBSP) is bsp_send.
 * bsp_qsize: messages in the queue and their payload bytes (tags excluded).
 * bsp_get_tag: *status = payload size of the first message and its tag
 *   copied to tag; on an empty queue *status = -1 and tag is untouched.
 * bsp_move: copies min(reception_nbytes, payload size) bytes of the first
 *   message's payload and removes it. Error on an empty queue.
 * bsp_hpmove: sets *tag_ptr / *payload_ptr to the message's own storage (no
 *   copy; each aligned for any type that fits in it -- to 16 bytes, or to 8
 *   when at most 8 bytes long; valid until the next bsp_sync), removes the
 *   message and returns its payload size; -1 on an empty queue. */
BSPK_BSP_API void bsp_set_tagsize(bsp_size_t *tag_nbytes);
BSPK_BSP_API void bsp_send(bsp_pid_t pid, const void *tag, const void *payload, bsp_size_t payload_nbytes);
BSPK_BSP_API void bsp_hpsend(bsp_pid_t pid, const void *tag, const void *payload, bsp_size_t payload_nbytes);
BSPK_BSP_API void bsp_qsize(bsp_nprocs_t *nmessages, bsp_size_t *accum_nbytes);
BSPK_BSP_API void bsp_get_tag(bsp_size_t *status, void *tag);
BSPK_BSP_API void bsp_move(void *payload, bsp_size_t reception_nbytes);
BSPK_BSP_API bsp_size_t bsp_hpmove(void **tag_ptr, void **payload_ptr);

/* The Oxford BSP toolset's older names, which its programs (and code ported
 * from it) still use: the same calls, with the same checks and errors (named
 * by the standard call). bsp_set_tag_size takes an int *. */
BSPK_BSP_API void bsp_pushregister(const void *addr, bsp_size_t size);     /* = bsp_push_reg */
BSPK_BSP_API void bsp_popregister(const void *addr);                       /* = bsp_pop_reg */
BSPK_BSP_API void bsp_set_tag_size(bsp_size_t *tag_nbytes);                /* = bsp_set_tagsize */

/* ---- Integer arguments of any width ----------------------------------------------
 * bsp_set_tagsize, bsp_qsize and bsp_get_tag take pointers to bsp_size_t /
 * bsp_nprocs_t (int). Programs written for MulticoreBSP for C 2.0, whose
 * bsp_size_t is size_t and bsp_nprocs_t unsigned int (BSPedupack 2.0's
 * bspsort and bspmv), pass size_t * and unsigned *: writing an int there
 * would leave the upper 4 bytes of a size_t as they were. So in C these three
 * names are macros that pass the width of the variable pointed to (4 or 8
 * bytes, any integer type; a pointer to a non-integer does not compile) to
 * the _w entry points below, and in C++ they are overloaded templates: an
 * int * call is the standard one, a size_t * call reads and writes 8 bytes.
 * -1 (an empty queue's status) is all ones in the variable's width
 * (SIZE_MAX in a size_t, as MulticoreBSP). A value that does not fit a
 * 4-byte variable (payload bytes in the queue above INT_MAX) is an error
 * naming the call. Define BSPK_BSP_NO_WIDTH_MACROS before including bsp.h for
 * plain functions (e.g. in a program that declares these prototypes itself;
 * the functions stay callable as (bsp_qsize)(&n, &b) too). */
BSPK_BSP_API void bspk_bsp_set_tagsize_w(void *tag_nbytes, size_t width);
BSPK_BSP_API void bspk_bsp_qsize_w(void *nmessages, size_t nmessages_width, void *accum_nbytes, size_t accum_width);
BSPK_BSP_API void bspk_bsp_get_tag_w(void *status, size_t status_width, void *tag);
/* mcbsp-templates.hpp: a count of `count` elements of elem_size bytes given
 * to call fn (negative if `negative`) that is negative or whose bytes exceed
 * INT_MAX ends the job with a message naming fn, the process and the
 * superstep. */
BSPK_BSP_API void bspk_bsp_elements_error(const char *fn, int negative, unsigned long count, size_t elem_size)
    BSPK_BSP_NORETURN;
#if !defined(__cplusplus) && !defined(BSPK_BSP_NO_WIDTH_MACROS)
/* The width of *p; `& 1` rejects pointers to non-integers at compile time.
 * NULL (a void *) gives width 0, so that a call with NULL compiles and is
 * reported at run time as NULL, as with the plain functions (BSPonMPI's test
 * get_tag_status_null); that needs a generic selection (C11, or GCC and
 * Clang in any C mode). */
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define BSPK_BSP_GENERIC_ _Generic
#elif defined(__GNUC__)
#define BSPK_BSP_GENERIC_ __extension__ _Generic
#endif
#ifdef BSPK_BSP_GENERIC_
#define BSPK_BSP_DEREF_(p) BSPK_BSP_GENERIC_((p), void *: (char *)0, default: (p))
#define BSPK_BSP_WIDTH_(p) \
  BSPK_BSP_GENERIC_((p), void *: (size_t)0, default: (sizeof(*BSPK_BSP_DEREF_(p) & 1) ? sizeof(*BSPK_BSP_DEREF_(p)) : 0))
#else
#define BSPK_BSP_WIDTH_(p) (sizeof(*(p) & 1) ? sizeof(*(p)) : 0)
#endif
#define bsp_set_tagsize(tag_nbytes) bspk_bsp_set_tagsize_w((tag_nbytes), BSPK_BSP_WIDTH_(tag_nbytes))
#define bsp_qsize(nmessages, accum_nbytes) \
  bspk_bsp_qsize_w((nmessages), BSPK_BSP_WIDTH_(nmessages), (accum_nbytes), BSPK_BSP_WIDTH_(accum_nbytes))
#define bsp_get_tag(status, tag) bspk_bsp_get_tag_w((status), BSPK_BSP_WIDTH_(status), (tag))
#ifdef BSPK_BSP_GENERIC_
/* bsp_hpmove also takes const void ** arguments (LPF's BSPlib declares it
 * so, and programs written for it pass them): converted to void ** here,
 * where C would warn (GCC 14: refuse) at the implicit conversion; any other
 * pointer type is passed on as written. */
#define BSPK_BSP_VOIDPP_(p) BSPK_BSP_GENERIC_((p), const void **: (void **)(p), default: (p))
#define bsp_hpmove(tag_ptr, payload_ptr) (bsp_hpmove)(BSPK_BSP_VOIDPP_(tag_ptr), BSPK_BSP_VOIDPP_(payload_ptr))
#endif
#endif

#ifdef __cplusplus
}
#endif

#if defined(__cplusplus) && !defined(BSPK_BSP_NO_WIDTH_MACROS)
/* The C++ part below (overloads, templates) keeps C++ linkage when a program
 * includes bsp.h inside extern "C" { } -- a common habit of C++ BSPlib
 * programs, which that would otherwise turn into errors ("conflicting
 * declaration of C function", "template with C linkage"). For the same
 * reason it includes no standard C++ header. */
extern "C++" {
/* bsp_hpmove with const void ** arguments, as LPF's BSPlib declares it
 * (programs written for it pass `const void *tag, *payload; bsp_hpmove(&tag,
 * &payload)`, which C++ would refuse): the same call. (Being overloaded,
 * `&bsp_hpmove` needs a target type, e.g. `int (*f)(void **, void **) =
 * bsp_hpmove;`.) */
inline bsp_size_t bsp_hpmove(const void **tag_ptr, const void **payload_ptr) {
  return bsp_hpmove(const_cast<void **>(tag_ptr), const_cast<void **>(payload_ptr));
}
inline bsp_size_t bsp_hpmove(void **tag_ptr, const void **payload_ptr) {
  return bsp_hpmove(tag_ptr, const_cast<void **>(payload_ptr));
}
inline bsp_size_t bsp_hpmove(const void **tag_ptr, void **payload_ptr) {
  return bsp_hpmove(const_cast<void **>(tag_ptr), payload_ptr);
}

#if __cplusplus >= 201103L
/* C++11 and later: the same for any integer variable (see "Integer arguments
 * of any width"); an int * argument calls the C function itself. (C++98/03:
 * the standard int * functions only.) Template parameters are named so that
 * a program's own macros (T, N, B, ...) defined before this header cannot
 * clash with them. bspk_bsp_is_int_<T>::value is std::is_integral<T>::value
 * for the standard integer types (here so that <type_traits> need not be
 * included inside a program's extern "C"). */
template <class bspk_int_t_>
struct bspk_bsp_is_int_ {
  static const bool value = false;
};
template <class bspk_int_t_>
struct bspk_bsp_is_int_<const bspk_int_t_> : bspk_bsp_is_int_<bspk_int_t_> {};
template <class bspk_int_t_>
struct bspk_bsp_is_int_<volatile bspk_int_t_> : bspk_bsp_is_int_<bspk_int_t_> {};
template <class bspk_int_t_>
struct bspk_bsp_is_int_<const volatile bspk_int_t_> : bspk_bsp_is_int_<bspk_int_t_> {};
#define BSPK_BSP_INT_(type_)          \
  template <>                         \
  struct bspk_bsp_is_int_<type_> {    \
    static const bool value = true;   \
  };
BSPK_BSP_INT_(bool)
BSPK_BSP_INT_(char)
BSPK_BSP_INT_(signed char)
BSPK_BSP_INT_(unsigned char)
BSPK_BSP_INT_(wchar_t)
BSPK_BSP_INT_(char16_t)
BSPK_BSP_INT_(char32_t)
#if defined(__cpp_char8_t)
BSPK_BSP_INT_(char8_t)
#endif
BSPK_BSP_INT_(short)
BSPK_BSP_INT_(unsigned short)
BSPK_BSP_INT_(int)
BSPK_BSP_INT_(unsigned)
BSPK_BSP_INT_(long)
BSPK_BSP_INT_(unsigned long)
BSPK_BSP_INT_(long long)
BSPK_BSP_INT_(unsigned long long)
#undef BSPK_BSP_INT_
template <class bspk_int_t_>
inline void bsp_set_tagsize(bspk_int_t_ *tag_nbytes) {
  static_assert(bspk_bsp_is_int_<bspk_int_t_>::value, "bsp_set_tagsize takes a pointer to an integer");
  bspk_bsp_set_tagsize_w(tag_nbytes, sizeof(bspk_int_t_));
}
template <class bspk_int_n_, class bspk_int_b_>
inline void bsp_qsize(bspk_int_n_ *nmessages, bspk_int_b_ *accum_nbytes) {
  static_assert(bspk_bsp_is_int_<bspk_int_n_>::value && bspk_bsp_is_int_<bspk_int_b_>::value,
                "bsp_qsize takes pointers to integers");
  bspk_bsp_qsize_w(nmessages, sizeof(bspk_int_n_), accum_nbytes, sizeof(bspk_int_b_));
}
template <class bspk_int_t_>
inline void bsp_get_tag(bspk_int_t_ *status, void *tag) {
  static_assert(bspk_bsp_is_int_<bspk_int_t_>::value, "bsp_get_tag takes a pointer to an integer status");
  bspk_bsp_get_tag_w(status, sizeof(bspk_int_t_), tag);
}
#endif /* C++11 */
} /* extern "C++" */
#endif
#endif /* BSPK_BSP_H */
