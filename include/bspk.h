/*
 * bspk.h -- the BSPk C API (BSP toolkit: communicable memory and lazy barriers).
 *
 * Source of every rule below: "Communicable Memory and Lazy Barriers for Bulk
 * Synchronous Parallelism in BSPk" (Fahmy, Heddaya), Table 1 and sections 3-6,
 * cited as [BSPk §n]; the superstep tagging rule is from "Relaxed barrier
 * synchronization" section 5, cited as [RBS §5].
 *
 * Conventions
 *   - Status-returning calls return BSPK_OK (0) or a negative BSPK_ERR_* code.
 *   - Calls returning a comem pointer return BSPK_NULL on error.
 *   - After any error, bspk_error_string() holds a message naming the call, the
 *     process (pid) and the superstep. Errors are also printed to stderr unless
 *     BSPK_ERRORS=quiet; BSPK_ERRORS=abort ends the job on the first error.
 *     An error whose message is the one printed last (a failing call repeated
 *     in a loop) is printed once more, marked "again", then only counted: the
 *     count ("N times in all") is printed before the next different error and
 *     when the process exits.
 *   - A superstep is the code between two bspk_sync() calls; supersteps are
 *     numbered from 0 on each process. All communication issued in superstep s
 *     takes effect at the boundary s -> s+1 [BSPk §3].
 *   - Cost notes use BSP terms: h = messages (or elements) this process sends or
 *     receives in the superstep, F = frames touched, p = bspk_nprocs().
 *
 * Threads: BSPk is not thread-safe; one thread at a time calls it. Calls from
 * different threads one after another are fine (a worker thread that does a
 * process's communication while the others wait, an OpenMP `master` or
 * `single` region between barriers). A call made while another thread of the
 * process is inside a BSPk call (blocked in bspk_sync, say) is refused: it
 * returns BSPK_ERR_STATE (BSPK_NULL for pointer results), with a message
 * naming both calls, and does nothing; the other thread's call goes on
 * unharmed. The check costs one load and three stores per call and is not a
 * lock: two calls entering at the same instant may both pass, and then
 * anything can happen. Exempt, callable from any thread: bspk_pid,
 * bspk_nprocs, bspk_time, bspk_abort (it ends the job from there), and the
 * pointer accessors (bspk_elemP, bspk_incr, bspk_span, bspk_nelems,
 * bspk_elem_size, bspk_owner, bspk_is_null) on regions that no thread frees
 * or passes through a bspk_sync meanwhile (a boundary may replace a region's
 * frames) -- e.g. threads reading and writing elements of a region in a
 * parallel loop between two bspk_syncs.
 */
#ifndef BSPK_H
#define BSPK_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define BSPK_API __attribute__((visibility("default")))
#else
#define BSPK_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define BSPK_VERSION_MAJOR 0
#define BSPK_VERSION_MINOR 2
#define BSPK_VERSION_PATCH 0

/* ---- Return codes -------------------------------------------------------------
 * What state each error leaves, so that a program knows what it may do next:
 *   [call]  the call had no effect; the superstep and the job go on as if it
 *           had not been made.
 *   [step]  returned by bspk_sync after the superstep ended: every other
 *           effect of the superstep took place, the named copies did not (or
 *           only as the message says); the job goes on.
 *   [over]  the job cannot continue consistently: the superstep did not end
 *           on this process and other processes may be waiting for it. End the
 *           job (bspk_abort, or BSPK_ERRORS=abort to have it done at the first
 *           error). Later calls that communicate or end a superstep
 *           (bspk_sync, bspk_sync_allgather(v), bspk_expect, bspk_will_send,
 *           bspk_send, bspk_send_buf, bspk_send_tag, bspk_put, bspk_copy,
 *           bspk_mem_read, bspk_mem_wait) return the same code at once, do
 *           nothing and print nothing, so a program that ignores return codes
 *           gets one message and never hangs; bspk_finalize returns the same
 *           code at once without printing a second message (see there).
 *           An error found while the runtime progressed (more arrivals than
 *           declared, a malformed one, another process's count for a
 *           superstep this one declared, memory that ran out while an
 *           arrival was handled) is [over] whichever call returns it;
 *           BSPK_POOL_LIMIT reached by arrivals (BSPK_ERR_NOMEM) is not:
 *           they wait, unreceived, until the program frees regions.
 * A code can carry different states from different calls; the list names them. */
#define BSPK_OK               0
#define BSPK_ERR_ARG         -1  /* invalid argument (NULL, negative, zero size, ...)    [call]  */
#define BSPK_ERR_PID         -2  /* process id outside [0, bspk_nprocs())                [call]  */
#define BSPK_ERR_PTR         -3  /* NULL, stale (freed) or non-local comem pointer        [call]; from
                                    bspk_sync: a copy refused by its target           [step]  */
#define BSPK_ERR_RANGE       -4  /* element range runs past the end of a region           [call]  */
#define BSPK_ERR_NOMEM       -5  /* frame or index pool could not grow                    [call];
                                    while handling an arrival (it was lost)           [over]  */
#define BSPK_ERR_STATE       -6  /* call out of order (not initialised, finalised, made
                                    while another thread is inside a call: Threads)   [call]  */
#define BSPK_ERR_MODE        -7  /* sync declarations: repeated (bspk_expect/will_send)   [call];
                                    kinds mixed between processes (from any call)     [over]  */
#define BSPK_ERR_COUNT       -8  /* more/fewer messages than declared                     [over]  */
#define BSPK_ERR_TIMEOUT     -9  /* waited longer than BSPK_SYNC_TIMEOUT without progress [over]  */
#define BSPK_ERR_FABRIC     -10  /* libfabric reported an error, or a malformed message  [over]  */
#define BSPK_ERR_BOOT       -11  /* launcher / bootstrap failure                           [over]  */
#define BSPK_ERR_PEER       -12  /* another process failed, aborted or finalised early     [over]  */
#define BSPK_ERR_UNSUPPORTED -13 /* not available (yet) in this build                      [call]  */
#define BSPK_ERR_NAME        -14 /* (name, idx) registered twice, or unknown to bspk_lookup:
                                    from bspk_malloc/bspk_lookup [call], from bspk_sync [step] */
#define BSPK_ERR_CONFLICT    -15 /* BSPK_CHECK=1: two processes wrote the same elements    [step]  */
#define BSPK_ERR_INTERNAL    -16 /* a fault inside BSPk itself (a bug: please report it)   [over]  */

/* ---- Comem pointers [BSPk §4, Fig. 2] ---------------------------------------
 * A small value naming one element of a communicable-memory region: the owner
 * pid, the region id on the owner, the element offset, the element size, the
 * region's element count and (for received messages) the sender. It holds no
 * process-local address, so a pointer sent inside a message means the same
 * thing on every process. Treat the fields as read-only; use the accessors.
 * A zero-initialised bspk_ptr ({0}) is the NULL pointer.
 * Stale pointers: a region id is a slot of the owner's region table plus a
 * 40-bit generation of that slot (8 bits in `region`, 32 in `gen`), starting
 * at a random value per process and advanced on every reuse, so a pointer to
 * a freed region is refused (BSPK_ERR_PTR) for 2^40 reuses of its slot, and a
 * pointer from another job or a corrupt one is refused with near certainty. */
