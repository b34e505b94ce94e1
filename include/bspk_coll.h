/*
 * bspk_coll.h -- collective operations of BSPk, a layer over the C API of
 * bspk.h (libbspk; the code is in coll/, which uses nothing but bspk.h).
 *
 * Conventions (beyond bspk.h's, which hold here too)
 *   - Collective: every process of the job calls the same collective with
 *     matching arguments (root, n or counts, op, element size), in the same
 *     superstep. A mismatch is found within the collective and reported on
 *     the processes that see it (see "Mismatches"); it never hangs.
 *   - Data lives in comem regions: a bspk_ptr from bspk_malloc,
 *     bspk_malloc_contiguous or a received message, local to the caller, of
 *     any number of frames. n counts elements of the region's element size
 *     (es below); a pointer may be BSPK_NULL where it is not read or
 *     written (n == 0, gather's dst on non-roots).
 *   - A collective ENDS THE CALLER'S CURRENT SUPERSTEP, like bspk_sync, and
 *     takes a fixed number of supersteps (below, per call). It must be called
 *     at the start of a superstep's communication: no message sent and no
 *     copy issued by this process in the current superstep
 *     (bspk_stats.step_sends == 0) and no bspk_expect / bspk_will_send made,
 *     else BSPK_ERR_STATE [call]. Messages the caller received and did not
 *     claim are discarded by the collective's first sync (as by any
 *     bspk_sync). When it returns the caller is at the start of a fresh
 *     superstep with an empty inbox; its regions were not freed. Data land
 *     in them after the superstep that brought it, by this layer's copies
 *     (counted by nobody) or by bspk_move of the received message: whole
 *     frames that line up (a region used from element 0) change hands,
 *     no copy -- so, as after any bspk_sync (bspk.h bspk_elemP),
 *     addresses taken with bspk_elemP / bspk_span before the call are
 *     invalid after it. No bspk_copy goes into them.
 *   - Status calls return BSPK_OK or a negative BSPK_ERR_* (bspk.h "Return
 *     codes"). bspk.h offers no way for a layer to set bspk_error_string(),
 *     so the message of an error of a collective (or of bspk_op_create /
 *     bspk_op_free) is kept by bspk_coll_error_string(), in the C API's
 *     form "bspk_allreduce (pid 2, superstep 7): pid 0 passed n = 4, this
 *     process n = 5", where the superstep is the one the collective was
 *     called in. It is printed as "bspk: error: ..." on stderr unless
 *     BSPK_ERRORS=quiet (BSPK_ERRORS=abort ends the job with it). When a C
 *     API call made by the collective fails (e.g. bspk_sync: BSPK_ERR_PEER),
 *     the C API has printed its own message; bspk_coll_error_string() then
 *     holds "CALL (pid P, superstep S): bspk_sync failed: <its message>"
 *     (with "bspk_sync in superstep S2 failed" when it was a later
 *     superstep of the collective), and nothing more is printed. A
 *     BSPK_ERR_MODE there (another process ended the superstep by a
 *     bspk_sync or a superstep of its own) adds "; every process must make
 *     this collective call here, ...".
 *
 * Mismatches. The first superstep of every collective is the *header
 * superstep*, in which every process learns every other's header -- the
 * collective, root, n, op, element size, whether its own arguments were
 * valid -- whatever the arguments are:
 *   - On one host (bspk_sync_allgather_shared() == 1, bspk.h) it is one
 *     bspk_sync_allgather, the same call on every process: each passes a
 *     16-byte digest of its header (as the tag below) followed, when the
 *     collective's data from this process fit in B bytes (see Cost), by
 *     that data. Equal digests and sizes mean equal
 *     arguments; the data then already are where they must go, and the
 *     collective is that one superstep. Otherwise the algorithms below
 *     follow, one superstep later (their own header check then finds
 *     nothing new).
 *   - Elsewhere, where the runtime's own count exchange goes in rounds
 *     (bspk_sync_exchange() == BSPK_EXCHANGE_ROUNDS, bspk.h: more processes
 *     than CPUs on some host, or p > 16, where a message costs more than a
 *     round; BSPK_COLL_HEADER=rounds: any p >= 2, =direct: never, to be set
 *     alike on every process), it is the same all-gather of digests and
 *     short data as on one host, made of messages: ceil(log2 p) supersteps
 *     of ONE message per process with bspk_expect(1), process i sending to
 *     i - 2^k in round k (Bruck's concatenation), or, when p is a power of
 *     two, exchanging with i XOR 2^k (recursive doubling: pairs that wait
 *     only for each other; an 8-byte bspk_allreduce at p = 4 on 2 cores
 *     38.7 -> 27.2 us, at p = 8 133 -> 95 us). Every message also
 *     carries its sender's summary -- its digest while all the digests it
 *     has heard of equal it, else "differ" -- so that after the rounds
 *     every process knows whether all p digests equal its own, whatever
 *     each one called. A broadcast at p <= 8 or of up to B bytes (Cost)
 *     carries the root's data itself in those rounds (a binomial tree,
 *     zero copy; the summary in the data message's tag) and needs no
 *     superstep more -- except at 4 <= p <= 8 from N >= p * 256 KiB, where
 *     scatter + allgather follows rounds of digests (bspk_broadcast). The
 *     rounds' counts depend on p alone (one message in, one out, whether
 *     they carry data or digests), so the rule below holds. Measured on tcp
 *     with 2 cores (counts by messages, medians of 7 alternated runs):
 *     bspk_allreduce of 8 B 48 against 51 us (direct) at p = 4 and 178
 *     against 256 us at p = 8; bspk_broadcast of 1 MiB (all in the tree,
 *     before the split) 584 against 603 us at p = 4 and 1400 against
 *     2123 us at p = 8, of 4 KiB 43 against 82 us at p = 4; long
 *     allreduce pays the rounds (p = 4: 32 KiB 171 against 159 us, 1 MiB
 *     1621 against 1574 us).
 *   - Elsewhere every process sends exactly one message to every other
 *     process and declares bspk_expect(p - 1). Those counts do not depend
 *     on any argument, so the declaration is exact even when the arguments
 *     differ. Each message carries the sender's header:
 *   - in the message's 64-bit tag (bspk_tag: 16 bits of magic, 48 of a
 *     digest of those fields and of the algorithm chosen) when n > 0 and
 *     the sender's arguments are valid: the message is then the
 *     collective's first data message to that process (zero copy from the
 *     caller's region; an empty message where the algorithm sends nothing
 *     there), so the header costs no extra superstep and no extra bytes;
 *   - as a 64-byte header message otherwise (n == 0, invalid arguments) and
 *     always for bspk_alltoallv, whose header also carries the counts
 *     (blocks of at most S bytes ride after it).
 * Equal tags mean equal arguments. Then, on EVERY process:
 *   - a different collective, root, n, op (built-in ops by value, user ops
 *     by element size and commutativity) or element size anywhere in the
 *     job, or invalid arguments on some process, ends the collective with
 *     BSPK_ERR_ARG (the process whose own arguments were invalid gets the
 *     code of its own error, e.g. BSPK_ERR_PID, BSPK_ERR_RANGE). Every
 *     process sees it: one that saw only headers equal to its own would be
 *     equal to all, and so would all the others (equality is transitive).
 *     When a tagged message was involved, all processes then exchange their
 *     64-byte headers in one more superstep, so that the message can name
 *     the field. The message names the lowest pid whose header differs from
 *     this process's: "pid 0 passed root = 1, this process root = 2"; "pid 3
 *     called bspk_reduce, this process bspk_allreduce"; "pid 1 passed
 *     invalid arguments (its own message says which)"; processes that chose
 *     different algorithms for equal arguments (BSPK_COLL_SHORT set
 *     differently) get "the processes chose different algorithms". Nothing
 *     is written into any region (data already received is dropped). State:
 *     like bspk.h's [step]: the superstep ended on every process, the job
 *     may go on (all processes took the same number of supersteps).
 *   - bspk_alltoallv's counts are compared per pair: process j's header to
 *     i carries sendcounts[i] and recvcounts[i] of j, so both i and j see a
 *     pair whose counts disagree ("pid 0 sends 5 elements to this process,
 *     recvcounts[0] = 4 here"); those two return BSPK_ERR_ARG after the
 *     collective's two supersteps (the second one's counts are computed
 *     from the senders' headers, so they are exact), with nothing written
 *     for that pair, and the other processes' results are exact.
 * Trade-off: the header superstep makes even a short broadcast an exchange
 * among all processes (each waits for p - 1 messages, h = p - 1, most of
 * them empty for a broadcast); the alternatives -- a counted bspk_sync for
 * the first superstep (the count exchange, a barrier's L), or a tree whose
 * declared counts depend on the root (a root mismatch then waits
 * BSPK_SYNC_TIMEOUT or ends in BSPK_ERR_COUNT [over]) -- cost a barrier or
 * give up the guarantee. On one host the shared-memory board makes an
 * all-to-all exchange of headers cheaper than one message (a cache line
 * each way at p = 2), so there the header superstep is that barrier, and
 * short data ride in it. Later supersteps of the long algorithms have exact
 * bspk_expect counts computed from arguments known to agree.
 *
 * Cost. In BSP terms: g per byte, l per superstep (with bspk_expect a
 * superstep costs no barrier: l is the latency of its messages), N = n * es
 * bytes, p processes, S = the short limit, 4032 bytes by default
 * (BSPK_COLL_SHORT=bytes overrides it, for tests), H = the 64-byte header
 * message (bspk_alltoallv; n == 0). Short data (N <= S) and
 * p <= 2 take the direct algorithm (every process sends its data straight
 * to the processes that need it, in the header superstep): one superstep.
 * Long data at p >= 3 takes two (scatter / reduce-scatter, then the
 * exchange of the results); gather, allgather and alltoall always one.
 * On one host, where the header superstep is a bspk_sync_allgather: a
 * collective whose data per process fit in B bytes -- 8192 for
 * reduce/allreduce/scan/exscan; for broadcast, gather, allgather and
 * alltoall (all p blocks, p N) 2048 at p <= 2 and 4096 above, where their
 * zero-copy messages start to win; min(S, B) when BSPK_COLL_SHORT is set --
 * is that one superstep, which costs a shared-memory barrier plus p copies
 * of the data (every process passes its own, the root's included for a
 * broadcast): (p-1) N g + l with l the board's; n == 0 is one superstep too;
 * any other collective takes the supersteps counted below plus that one
 * (bspk_alltoallv: 3). In rounds (see "Mismatches") the same with
 * R = ceil(log2 p) supersteps in place of that one, and B = 16384 for the
 * reductions, 8192 for the others: R l + (p-1)(16 + N) g
 * for the short collectives (16 + p N for alltoall), and R more supersteps
 * of 16-byte digests before the long algorithms; a broadcast at p <= 8 or
 * of up to B bytes is the R rounds alone, R (l + N g) on the critical path,
 * (p-1) N g in all, but at 4 <= p <= 8 with N >= p * 256 KiB (p * S with
 * BSPK_COLL_SHORT set) it is R rounds of digests and the long algorithm. The numbers below are for the direct header superstep.
 * Every element-wise combination is made in pid order, left to right:
 * x_0 op x_1 op ... op x_{p-1} (for scans up to x_i), exactly as a
 * sequential loop, on every process alike -- so FLOAT / DOUBLE sums and
 * products are those of the sequential left-to-right loop, bit for bit,
 * and the same on every process; user ops are always applied in pid order,
 * commutative or not. Integer SUM / PROD wrap modulo 2^bits (computed in
 * unsigned arithmetic, as a loop over unsigned values).
 *
 * Not thread-safe (like bspk.h).
 */