typedef struct bspk_ptr {
    uint64_t offset;    /* element offset from the start of the region          */
    uint64_t nelems;    /* elements in the whole region                          */
    uint32_t region;    /* region id on the owner; 0 means NULL                  */
    int32_t  owner;     /* pid of the process owning the region                 */
    uint32_t elem_size; /* bytes per element                                     */
    int32_t  sender;    /* pid that sent the region (received messages), else owner */
    uint32_t gen;       /* high 32 bits of the region's generation (see above)  */
} bspk_ptr;

#define BSPK_NULL_INIT {0, 0, 0, 0, 0, 0, 0}
#ifdef __cplusplus
#define BSPK_NULL (bspk_ptr BSPK_NULL_INIT)
#else
#define BSPK_NULL ((bspk_ptr)BSPK_NULL_INIT)
#endif

/* ---- Lifecycle ---------------------------------------------------------------- */

/* Start the runtime: bootstrap through the launcher (bspkrun) or run as a single
 * process when started directly, open the fabric, register the first frame
 * slab, and pass an out-of-band barrier. Collective. argc/argv may be NULL.
 * Errors: BSPK_ERR_STATE (called twice), BSPK_ERR_BOOT, BSPK_ERR_FABRIC. */
BSPK_API int bspk_init(int *argc, char ***argv);

/* End the runtime. Collective: every process must call it in its final
 * superstep; messages sent in that superstep are discarded. Waits for all
 * processes, prints statistics when BSPK_STATS=1, closes the fabric.
 * After an [over] error (see Return codes: returned by an earlier call) the
 * job cannot end together: then
 * bspk_finalize returns that error's code at once, prints nothing (no second
 * error, no statistics; bspk_error_string() keeps the first message) and
 * leaves the runtime to die with the process, whose exit ends the job (the
 * launcher or the job hub ends the other processes and says how this one
 * ended). Later calls fail with BSPK_ERR_STATE as after any bspk_finalize.
 * Errors: BSPK_ERR_STATE, BSPK_ERR_PEER (a process is still in a superstep:
 * the Err_SYNC case), BSPK_ERR_TIMEOUT, or the earlier [over] error. */
BSPK_API int bspk_finalize(void);

/* This process's id in [0, nprocs), and the number of processes. O(1).
 * Return -1 / 0 before bspk_init and after bspk_finalize. */
BSPK_API int bspk_pid(void);
BSPK_API int bspk_nprocs(void);

/* Wall-clock seconds since an arbitrary fixed origin (CLOCK_MONOTONIC). */
BSPK_API double bspk_time(void);

/* End every process of the job with a non-zero exit status. The message
 * (printf format) is printed once, prefixed with this process's pid and
 * superstep. Never returns. */
BSPK_API void bspk_abort(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((noreturn, format(printf, 1, 2)))
#endif
    ;

/* Beyond the paper, for layers with their own message format (BSPlib's
 * bsp_abort): end every process of the job like bspk_abort, printing message
 * exactly as given on stderr (no pid or superstep prefix; a trailing newline
 * is added when missing), once. Works before bspk_init too. Never returns. */
BSPK_API void bspk_abort_text(const char *message)
#if defined(__GNUC__)
    __attribute__((noreturn))
#endif
    ;

/* Beyond the paper: how this process was started, read from the environment
 * without starting the runtime. Returns the number of processes bspk_init
 * will join (bspkrun -n P: P; srun: the step's tasks), -1 when a launcher
 * started the process but the number is known only after bspk_init (PMIx
 * outside Slurm), and 0 when the program was started directly (bspk_init
 * then runs it as a single process). Never fails. */
BSPK_API int bspk_launched(void);

/* Beyond the paper: 1 if process pid runs on this process's host (the host
 * names the processes reported at bspk_init agree; messages between them
 * stay in the host), 0 if not. O(1). Layers above choose a path per
 * destination with it (BSPlib's staged bsp_put: README "BSPlib programs").
 * Errors (returned): BSPK_ERR_STATE (before bspk_init or after
 * bspk_finalize), BSPK_ERR_ARG (pid outside [0, nprocs)). */
BSPK_API int bspk_same_host(int pid);

/* Message describing the last error on this process ("" if none). */
BSPK_API const char *bspk_error_string(void);

/* ---- Communicable memory [BSPk §4] ------------------------------------------ */

/* Allocate a local region of n elements of elem_size bytes, built from
 * fixed-size frames (BSPK_FRAME_SIZE) plus an index array. name "" (or NULL)
 * makes an anonymous region, as used for messages [BSPk Fig. 4]. A non-empty
 * name registers the region job-wide under (name, idx) for bspk_lookup
 * [BSPk §6.2, Fig. 5]; the pair must be unique in the whole job. A pair already
 * registered on this process fails here (BSPK_ERR_NAME); one registered by
 * another process is reported by this process's next bspk_sync at the latest
 * (BSPK_ERR_NAME naming both owners; the first owner is told too), and this
 * region then stays allocated without a job-wide name. Elements never straddle
 * frames, so elem_size must not exceed the frame size. n == 0 is allowed (an
 * empty region). Cost O(F) with F = frames, plus one control message to the
 * pair's home process for a named region (answered before the next sync ends).
 * Errors (BSPK_NULL returned): BSPK_ERR_ARG (elem_size 0 or > frame size,
 * name longer than 63 bytes), BSPK_ERR_NAME, BSPK_ERR_NOMEM, BSPK_ERR_STATE. */
BSPK_API bspk_ptr bspk_malloc(const char *name, int idx, size_t n, size_t elem_size);

/* Free a local region (any pointer into it). Its frames return to the pool
 * once sends from it have completed. Per [BSPk §6 rule 2], do not free a region
 * passed to bspk_send or used as a bspk_copy source before the next bspk_sync.
 * A named region is unregistered job-wide at the next bspk_sync; copies into it
 * that arrive afterwards are refused and reported to their issuer. O(F).
 * Errors: BSPK_ERR_PTR (NULL, stale, remote). */
BSPK_API int bspk_free(bspk_ptr p);

/* Address of the one element p points to. No pointer arithmetic on the result:
 * the next element may live in another frame (use bspk_incr or bspk_span;
 * contiguous regions, below, are the exception).
 * The address is valid until the next bspk_sync: a copy into the region may
 * replace its frames at the superstep boundary (frame flip). O(1). Returns NULL (and sets the error) for NULL, stale, remote or
 * one-past-the-end pointers. */
BSPK_API void *bspk_elemP(bspk_ptr p);

/* p advanced by amount elements (may be negative). The result may point one
 * past the last element. O(1), independent of the number of frames.
 * Errors (BSPK_NULL): BSPK_ERR_PTR, BSPK_ERR_RANGE. */
BSPK_API bspk_ptr bspk_incr(bspk_ptr p, ptrdiff_t amount);

/* Beyond the paper: store the address of p's element in *base and return how
 * many elements, starting with it, lie contiguously in its frame (and in the
 * region); in a contiguous region (see "Contiguous regions") all the rest of
 * the region: bspk_nelems(p). Loop "for (k = 0; k < len; k++) base[k]" then
 * bspk_incr(p, len).
 * Returns 0 (and *base = NULL) at the end of the region or on error. O(1). */
BSPK_API size_t bspk_span(bspk_ptr p, void **base);

/* Accessors, all O(1) and pure functions of the pointer value, except for a
 * pointer returned by bspk_lookup before its pair was resolved: until the end
 * of that superstep bspk_owner gives -1 and bspk_nelems / bspk_elem_size 0,
 * afterwards the values of the region it names. */
BSPK_API int    bspk_is_null(bspk_ptr p);   /* 1 if p is BSPK_NULL                       */
BSPK_API size_t bspk_nelems(bspk_ptr p);    /* elements from p to the end of its region  */
BSPK_API size_t bspk_elem_size(bspk_ptr p); /* bytes per element                         */
BSPK_API int    bspk_owner(bspk_ptr p);     /* owning pid; -1 for BSPK_NULL              */

/* ---- Contiguous regions (beyond the paper) ------------------------------------
 * A region from bspk_malloc is contiguous only within a frame. A *contiguous*
 * region holds its elements back to back in memory: element k at
 * base + k * elem_size, with base = bspk_elemP of element 0, and bspk_span
 * from element k returns all the n - k elements left, so array kernels (a
 * block matrix multiply, a local sort) run on it directly. Of more than one
 * frame it is one run of consecutive frames: a slab of exactly those frames,
 * registered with the fabric when it is allocated and deregistered and
 * released when the region is freed (counted in frames_in_use and pool_bytes
 * meanwhile; BSPK_POOL_LIMIT applies) -- or, up to 64 MiB of freed runs,
 * kept registered for the next run of the same length (counted in pool_bytes
 * only; released first when BSPK_POOL_LIMIT or memory runs short). On one
 * host runs are host-shared memory, so their messages and stores are copied
 * once by the receiver, as from ordinary frames. Of at most one frame it is
 * one ordinary frame.
 * Everything that takes a region takes a contiguous one: bspk_elemP,
 * bspk_incr, bspk_span, bspk_send, bspk_copy (either side, named regions and
 * bspk_lookup included), bspk_free, the accessors, and rules 1-6 of
 * "Distributed shared memory" hold unchanged. What stays zero-copy:
 *   - bspk_send from it: the frames go onto the wire from the region's memory;
 *   - bspk_copy with it as source: stores and fetch replies travel straight
 *     from its memory;
 *   - receiving: see bspk_recv_contiguous.
 * What is copied: a bspk_copy into a contiguous region (a store, a fetch or a
 * local copy) is applied at the boundary by copying into place, whole frames
 * included (counted in bytes_copied): frame flips do not apply to contiguous
 * targets, so the region stays one run and its addresses stay valid until
 * bspk_free (not only until the next bspk_sync, as for other regions). */

/* A region of n elements of elem_size bytes lying contiguously in memory, as
 * described above; otherwise exactly bspk_malloc: the same naming and
 * job-wide registration under (name, idx) (name "" or NULL: anonymous), the
 * same limits (elem_size <= frame size, as every region is cut into frames
 * for the wire; an element may straddle two frames of the run) and the same
 * errors, reported as from "bspk_malloc_contiguous". Element 0 starts on a
 * frame boundary (aligned to the frame size). n == 0 makes an empty region.
 * Cost O(F) as bspk_malloc, plus, for more than one frame of data, a fresh
 * allocation and one memory registration (fi_mr_reg) here -- none when a
 * kept run of the same length is reused (see above; its bytes are then what
 * its last user left, as a recycled frame's are) -- and at most one
 * deregistration at bspk_free. Errors (BSPK_NULL returned): BSPK_ERR_ARG
 * (elem_size 0 or > frame size, name longer than 63 bytes), BSPK_ERR_NAME, BSPK_ERR_NOMEM
 * (memory or BSPK_POOL_LIMIT), BSPK_ERR_FABRIC (the provider refused the
 * registration; nothing is allocated), BSPK_ERR_STATE. */
BSPK_API bspk_ptr bspk_malloc_contiguous(const char *name, int idx, size_t n, size_t elem_size);

/* 1 if p points into a live local region lying in one piece of memory (so
 * that bspk_span from its first element returns all of it): every region
 * from bspk_malloc_contiguous or bspk_recv_contiguous, and any region of at
 * most one frame (a one-frame region from bspk_malloc or bspk_recv is
 * contiguous, but a frame flip may still move it at a boundary). 0 otherwise,
 * and for BSPK_NULL, freed and remote pointers (a pointer does not carry the
 * layout of a remote region). Sets no error. O(1). */
BSPK_API int bspk_is_contiguous(bspk_ptr p);

/* The next message, as bspk_recv would return it (the same queue and order:
 * the two calls may be mixed), but as a contiguous region:
 *   - a message that arrived in a single frame or 4 KiB buffer (one that fits
 *     in one frame counted from its first element's place in the sender's
 *     frame: e.g. at most a frame sent from element 0 of a region) is
 *     returned as it is, made of that frame: no copy, O(1);
 *   - a message of several frames is copied into a fresh contiguous region
 *     (one run, as bspk_malloc_contiguous: a kept run of that length when
 *     there is one, else an allocation and a registration) and its frames
 *     return to the pool: the message's bytes are added to bytes_copied,
 *     O(bytes).
 * Either way the region is never flipped and is the caller's: free it with
 * bspk_free; bspk_sender_id names its sender. Returns BSPK_NULL when no
 * message is left (not an error). Errors (BSPK_NULL returned): BSPK_ERR_NOMEM,
 * BSPK_ERR_FABRIC (no run could be allocated or registered; the message stays
 * first in the queue, for bspk_recv or a later bspk_recv_contiguous),
 * BSPK_ERR_STATE. */
BSPK_API bspk_ptr bspk_recv_contiguous(void);

/* ---- Synchronisation: lazy barriers [BSPk §5] -------------------------------- */

/* End the current superstep. Returns when (a) every message sent to this
 * process in this superstep has arrived, (b) this process's own sends are
 * complete (their regions may be reused), and nothing else: processes that
 * need no data from each other do not wait for each other. The number of
 * messages to wait for comes from, in this order:
 *   bspk_expect(m)     -- declared; no network traffic beyond the data (cost 0);
 *   bspk_will_send(v)  -- element-wise sum of all v over the processes;
 *   neither            -- the runtime sums the actual send counts the same way
 *                         (the cost of an ordinary barrier, L).
 * The sum goes through a shared-memory board when every process is on one
 * host (a few atomic operations, like a shared-memory barrier), else in one
 * round of p-1 count messages per process (up to 16 processes, each with a
 * CPU of its own) or over a binomial tree of messages (2*ceil(log2 p)
 * rounds; when processes outnumber CPUs or p > 16); recursive halving
 * (log2 p rounds) on request. BSPK_COUNT_EXCHANGE chooses (README,
 * "Environment"). In the one-round exchange a process's count for a peer
 * travels in its last small message to that peer instead of a message of its
 * own: after a superstep without a declaration, that message leaves at the
 * sender's next send to the peer or its bspk_sync, not at its bspk_send
 * (BSPK_COUNT_CARRY=off: always at bspk_send).
 * Every message carries its superstep number [RBS §5]: a message from a process
 * that is ahead is held (in its own frames) until this process gets there.
 * Messages received in superstep s but not claimed by bspk_recv are destroyed
 * at the end of s. Errors: BSPK_ERR_COUNT (more arrivals than declared, or sends
 * differing from bspk_will_send), BSPK_ERR_MODE (kinds mixed between processes),
 * BSPK_ERR_TIMEOUT (no progress for BSPK_SYNC_TIMEOUT seconds, default 60; the
 * message says what was expected and what arrived), BSPK_ERR_PEER, BSPK_ERR_FABRIC.
 * DSM: the copies of the superstep are applied before it returns (see
 * "Distributed shared memory"); errors found there (BSPK_ERR_NAME,
 * BSPK_ERR_CONFLICT, BSPK_ERR_PTR/RANGE for refused copies) are returned after
 * the superstep has ended, so the other processes are not left waiting. */
BSPK_API int bspk_sync(void);

/* Declare that nmsgs messages will be sent to this process during the current
 * superstep (by all processes, itself included; received next superstep).
 * Copies count as messages at their target, local copies at their issuer
 * (DSM rule 5).
 * At most one declaration per process per superstep, and every process must use
 * the same kind (expect / will_send / none) in a superstep [BSPk Table 1].
 * Messages a process sends to itself have arrived when bspk_send returns.
 * Errors: BSPK_ERR_ARG (nmsgs < 0) [call], BSPK_ERR_MODE (already declared
 * [call]; or other processes are already summing send counts for this
 * superstep: kinds mixed [over], as when bspk_sync finds it),
 * BSPK_ERR_COUNT (more than nmsgs have already arrived), BSPK_ERR_PEER (a
 * process called bspk_finalize in this superstep). */
BSPK_API int bspk_expect(int nmsgs);

/* Declare that this process will send nmsgs[j] messages to process j during the
 * current superstep (array of bspk_nprocs() ints; copies count per DSM rule 5:
 * a store in the entry of dst's owner, a fetch in that of src's owner, a local
 * copy in this process's own entry). The runtime sums the vectors
 * over all processes at bspk_sync (as the counted mode does, see bspk_sync).
 * Errors: BSPK_ERR_ARG (NULL or negative entry), BSPK_ERR_MODE. */
BSPK_API int bspk_will_send(const int *nmsgs);

/* Beyond the paper: the declaration this process made so far in the current
 * superstep: 0 none (the sync will be counted), 1 bspk_expect, 2
 * bspk_will_send. For layers built on this API (BSPlib's bsp_sync). O(1);
 * 0 before bspk_init. Never fails. */
BSPK_API int bspk_declared(void);

/* Beyond the paper: take back this superstep's declaration. Returns what
 * bspk_declared() returned (0 none, 1 bspk_expect, 2 bspk_will_send); if
 * not NULL, *nmsgs gets bspk_expect's m (else 0) and counts[0..p-1]
 * bspk_will_send's vector (else zeros). The superstep is then undeclared
 * (counted), as if neither had been called. For layers that carry a
 * superstep's data themselves and check the declaration against what
 * arrives (the BSPlib layer on one host, whose board superstep needs no
 * counts). O(p); 0 before bspk_init. Never fails. */
BSPK_API int bspk_withdraw(int64_t *nmsgs, int *counts);

/* Beyond the paper: this process's current superstep -- the supersteps it
 * has completed, bspk_stats.supersteps: 0 from bspk_init to its first
 * bspk_sync -- and the messages and copies it has issued in it
 * (bspk_stats.step_sends: bspk_send, bspk_send_buf, bspk_send_tag,
 * bspk_copy, bspk_put; 0 right after bspk_sync returns). For layers built on
 * this API that check their caller's state on every call (the collectives of
 * bspk_coll.h: "must be the superstep's only communication"), where filling
 * the whole bspk_stats would be most of a short collective's local work.
 * O(1); 0 before bspk_init and after bspk_finalize. Never fail. */
BSPK_API uint64_t bspk_superstep(void);
BSPK_API uint64_t bspk_step_sends(void);

/* Beyond the paper: for a layer built on this API whose superstep spans one
 * or more BSPk supersteps (the BSPlib layer: a bsp_sync runs one or two, and
 * bsp_begin two more), the layer's own count of this process's supersteps,
 * which BSPk's reports then name first: bspkrun's and the job hub's failure
 * reports ("pid 2 ... was killed by signal 11 in BSPlib superstep 5
 * (computing; BSPk superstep 8)"), the sync time-out and the errors of bspk_*
 * calls ("bspk_send (pid 1, BSPlib superstep 5; BSPk superstep 8)").
 * Without it every report names BSPk's superstep alone.
 * layer: the layer's name, 1-15 printable ASCII characters without spaces,
 * the same in every call of the process (only the first call's is kept);
 * superstep: the layer's superstep, 0 to 2^32 - 2. Call it whenever the
 * layer's superstep changes (a few stores into this process's status slot;
 * no communication, no system call), from one thread at a time as every
 * call (Threads).
 * Errors: BSPK_ERR_ARG (layer NULL, empty, too long, not printable, or not
 * the first call's; superstep out of range), BSPK_ERR_STATE (before
 * bspk_init or after bspk_finalize); a refused call changes nothing. */
BSPK_API int bspk_set_layer_superstep(const char *layer, unsigned long superstep);

/* Beyond the paper: a superstep whose communication is an all-gather of small
 * blocks. Ends the current superstep like bspk_sync and gives every process
 * the block of nbytes <= BSPK_SYNC_BLOCK_MAX bytes at `mine` of every process:
 * process j's block lands at all + j * nbytes (all: p * nbytes bytes; this
 * process's own block included). Collective: every process calls it in the
 * same superstep, and nothing else communicates in that superstep.
 * h-relation: (p - 1) * nbytes bytes in and out per process; cost:
 *   - every process on one host with the shared-memory count board
 *     (bspk_sync_allgather_shared() == 1): each process writes its block
 *     into its own slot of the board and reads the others' (a block of up
 *     to 48 bytes is one cache line each way), so it costs about a
 *     shared-memory barrier plus copies of p * nbytes bytes; the superstep
 *     ends as with bspk_expect(0) between writing and reading, so its own
 *     work overlaps the blocks' way;
 *   - otherwise: one message to every other process and bspk_expect(p - 1)
 *     (bspk_send_buf's copy at each end), i.e. (p - 1) * nbytes * g + l.
 * sizes: NULL, or p entries that receive each process's nbytes. Processes may
 * pass different sizes: a block larger than this process's nbytes is cut to
 * nbytes, a smaller one leaves the rest of its place in `all` untouched. With
 * sizes == NULL a size different from this process's nbytes is an error
 * (BSPK_ERR_ARG [step], naming the lowest such pid; the blocks are still
 * copied); with sizes the caller compares them. This is how bspk_coll.h's
 * collectives exchange their headers and short data on one host.
 * Errors: BSPK_ERR_ARG (nbytes > BSPK_SYNC_BLOCK_MAX, mine or all NULL with
 * nbytes > 0) [call]; BSPK_ERR_STATE (a bspk_expect or bspk_will_send, or a
 * message or copy, already made in this superstep) [call] -- these return
 * before the superstep's boundary, so the other processes' calls end in their
 * time-out, as a missing bspk_sync would; BSPK_ERR_MODE (some processes
 * called bspk_sync instead, or kinds otherwise mixed) [over]; and bspk_sync's.
 * O(p * nbytes) beyond bspk_sync. */
#define BSPK_SYNC_BLOCK_MAX 16384
BSPK_API int bspk_sync_allgather(const void *mine, size_t nbytes, void *all, size_t *sizes);

/* bspk_sync_allgather with this process's block in pieces and every block
 * handed to a function instead of copied: the block is the concatenation
 * of the iovcnt pieces at iov (struct iovec from <sys/uio.h>; at most
 * BSPK_SYNC_BLOCK_MAX bytes in all; pieces of 0 bytes may be NULL), and
 * read(j, block, nbytes, arg) is called once for every process j's block
 * (this process's included), in pid order, before this call returns; the
 * block is valid during that call only (read copies what it needs; on one
 * host it is the board's shared memory). Blocks may differ in size. This is
 * how the BSPlib layer sends a superstep's small batches on one host
 * without messages: each process takes only what is addressed to it. read
 * must not call BSPk. The pieces are copied once, into the board (or a
 * message). Errors: those of bspk_sync_allgather, and BSPK_ERR_ARG [call]
 * for iovcnt < 0, a NULL iov (iovcnt > 0), a NULL piece of > 0 bytes, or a
 * NULL read. Cost: bspk_sync_allgather's, with the copies read makes. */
struct iovec;
typedef void (*bspk_block_fn)(int pid, const void *block, size_t nbytes, void *arg);
BSPK_API int bspk_sync_allgatherv(const struct iovec *iov, int iovcnt, bspk_block_fn read, void *arg);

/* 1 when bspk_sync_allgather goes through shared memory in this job (every
 * process on one host and BSPK_COUNT_EXCHANGE auto or board), else 0. The
 * same on every process; 0 before bspk_init. Never fails. */
BSPK_API int bspk_sync_allgather_shared(void);

/* How a counted bspk_sync (no declaration) exchanges its counts in this job,
 * chosen job-wide at bspk_init from BSPK_COUNT_EXCHANGE (auto: the board when
 * every process is on one host; else one direct exchange up to 16 processes
 * where every process has a CPU of its own; else rounds):
 *   BSPK_EXCHANGE_BOARD  the shared-memory count board
 *                        (bspk_sync_allgather_shared() == 1);
 *   BSPK_EXCHANGE_DIRECT one round of p - 1 messages per process;
 *   BSPK_EXCHANGE_ROUNDS ceil(log2 p) or more rounds of one or two messages
 *                        per process (a tree, or recursive halving): chosen
 *                        with more processes than CPUs on some host, or
 *                        p > 16, where a message costs more than a round.
 * The same on every process; 0 before bspk_init. Layers that exchange
 * their own headers follow it (bspk_coll.h "Mismatches"). Never fails. */
#define BSPK_EXCHANGE_BOARD  1
#define BSPK_EXCHANGE_DIRECT 2
#define BSPK_EXCHANGE_ROUNDS 3
BSPK_API int bspk_sync_exchange(void);

/* ---- Message passing [BSPk §6.1, Fig. 4] -------------------------------------- */

/* Send the n elements starting at local pointer p to process dest (itself
 * allowed). Zero-copy: the frames go onto the wire from where the program
 * computed them, so do not modify or free them until the next bspk_sync
 * returns (a message to itself is copied once, at the call, and counted in
 * bytes_copied). n == 0 sends an empty message. The message is received by dest in
 * the next superstep. Cost O(F) local work, F = frames spanned.
 * Errors: BSPK_ERR_PID, BSPK_ERR_PTR (NULL/stale/remote p), BSPK_ERR_RANGE
 * (p + n past the end of the region), BSPK_ERR_STATE. */
BSPK_API int bspk_send(int dest, bspk_ptr p, size_t n);

/* bspk_send with a user tag (beyond the paper; issue 15): the message carries
 * the 64-bit tag, which the receiver reads with bspk_tag. Everything else --
 * zero copy, order, counting, cost, errors -- is bspk_send's (bspk_send is
 * bspk_send_tag with tag 0). The tag travels in the message header BSPk sends
 * anyway: tagged and untagged messages put the same bytes on the wire. */
BSPK_API int bspk_send_tag(int dest, bspk_ptr p, size_t n, uint64_t tag);

/* The tag of the received message p points into (any element of the region
 * bspk_recv or bspk_recv_contiguous returned): the tag of bspk_send_tag, 0 for
 * a message from bspk_send or bspk_send_buf and for a region this process
 * allocated. O(1). Errors (0 returned, bspk_error_string set): BSPK_ERR_PTR
 * (NULL, freed or remote p), BSPK_ERR_STATE. Use a tag of 0 for "untagged" so
 * that 0 never needs telling apart from an error. */
BSPK_API uint64_t bspk_tag(bspk_ptr p);

/* Buffered send (beyond the paper): send the nbytes bytes at src -- ordinary
 * memory: stack, malloc, anything -- as one message to process dest (itself
 * allowed). The bytes are copied into comem frames during the call (one
 * copy, counted in bytes_copied, and a second one to itself, as for any
 * message to itself; up to 4 KiB that fit one frame go into one small buffer), so src may be changed or freed as soon as the call returns;
 * the message then travels from those frames like a bspk_send, and they
 * return to the pool when its sends complete. The receiver gets it from bspk_recv like any
 * message, in the same order (sender pid, then send order, bspk_send and
 * bspk_send_buf messages alike): a region of nbytes elements of 1 byte
 * (bspk_elem_size 1, bspk_nelems nbytes) whose bspk_sender_id is this pid,
 * received in the next superstep. nbytes == 0 sends an empty message (src may
 * then be NULL). Counted as one message at dest (bspk_expect, bspk_will_send,
 * counted mode) and in msgs_sent / bytes_sent. Cost: O(nbytes) to copy plus
 * bspk_send's O(F), F = ceil(nbytes / frame size) frames.
 * Errors: BSPK_ERR_PID (dest outside [0, bspk_nprocs())), BSPK_ERR_ARG (src
 * NULL with nbytes > 0), BSPK_ERR_NOMEM (no frames for the copy),
 * BSPK_ERR_STATE; nothing is sent then. */
BSPK_API int bspk_send_buf(int dest, const void *src, size_t nbytes);

/* Next message sent to this process in the previous superstep, as a fresh local
 * region (made of the very frames the message arrived in: no copy). Messages
 * are returned in order of sender pid, then in the order each sender sent them.
 * Returns BSPK_NULL when none are left (not an error: bspk_error_string is not
 * changed). The region is the caller's: free it with bspk_free. O(1). */
BSPK_API bspk_ptr bspk_recv(void);

/* Pid of the process that sent the message region p points into; for a region
 * allocated by bspk_malloc, its owner; for a bspk_lookup pointer, what
 * bspk_owner gives (-1 until its pair is resolved). Errors: BSPK_ERR_PTR for
 * BSPK_NULL. */
BSPK_API int bspk_sender_id(bspk_ptr p);

/* ---- Distributed shared memory [BSPk §3, §6.2, Figs. 5-6] -------------------
 * Named regions (bspk_malloc with a name) can be read and written by every
 * process with bspk_copy, and written from ordinary memory with bspk_put (a
 * copy from frames filled at the call). Copies, like messages, take effect at
 * the superstep boundary; the rules below are the contract, each one tested.
 *  1. A copy issued in superstep s takes effect at the boundary s -> s+1 of the
 *     process owning its destination: the owner sees the data from its
 *     superstep s+1 on, never earlier, even while it still reads the region in s.
 *  2. A fetch issued in s returns the source region as its owner leaves s:
 *     including every store into it issued in s (by any process) and the
 *     owner's own writes in s [BSPk §3: fetches logically follow stores]; not
 *     the results of other fetches into it in s. The fetcher sees the data
 *     from its superstep s+1 on. Copies between two regions of one process are
 *     applied after the stores from other processes, in the order issued.
 *  3. Zero copy: the source of a store (and of a local copy) is read after the
 *     call returns, straight from its frames: do not change or free it until
 *     the next bspk_sync returns (like BSPlib's bsp_hpput). bspk_put copies
 *     its source at the call instead (like BSPlib's bsp_put).
 *  4. Stores from different processes into the same elements in one superstep
 *     leave one of the stored values in each element (never a mix within an
 *     element); of one process's own overlapping copies, the last issued wins.
 *     BSPK_CHECK=1 reports such conflicts: bspk_sync returns BSPK_ERR_CONFLICT
 *     naming both processes and the superstep.
 *  5. Counting: every bspk_copy and bspk_put of n > 0 elements that the call
 *     accepts counts as exactly one message at its target, next to the MP
 *     messages sent there: the target is the owner of dst for a store, the
 *     owner of src for a fetch, and the issuing process itself for a local
 *     copy (both regions its own: counted like a bspk_send to itself). So
 *     bspk_expect(m) on process t counts every copy issued in the superstep
 *     whose target is t, whoever issued it (t itself included);
 *     bspk_will_send's v[j] and the counted mode count the same copies on the
 *     issuing side (a local copy in the issuer's own entry v[pid]). Fetch
 *     replies are not counted (the runtime tracks them), nor are copies with
 *     n == 0 or copies that returned an error.
 *  6. Under skew (processes supersteps apart) a copy that arrives before its
 *     target reached the superstep it belongs to is held in its own frames,
 *     not applied early and not lost [RBS §5].
 * Zero copy: a store or fetch reply travels frame by frame; a fragment that
 * covers a whole destination frame replaces that frame in the destination's
 * index array at the boundary (frame flip: no copy); partial frames are merged
 * with a copy (counted in bytes_copied). */

/* Pointer to the region registered under (name, idx) on whatever process owns
 * it. If this process owns it or has resolved the pair before, the pointer is
 * exact at once. Otherwise the pair's home process is asked and a provisional
 * pointer is returned: usable in bspk_copy (and bspk_incr) at once, resolved by
 * the end of the superstep -- the pair may be registered in this very superstep
 * [BSPk §6.2]. A pair still unknown at the end of the superstep in which a copy
 * uses it makes that bspk_sync return BSPK_ERR_NAME naming the pair (the copy
 * is dropped). Lookups are not counted by bspk_expect. A provisional pointer
 * means the same on every process [BSPk §4]: written into a region, sent, and
 * used by another process in a later superstep, it names the pair it was made
 * for (that process asks this one what it resolved to, within its superstep:
 * one more round trip on first use); one this process never made (corrupt,
 * from another job) makes the copy fail with BSPK_ERR_PTR at that sync. Until
 * a process has used a provisional pointer it got from elsewhere in a copy,
 * the accessors there give -1 / 0 as for an unresolved one. Pairs are cached: after a named region
 * is freed and registered again, look it up on a process that has not used it,
 * or use the new region's pointer. Cost: O(1) local; one round trip to the home
 * within the superstep (two rounds of p control messages if the pair is not yet
 * registered). Errors (BSPK_NULL returned): BSPK_ERR_ARG (NULL, empty or
 * over-long name), BSPK_ERR_STATE. */
BSPK_API bspk_ptr bspk_lookup(const char *name, int idx);

/* Copy n elements from src to dst (element positions given by the pointers),
 * taking effect at the next superstep boundary (rules 1-6 above). A remote dst
 * is a store, a remote src a fetch, both local a local copy (applied at the
 * boundary too; the runtime copies those bytes, counted in bytes_copied).
 * Zero-copy store: do not change or free the source until the next bspk_sync
 * returns (rule 3). Counted as one message at its target (rule 5: dst's owner
 * for a store, src's owner for a fetch, this process for a local copy).
 * n == 0 does nothing (and is not counted). Cost: O(F) local
 * work, F = frames spanned; a store sends F fragments, a fetch one request.
 * Errors: BSPK_ERR_PTR (NULL or freed local region, pid out of range),
 * BSPK_ERR_ARG (both regions remote, element sizes differ), BSPK_ERR_RANGE
 * (either range runs past its region's end); nothing is written. Errors found
 * only at the target (a remote region freed or too short, a stale pointer)
 * are applied at the target's boundary and reported by the first bspk_sync of
 * the issuer that ends after the refusal arrived: usually the next one or the
 * one after it; when the issuer's syncs never wait, within 16 supersteps of
 * the refusal's arrival (it then polls for such messages every 16th: a
 * process that runs through many empty declared supersteps during the
 * refusal's round trip may get it only from bspk_finalize); for a copy of the final
 * superstep, by bspk_finalize, which waits for them. With a provisional bspk_lookup pointer the checks run
 * at the sync, whose return value reports them; so do those of every later
 * bspk_copy and bspk_put of this process in the superstep, which are issued
 * after it, in call order (rule 4: its last overlapping copy wins). */
BSPK_API int bspk_copy(bspk_ptr dst, bspk_ptr src, size_t n);

/* Buffered store (beyond the paper; BSPlib's bsp_put): store the nbytes bytes
 * at src -- ordinary memory: stack, malloc, anything -- into the region dst
 * points into, from dst's element on: nbytes / bspk_elem_size(dst) elements.
 * The bytes are copied into comem frames during the call (one copy, counted
 * in bytes_copied; up to 4 KiB that fit one frame go into one small buffer),
 * so src may be changed or freed as soon as the call returns (unlike
 * bspk_copy's rule 3).
 * Otherwise exactly bspk_copy(dst, <those frames>, nbytes / elem_size): a
 * remote dst is a store, a local one a local copy; it takes effect at the
 * superstep boundary by rules 1, 2, 4 and 6 (the owner sees the data from its
 * next superstep on, never earlier) and counts as one copy at its target by
 * rule 5 (dst's owner; this process for a local dst) when nbytes > 0. The
 * frames are laid out like dst's, so whole destination frames are flipped in
 * at the boundary, remote or local (copied instead into a contiguous region,
 * see bspk_malloc_contiguous), and the rest is copied there as with
 * bspk_copy; they return to the pool when the store's sends complete, or
 * after the boundary for a local dst. nbytes == 0 does nothing (not counted)
 * beyond the checks of dst below. A provisional bspk_lookup pointer works as
 * with bspk_copy: its element size is known only at the sync, which then
 * makes the checks (and reports their errors) and issues the store; the
 * bytes were copied at the call as bytes, and are laid out again there (a
 * second copy, in bytes_copied) only when the region's element size does not
 * divide the frame size. Cost: O(nbytes) to copy plus bspk_copy's O(F).
 * Errors: BSPK_ERR_PTR (dst NULL, a freed local region, pid out of range),
 * BSPK_ERR_ARG (src NULL with nbytes > 0, nbytes not a multiple of dst's
 * element size), BSPK_ERR_RANGE (the elements run past the end of dst's
 * region: checked at the call when the region's size is known here -- local,
 * or from the pointer of a remote one -- else by the target, as for
 * bspk_copy), BSPK_ERR_NOMEM, BSPK_ERR_STATE; nothing is written then. */
BSPK_API int bspk_put(bspk_ptr dst, const void *src, size_t nbytes);

/* Move (beyond the paper): n elements of the local region src points into,
 * from src's element on, into the local region dst points into, from dst's
 * element on, AT ONCE (not at the boundary: this is local work, like writing
 * through bspk_elemP), and free src's region as bspk_free does. Meant for a
 * received message whose data belongs in a long-lived region (a broadcast
 * into a named array, the blocks of an all-to-all): where a run of elements
 * fills a whole frame of dst (or dst's last, partly used frame) and starts a
 * frame of src, the two frames change hands (frame flip, as for stores: no
 * copy, counted in frames_flipped); everything else is copied (bytes_copied).
 * So a message sent from element 0 of a region, moved to element 0 of a
 * region of the same element size, moves without a copy. Never flipped:
 * contiguous regions (bspk_malloc_contiguous, bspk_recv_contiguous), messages
 * of at most 4 KiB (small buffers), and regions with sends in flight (a
 * message being forwarded with bspk_send, a region sent from in this
 * superstep): those are copied. Addresses from bspk_elemP / bspk_span into
 * dst's moved range are invalid after the call; src and every pointer into
 * it are dead. Not a communication: not counted by bspk_expect, no effect on
 * other processes; a bspk_copy or store into dst in this superstep still
 * lands at the boundary, after the move. Cost: O(F) for F frames spanned,
 * plus the bytes copied. Errors: BSPK_ERR_PTR (NULL, freed or remote region;
 * a bspk_lookup pointer not resolved yet),
 * BSPK_ERR_ARG (src and dst in the same region, element sizes differ),
 * BSPK_ERR_RANGE (either range runs past its region's end); nothing is moved
 * or freed then. */
BSPK_API int bspk_move(bspk_ptr dst, bspk_ptr src, size_t n);

/* ---- Program memory: one-sided reads (beyond the paper) ----------------------
 * For layers above whose data live in ordinary program memory rather than in
 * comem (BSPlib's bsp_hpput and bsp_hpget, see bsp.h): a block of program
 * memory is registered with the fabric (as comem's frame slabs are, by the
 * same code path), and a peer reads it with one fabric read straight into
 * its own registered memory: the runtime copies no byte (bytes_copied
 * unchanged; the data move by the provider: a cross-memory copy by the kernel
 * on shm, the peer's provider on tcp, the NIC on verbs). Reads are not
 * messages: bspk_expect, bspk_will_send and the count exchange do not count
 * them, bspk_sync does not wait for them, and bspk_mem_wait is their only
 * completion point; the layer above orders them against its supersteps
 * (BSPlib: between the two BSPk supersteps of a bsp_sync). Not
 * [RBS]-protected by superstep numbers: the owner must keep the source
 * unchanged and registered until the reader says it is done. */

/* What a peer needs to read a registration: pass it along in a message. */
typedef struct bspk_memkey {
    uint64_t addr;  /* the block's address on its owner (the runtime turns it into
                     * the provider's addressing: address or offset)           */
    uint64_t key;   /* the fabric's key for it (fi_mr_key)                     */
    uint64_t len;   /* bytes registered                                        */
} bspk_memkey;

/* A registration on this process: id is the runtime's handle (0: none),
 * remote what a peer needs to read it. */
typedef struct bspk_memreg {
    uint64_t id;
    bspk_memkey remote;
} bspk_memreg;

/* Register nbytes (> 0) of program memory at addr for reads by peers and as
 * the destination of this process's reads; fills *out. The memory must stay
 * allocated until bspk_mem_deregister (or bspk_finalize, which releases what
 * is left). Cost: one fi_mr_reg (on verbs it pins the pages: O(nbytes)).
 * Errors, all [call] (nothing registered): BSPK_ERR_ARG (addr or out NULL,
 * nbytes 0), BSPK_ERR_FABRIC (the provider refused: e.g. read-only memory on
 * verbs), BSPK_ERR_STATE. */
BSPK_API int bspk_mem_register(const void *addr, size_t nbytes, bspk_memreg *out);

/* Release a registration (out->id becomes 0). No read of it or into it may
 * be in flight. Errors: BSPK_ERR_ARG (NULL, unknown or released id),
 * BSPK_ERR_STATE. */
BSPK_API int bspk_mem_deregister(bspk_memreg *reg);

/* Start a read of nbytes at byte offset of pid src's registration `from`
 * into dst, which must lie inside this process's registration `into`. The
 * bytes are read at some time before bspk_mem_wait returns: the source must
 * not change, and dst must not be used, until then. src may be this process
 * (then one memcpy, counted in bytes_copied). nbytes 0: nothing. O(1) per
 * 4 MiB. Errors: BSPK_ERR_PID (src outside [0, bspk_nprocs())),
 * BSPK_ERR_ARG (from/into NULL, offset + nbytes past from->len, dst outside
 * `into`), BSPK_ERR_FABRIC, BSPK_ERR_STATE; nothing is read then. A wrong key
 * is found by the provider: bspk_mem_wait then fails with BSPK_ERR_FABRIC. */
BSPK_API int bspk_mem_read(int src, const bspk_memkey *from, size_t offset, const bspk_memreg *into, void *dst,
                           size_t nbytes);

/* Wait (progressing the runtime) until every read this process started has
 * completed. Errors: BSPK_ERR_FABRIC (a read failed: the message names its
 * source pid), BSPK_ERR_TIMEOUT (BSPK_SYNC_TIMEOUT without progress),
 * BSPK_ERR_PEER, BSPK_ERR_STATE. */
BSPK_API int bspk_mem_wait(void);

/* For layers above that copy user data themselves (BSPlib's bsp_put copies
 * its source at the call): add nbytes to this process's bytes_copied, so the
 * counter keeps meaning every byte the runtime copied. Does nothing before
 * bspk_init. */
BSPK_API void bspk_note_copied(size_t nbytes);

/* For layers above that let other processes read this process's registered
 * memory with bspk_mem_read (BSPlib's zero-copy bsp_hpput / bsp_hpget and
 * large bsp_put): add nbytes to what this process served to such reads in
 * the current superstep. The reader's side is counted by bspk_mem_read; the
 * owner cannot see the reads, so the layer says. Both appear in the
 * per-superstep profile (BSPK_PROFILE: fetched_in at the reader, fetched_out
 * here), where bspk-predict counts them as traffic like DSM fetches. Does
 * nothing before bspk_init. */
BSPK_API void bspk_note_read_by(size_t nbytes);

/* ---- Statistics (beyond the paper) -------------------------------------------
 * Per-process counters, also printed at bspk_finalize as one line per process
 * on stdout when BSPK_STATS=1: "bspk-stats pid=0 supersteps=... msgs_sent=...
 * bytes_sent=... bytes_copied=... sync_wait_s=..." followed by the other counters.
 * bytes_copied counts user bytes the runtime itself copied (never the
 * provider's internal copies): 0 for whole-message sends and receives and for
 * stores and fetches of whole frames; partial-frame copy fragments and
 * both-local bspk_copy add their bytes, and bspk_put and bspk_send_buf add
 * their nbytes at the call. */
typedef struct bspk_stats {
    uint64_t supersteps;     /* supersteps completed                               */
    uint64_t msgs_sent;      /* messages sent with bspk_send and bspk_send_buf      */
    uint64_t bytes_sent;     /* payload bytes of those                             */
    uint64_t msgs_recv;      /* messages that arrived at this process              */
    uint64_t bytes_recv;     /* payload bytes of those                             */
    uint64_t bytes_copied;   /* user bytes copied by the runtime                   */
    uint64_t ctrl_sent;      /* runtime control messages (count exchange, flow control) */
    uint64_t flow_waits;     /* sends held back because the receiver was too far behind */
    uint64_t frames_in_use;  /* frames currently allocated                          */
    uint64_t frames_peak;    /* most frames allocated at once                       */
    uint64_t frame_size;     /* bytes per frame                                     */
    uint64_t pool_bytes;     /* bytes of registered slabs (frames and small buffers) */
    double   sync_wait_s;    /* seconds spent waiting in bspk_sync                  */
    uint64_t small_in_use;   /* 4 KiB buffers in use: a message of <= 4 KiB arrives in one */
    uint64_t small_peak;     /* most 4 KiB buffers in use at once                   */
    uint64_t copies;         /* bspk_copy and bspk_put operations issued (n > 0)    */
    uint64_t bytes_stored;   /* payload bytes of stores issued                      */
    uint64_t bytes_fetched;  /* payload bytes this process sent in fetch replies   */
    uint64_t frames_flipped; /* copy fragments that became a destination frame     */
    uint64_t step_sends;     /* messages and copies this process issued in the current
                              * superstep (bspk_send, bspk_send_buf, bspk_send_tag,
                              * bspk_copy, bspk_put); 0 right after bspk_sync returns */
    uint64_t reads;          /* one-sided reads of program memory started (bspk_mem_read,
                              * nbytes > 0; BSPlib's zero-copy bsp_hpput / bsp_hpget) */
    uint64_t bytes_read;     /* their bytes (a read from this process itself is one
                              * memcpy, also in bytes_copied)                       */
    uint64_t rx_frames;      /* frames kept posted for receiving now: 2 at first,
                              * twice as many whenever an arrival takes the last
                              * posted one, up to BSPK_RX_DEPTH (32); that many
                              * from the start when BSPK_RX_DEPTH is set         */
    uint64_t kept_bytes;     /* bytes of freed contiguous runs kept registered for
                              * the next run of their length (in pool_bytes; at
                              * most 64 MiB: bspk_malloc_contiguous)             */
} bspk_stats;

/* Fill *out with this process's counters.
 *
 * Call it as bspk_get_stats(&s) or bspk_get_stats(&s, sizeof s): both pass the
 * size of the caller's struct to bspk_get_stats_sized, so a program built
 * against this header keeps working with a later libbspk whose bspk_stats has
 * grown (it gets the fields it knows), and one built against a later header
 * gets zeros in fields this library lacks. New fields are only ever appended.
 * Errors: BSPK_ERR_ARG (NULL, size < 8), BSPK_ERR_STATE. */
BSPK_API int bspk_get_stats_sized(bspk_stats *out, size_t size);
/* The same for sizeof(bspk_stats) of this header (the symbol behind the
 * one-argument macro form, for callers that cannot use macros). */
BSPK_API int (bspk_get_stats)(bspk_stats *out);
#define BSPK_GET_STATS_PICK_(a, b, name, ...) name
#define BSPK_GET_STATS_1_(out) bspk_get_stats_sized((out), sizeof *(out))
#define bspk_get_stats(...) \
    BSPK_GET_STATS_PICK_(__VA_ARGS__, bspk_get_stats_sized, BSPK_GET_STATS_1_, unused)(__VA_ARGS__)

#ifdef __cplusplus
}
#endif
#endif /* BSPK_H */
#include "bspk_coll.h"