#ifndef BSPK_COLL_H
#define BSPK_COLL_H

#include <bspk.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Operations ------------------------------------------------------------
 * An operation | an element type, e.g. BSPK_SUM | BSPK_DOUBLE: the operation
 * in the low 8 bits (1..9), the type in bits 8..15 (1..6); or a user
 * operation from bspk_op_create (a handle >= 0x10000). The region's element
 * size must be the type's size (4 or 8 bytes), else BSPK_ERR_ARG. An
 * operation without a type is BSPK_ERR_ARG ("write e.g. BSPK_SUM |
 * BSPK_DOUBLE"), and so are the bitwise operations on FLOAT and DOUBLE.
 * LAND / LOR give 1 or 0 (of the type); MIN / MAX compare with < and > (a
 * NaN is kept only when it comes first). */
typedef int bspk_op;

#define BSPK_SUM  1
#define BSPK_PROD 2
#define BSPK_MIN  3
#define BSPK_MAX  4
#define BSPK_LAND 5
#define BSPK_LOR  6
#define BSPK_BAND 7
#define BSPK_BOR  8
#define BSPK_BXOR 9

#define BSPK_INT32  (1 << 8)
#define BSPK_INT64  (2 << 8)
#define BSPK_UINT32 (3 << 8)
#define BSPK_UINT64 (4 << 8)
#define BSPK_FLOAT  (5 << 8)
#define BSPK_DOUBLE (6 << 8)

/* A user operation: acc[i] = acc[i] op next[i] for i in [0, n), where acc
 * holds the combination of lower pids' values (x_0 op ... op x_{j-1}) and
 * next pid j's. acc is ordinary memory of this layer, aligned for any
 * standard type; next points into a received frame or the caller's region,
 * aligned to the largest power of two dividing the element size (at most
 * 16), and is never written. The function must not call BSPk. */
typedef void (*bspk_combine_fn)(void *acc, const void *next, size_t n);

/* Register a user operation on elements of elem_size bytes. commutative is
 * recorded and compared between processes (this release combines in pid
 * order either way). Handles are local to the process; two processes'
 * operations match when their element sizes and commutativity do.
 * Returns a handle > 0, or BSPK_ERR_ARG (fn NULL, elem_size 0),
 * BSPK_ERR_NOMEM. Needs no runtime. O(1) (amortised). */
BSPK_API bspk_op bspk_op_create(bspk_combine_fn fn, size_t elem_size, int commutative);

/* Unregister a user operation. Errors: BSPK_ERR_ARG (not a live handle). */
BSPK_API int bspk_op_free(bspk_op op);

/* The message of the last error of a collective, bspk_op_create or
 * bspk_op_free on this process ("" if none); see Conventions. */
BSPK_API const char *bspk_coll_error_string(void);

/* ---- Collectives -------------------------------------------------------------
 * Errors of every collective: BSPK_ERR_STATE [call] (no runtime, messages or
 * copies already issued in this superstep, a declaration already made; the
 * call has no effect, and the other processes wait for this one's header:
 * their sync times out unless the program ends the job); the argument errors
 * below (BSPK_ERR_ARG, BSPK_ERR_PID, BSPK_ERR_PTR: NULL, freed or remote
 * pointer; BSPK_ERR_RANGE: n past the region's end), which this process
 * still announces in its header, so every process returns after the header
 * superstep; mismatches (BSPK_ERR_ARG, see Mismatches); those of bspk_sync
 * ([over]: BSPK_ERR_PEER, _TIMEOUT, _FABRIC, _COUNT, _MODE; [step] errors
 * of earlier copies reported by one of the collective's syncs, BSPK_ERR_PTR,
 * _RANGE, _NAME, _CONFLICT, are returned after the collective completed
 * normally) and BSPK_ERR_NOMEM. */

/* Root's ptr[0..n) into every process's ptr[0..n).
 * Short (N <= S) or p <= 2, and on one host (the board; not in rounds) up
 *   to 4 MiB (S with BSPK_COLL_SHORT set): 1 superstep: the root sends ptr
 *   to each process (zero copy): (p - 1) N g + l at the root; on one host
 *   the receivers pull the root's frames themselves, in parallel, so N g +
 *   l (shm, 2 cores, against scatter + allgather, us: p = 4, 32 KiB 13.7 ->
 *   7.5, 1 MiB 145-151 -> 108-112, 4 MiB 581 -> 491, 16 MiB 2537 -> 4041;
 *   p = 8, 256 KiB 136-141 -> 66-82, 1 MiB 308-323 -> 256-273).
 * Long, p >= 3: 2 supersteps, scatter + allgather: the root sends block j
 *   (n/p elements, the first n % p blocks one more) to process j; then
 *   each process sends its block to every process but the root:
 *   2 (p-1)/p N g + 2 l.
 * In rounds (Mismatches) at p <= 8 the data ride in the header rounds
 *   instead (a binomial tree: R (N g + l) on the critical path, the root
 *   sending R N), unless 4 <= p <= 8 and N >= p * 256 KiB (blocks of at
 *   least a tcp frame; p * S with BSPK_COLL_SHORT set): then R rounds of
 *   digests, then scatter + allgather, in which the root sends
 *   2 (p-1)/p N instead of R N and each other process (p-2)/p N. Measured on tcp, counts by messages, 2 cores
 *   (bench/collectives, us, tree -> split): p = 4, 256 KiB 68-72 -> 142-157,
 *   1 MiB 409-508 -> 339-360, 2 MiB 1065-1167 -> 736-846, 16 MiB
 *   12150-12582 -> 9743-11170; p = 8, 1 MiB 1236-1387 -> 1367-1602, 2 MiB
 *   2889-3150 -> 2191-3058; p = 3 kept the tree (2 MiB 572-610 -> 694-989). */
BSPK_API int bspk_broadcast(int root, bspk_ptr ptr, size_t n);

/* Element-wise x_0 op x_1 op ... op x_{p-1} (x_j: pid j's ptr[0..n)) into
 * the root's ptr; the other processes' ptr are unchanged.
 * Short or p <= 2: 1 superstep: each process sends ptr to the root, which
 *   combines in pid order: (p-1) N g + l at the root.
 * Long, p >= 3: 2 supersteps, reduce-scatter + gather: block j of every
 *   ptr goes to process j, which combines it in pid order, then sends it
 *   to the root: 2 (p-1)/p N g + 2 l. */
BSPK_API int bspk_reduce(int root, bspk_ptr ptr, size_t n, bspk_op op);

/* Element-wise x_0 op ... op x_{p-1} into every process's ptr (the same
 * bits everywhere: combined in pid order by each process, or by the owner
 * of each block).
 * Short or p <= 2: 1 superstep, every process's data to every process:
 *   (p-1) N g + l.
 * Long, p >= 3: 2 supersteps, reduce-scatter + allgather:
 *   2 (p-1)/p N g + 2 l. */
BSPK_API int bspk_allreduce(bspk_ptr ptr, size_t n, bspk_op op);

/* Inclusive scan: pid i's ptr becomes x_0 op ... op x_i.
 * Short or p <= 2: 1 superstep: each process's data to every higher pid:
 *   at most (p-1) N g + l.
 * Long, p >= 3: 2 supersteps: block j of every ptr to process j, which
 *   computes the p prefixes of block j and sends prefix i to process i:
 *   2 (p-1)/p N g + 2 l (the owner of block j keeps the
 *   p prefixes of block j in a region of this layer: about N extra bytes). */
BSPK_API int bspk_scan(bspk_ptr ptr, size_t n, bspk_op op);

/* Exclusive scan: pid i's ptr becomes x_0 op ... op x_{i-1} (i >= 1); pid
 * 0's ptr is unchanged. Algorithms and cost as bspk_scan. */
BSPK_API int bspk_exscan(bspk_ptr ptr, size_t n, bspk_op op);

/* The root's dst[j*n .. j*n+n) = pid j's src[0..n) (dst: p*n elements at
 * the root; ignored elsewhere, may be BSPK_NULL). src and dst must not
 * overlap. 1 superstep: every src to the root (zero copy): (p-1) N g + l
 * at the root. */
BSPK_API int bspk_gather(int root, bspk_ptr dst, bspk_ptr src, size_t n);

/* Every process's dst[j*n ..) = pid j's src[0..n) (dst: p*n elements).
 * 1 superstep: src to every process (zero copy): (p-1) N g + l. */
BSPK_API int bspk_allgather(bspk_ptr dst, bspk_ptr src, size_t n);

/* Block j of src (src[j*n .. j*n+n)) goes to pid j's dst block me
 * (dst[me*n ..)); src and dst: p*n elements each, not overlapping.
 * 1 superstep: block j to pid j (zero copy): (p-1) N g + l (N per
 * block). */
BSPK_API int bspk_alltoall(bspk_ptr dst, bspk_ptr src, size_t n);

/* sendcounts[j] elements from src[sdispls[j]..] go to pid j, which stores
 * them at its dst[rdispls[me]..]; recvcounts[j] is what this process gets
 * from pid j (it must equal pid j's sendcounts[me]). Counts and
 * displacements in elements, one per pid (arrays of p entries, ordinary
 * memory). Always 2 supersteps: the header superstep (blocks of at most S
 * bytes ride in it) and one for the longer blocks (zero copy; its
 * bspk_expect counts come from the senders' headers):
 * (p-1) H g + max(sent, received short bytes) g + l + max(sent, received long bytes) g + l. */
BSPK_API int bspk_alltoallv(bspk_ptr dst, const size_t *recvcounts, const size_t *rdispls,
                            bspk_ptr src, const size_t *sendcounts, const size_t *sdispls);

#ifdef __cplusplus
}
#endif
#endif /* BSPK_COLL_H */
