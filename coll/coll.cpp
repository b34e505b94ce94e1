// coll/coll.cpp -- the collectives of bspk_coll.h over the C API of bspk.h.
//
// Every collective starts with the header superstep (bspk_coll.h
// "Mismatches"): one message from every process to every other one and
// bspk_expect(p - 1). With n > 0 and valid arguments the message is the
// algorithm's first data message to that process (empty where none goes),
// the header a digest in its tag (Ctx::tagged_step); otherwise, and always
// for bspk_alltoallv, a 64-byte header plus any short data
// (Ctx::header_step). After it every process knows whether all arguments
// agree -- if not, all return the mismatch alike -- and the long
// algorithms' later supersteps have exact bspk_expect counts computed from
// arguments known to agree (bspk_alltoallv: from the senders' headers).
#include <bspk.h>
#include <bspk_coll.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/copy.h"
#include "coll/ops.h"
#include "coll/report.h"

namespace bspk_coll {
namespace {

enum Kind : uint8_t { BCAST = 1, REDUCE, ALLREDUCE, SCAN, EXSCAN, GATHER, ALLGATHER, ALLTOALL, ALLTOALLV, KIND_END };
const char* const kCall[] = {"?",           "bspk_broadcast", "bspk_reduce",   "bspk_allreduce", "bspk_scan",
                             "bspk_exscan", "bspk_gather",    "bspk_allgather", "bspk_alltoall", "bspk_alltoallv"};
bool has_root(int k) { return k == BCAST || k == REDUCE || k == GATHER; }
bool has_op(int k) { return k == REDUCE || k == ALLREDUCE || k == SCAN || k == EXSCAN; }

constexpr uint32_t kMagic = 0x436b7362;  // "bskC"
constexpr size_t kHdr = 64;
struct Hdr {
  uint32_t magic;
  uint8_t kind;
  uint8_t bad;  // this process's own arguments were invalid
  uint8_t pad0[2];
  int32_t root;
  int32_t sender;
  uint32_t op;       // op_signature (0: none)
  uint32_t es;       // element size (0: unknown, n == 0)
  uint32_t payload;  // bytes of data after the header
  uint32_t pad1;
  uint64_t n;     // n (bspk_alltoallv: 0)
  uint64_t cnt;   // bspk_alltoallv: sendcounts[receiver]
  uint64_t rcnt;  // bspk_alltoallv: recvcounts[receiver]
  uint64_t pad2;
};
static_assert(sizeof(Hdr) == kHdr, "header layout");

// A header carried in a message's 64-bit tag (Ctx::tagged_step): 16 bits of
// magic and 48 bits of a hash of the fields every process must agree on
// (the sender and the payload size left out). Collectives own their
// supersteps, so no user tag can be in the same inbox.
constexpr uint64_t kTagMagic = 0xB5C1ull << 48;
uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 29);
}
// A header's digest from the fields every process must agree on (Ctx::own_tag).
uint64_t header_tag(uint8_t kind, uint8_t bad, int32_t root, uint32_t op, uint32_t es, uint64_t n, uint32_t algo) {
  // Three words, each through its own odd multiplier (a bijection), then one
  // mix: headers that differ in one field differ before the mix, so their
  // tags collide with probability 2^-48.
  const uint64_t a =
      uint64_t{kind} | uint64_t{bad} << 8 | uint64_t{algo} << 16 | uint64_t{static_cast<uint32_t>(root)} << 32;
  const uint64_t b = uint64_t{op} | uint64_t{es} << 32;
  const uint64_t x = mix(0, a * 0x9E3779B97F4A7C15ull ^ b * 0xC2B2AE3D27D4EB4Full ^ n * 0x165667B19E3779F9ull);
  return kTagMagic | (x & 0xFFFFFFFFFFFFull);
}
bool is_header_tag(uint64_t t) { return (t & (0xFFFFull << 48)) == kTagMagic; }
bool same_ptr(const bspk_ptr& a, const bspk_ptr& b) {
  return a.region == b.region && a.gen == b.gen && a.owner == b.owner && a.offset == b.offset;
}
// board_step's digest: the tag, padded so that the data after it keeps a
// 16-byte alignment.
constexpr size_t kDigest = 16;

// S: the short limit of the message algorithms (bspk_coll.h "Cost"), and
// whether BSPK_COLL_SHORT set it.
struct ShortLimit {
  size_t bytes = 4096 - kHdr;
  bool set = false;
};
const ShortLimit& short_setting() {
  static const ShortLimit s = [] {
    ShortLimit l;
    const char* e = std::getenv("BSPK_COLL_SHORT");
    if (e && *e) {
      char* end = nullptr;
      unsigned long long v = std::strtoull(e, &end, 10);
      if (end && *end == '\0' && e[0] != '-')
        l = {static_cast<size_t>(v), true};
      else if (bspk_pid() <= 0)  // (said once: by pid 0, or before bspk_init)
        std::fprintf(stderr, "bspk: warning: BSPK_COLL_SHORT='%s' is not a number of bytes; it is ignored\n", e);
    }
    return l;
  }();
  return s;
}
size_t short_limit() { return short_setting().bytes; }

// Whether a job without the shared board (bspk_sync_allgather_shared() == 0:
// across hosts, or BSPK_COUNT_EXCHANGE set) takes the header superstep as
// rounds (Ctx::gather_rounds, broadcast_rounds) rather than one direct
// exchange (Ctx::tagged_step): BSPK_COLL_HEADER = auto (as the runtime's own
// count exchange: bspk_sync_exchange() == BSPK_EXCHANGE_ROUNDS, i.e. more
// processes than CPUs on some host, or p > 16), direct (never), rounds (at
// p >= 2). It must be set alike on every process: the two take different
// message counts. Measured (bench/collectives.sh, tcp, counts by messages, 4
// and 8 processes on 2 cores): an 8-byte bspk_allreduce in rounds costs 2
// and 3 messages per process instead of 3 and 7; see bspk_coll.h "Cost".
bool header_rounds(int p) {
  static const int mode = [] {
    const char* e = std::getenv("BSPK_COLL_HEADER");
    if (e && std::strcmp(e, "direct") == 0) return 0;
    if (e && std::strcmp(e, "rounds") == 0) return 2;
    if (e && *e && std::strcmp(e, "auto") != 0 && bspk_pid() <= 0)
      std::fprintf(stderr, "bspk: warning: BSPK_COLL_HEADER='%s' is none of auto, direct, rounds; auto is used\n", e);
    return 1;
  }();
  if (mode == 1) return p >= 2 && bspk_sync_exchange() == BSPK_EXCHANGE_ROUNDS;
  return mode == 2 && p >= 2;
}

// ---- walking comem ranges byte by byte ----------------------------------------

// The bytes of n elements from p, in the contiguous runs bspk_span gives.
struct Cur {
  bspk_ptr p{};
  size_t es = 1, left = 0;
  char* b = nullptr;
  size_t avail = 0;
  bool bad = false;
  Cur() = default;
  Cur(const bspk_ptr& q, size_t n) : p(q), left(n) {
    if (n) es = bspk_elem_size(q);
  }
  size_t get(size_t max, char** out) {
    if (avail == 0) {
      if (left == 0) return 0;
      void* v = nullptr;
      size_t k = bspk_span(p, &v);
      if (k == 0) {
        bad = true;
        left = 0;
        return 0;
      }
      if (k > left) k = left;
      b = static_cast<char*>(v);
      avail = k * es;
      left -= k;
      if (left) {
        p = bspk_incr(p, static_cast<ptrdiff_t>(k));
        if (p.region == 0) {
          bad = true;
          left = 0;
        }
      }
    }
    const size_t t = std::min(avail, max);
    *out = b;
    b += t;
    avail -= t;
    return t;
  }
};

bool to_mem(Cur& s, void* dst, size_t bytes) {
  char* d = static_cast<char*>(dst);
  while (bytes) {
    char* x;
    const size_t t = s.get(bytes, &x);
    if (!t) return false;
    bspk::copy_bytes(d, x, t);
    d += t;
    bytes -= t;
  }
  return true;
}
bool from_mem(Cur& d, const void* src, size_t bytes) {
  const char* s = static_cast<const char*>(src);
  while (bytes) {
    char* x;
    const size_t t = d.get(bytes, &x);
    if (!t) return false;
    bspk::copy_bytes(x, s, t);
    s += t;
    bytes -= t;
  }
  return true;
}
bool cm_copy(Cur& d, Cur& s, size_t bytes) {
  while (bytes) {
    char* x;
    const size_t c = d.get(bytes, &x);
    if (!c) return false;
    if (!to_mem(s, x, c)) return false;
    bytes -= c;
  }
  return true;
}

// The largest power of two dividing es, at most 16.
size_t align_for(size_t es) {
  const size_t a = es & (~es + 1);  // lowest set bit (0 for es = 0)
  return a == 0 || a > 16 ? 16 : a;
}

// acc[0..n) = acc op s[0..n).
bool combine(const Op& op, unsigned char* acc, Cur& s, size_t n) {
  const size_t es = op.es, al = align_for(es);
  while (n) {
    char* x;
    const size_t t = s.get(n * es, &x);
    if (!t) return false;
    if (t % es == 0 && reinterpret_cast<uintptr_t>(x) % al == 0) {
      op.apply(acc, x, t / es);
      acc += t;
      n -= t / es;
    } else {  // a run that splits an element or is misaligned: the rest through memory
      std::vector<unsigned char> tmp(n * es);
      bspk::copy_bytes(tmp.data(), x, t);
      if (!to_mem(s, tmp.data() + t, n * es - t)) return false;
      op.apply(acc, tmp.data(), n);
      return true;
    }
  }
  return true;
}

bspk_ptr at(const bspk_ptr& p, size_t k) {
  if (k == 0 || p.region == 0) return p;
  return bspk_incr(p, static_cast<ptrdiff_t>(k));
}

size_t boff(size_t n, int p, int k) {
  const size_t q = n / static_cast<size_t>(p), r = n % static_cast<size_t>(p);
  return static_cast<size_t>(k) * q + std::min(static_cast<size_t>(k), r);
}
size_t blen(size_t n, int p, int k) {
  return n / static_cast<size_t>(p) + (static_cast<size_t>(k) < n % static_cast<size_t>(p) ? 1 : 0);
}

// The k-th destination (k = 1 .. p-1) of a process's sends to every other
// process: me + k (mod p), so that the p processes start on p different
// receivers instead of all on pid 0 (as MPI's linear and pairwise alltoall
// do; where every receiver has its own link, incast at pid 0 would
// serialize the first sends). On this 2-core VM it measured neutral
// (bspk_alltoall / allreduce of 32 KiB - 2 MiB, tcp and shm, p = 4, three
// alternations: within the run-to-run spread).
int kth_peer(int me, int p, int k) { return (me + k) % p; }

// ---- one collective call ------------------------------------------------------

struct Msgs {
  std::vector<bspk_ptr> v;
  explicit Msgs(int p = 0) : v(static_cast<size_t>(p), bspk_ptr()) {}
  Msgs(const Msgs&) = delete;
  Msgs& operator=(const Msgs&) = delete;
  ~Msgs() { clear(); }
  void clear() {
    for (bspk_ptr& m : v)
      if (m.region != 0) {
        (void)bspk_free(m);
        m = bspk_ptr();
      }
  }
  bspk_ptr& operator[](int j) { return v[static_cast<size_t>(j)]; }
};

// A comem region of this layer (a staging area for sends), freed at scope end.
struct Stage {
  bspk_ptr p{};
  Stage() = default;
  Stage(const Stage&) = delete;
  Stage& operator=(const Stage&) = delete;
  ~Stage() {
    if (p.region != 0) (void)bspk_free(p);
  }
};

// Storage that every call needs and that keeps its capacity from one call to
// the next (collectives do not nest): a short allreduce then allocates
// nothing here.
struct Scratch {
  std::vector<Hdr> hdr;  // Ctx::hdr, Ctx::hmsg (sized by headers_init)
  Msgs hmsg;
  std::vector<unsigned char> buf;  // header_step's message
  std::vector<unsigned char> block, all;  // board_step's block and everyone's
  std::vector<size_t> sizes;
  std::vector<unsigned char> wire;  // gather_rounds' blocks
  std::vector<size_t> wire_at;
};
// At namespace scope, not a function-local static: no initialisation guard
// to test on each of a call's several uses (constant-initialised vectors).
// Not thread-safe, as bspk.h: no thread_local lookup per call.
Scratch g_scratch;
inline Scratch& scratch() { return g_scratch; }
// The last built-in op resolved (their meaning never changes; Ctx::set_op).
struct ResolvedOp {
  bspk_op code = 0;
  Op op;
};
ResolvedOp g_builtin;

// The agreement of the header rounds (Ctx::gather_rounds, broadcast_rounds):
// every round's message carries its sender's summary -- the sender's digest
// (header_tag) while every digest it has heard of equals its own, kDiffer
// after a difference -- in its tag (a data message) or in its first 8 bytes
// (a bspk_send_buf message, tag 0). A receiver whose digest differs from the
// summary it gets turns its own to kDiffer. In the dissemination pattern
// (round k: from i + 2^k) process i has heard, after round k, of i .. i +
// 2^(k+1) - 1, and paired (p a power of two, round k: from i XOR 2^k) of
// the 2^(k+1) processes that agree with i above bit k, so after
// ceil(log2 p) rounds every process knows whether all p digests equal its
// own, and all of them know alike.
// The header rounds' partners in round d = 2^k: paired (recursive doubling,
// p a power of two: i exchanges with i XOR d) or Bruck's ring (i sends to
// i - d and hears from i + d).
bool rounds_paired(int p) { return (p & (p - 1)) == 0; }
int round_dest(int me, int p, int d) { return rounds_paired(p) ? me ^ d : (me - d + p) % p; }
int round_src(int me, int p, int d) { return rounds_paired(p) ? me ^ d : (me + d) % p; }

struct Rounds {
  static constexpr uint64_t kDiffer = 0xB5C2ull << 48;
  uint64_t own, summary;
  explicit Rounds(uint64_t tag) : own(tag), summary(tag) {}
  bool differ() const { return summary != own; }
  // A round's one message, from pid `from` (BSPK_NULL if none came: a
  // difference): its summary taken in; returned for the caller to read and
  // free. A second message, or one from another process, is a difference.
  bspk_ptr take(int from);
};
// A round message of gather_rounds: the summary and the first block's length
// before the block.
constexpr size_t kRoundHead = 16;

struct Ctx {
  Kind kind;
  const char* call;
  int me = -1, p = 0;
  int64_t step0 = 0;
  int root = -1;
  size_t n = 0;
  bspk_op opcode = 0;
  Op op;
  uint32_t opsig = 0;
  size_t es = 0;
  int own_code = 0;
  std::string own_msg;
  int late_code = 0;
  std::string late_msg;
  std::vector<Hdr>& hdr;  // the header superstep's headers and their messages, per pid (headers_init)
  Msgs& hmsg;
  const size_t* sendcounts = nullptr;  // bspk_alltoallv
  const size_t* recvcounts = nullptr;
  bspk_ptr checked{};          // check_ptr's first valid pointer, its first run (bspk_span) in this superstep
  void* checked_base = nullptr;
  size_t checked_span = 0;
  bool board = false;   // the header superstep is board_step: bspk_sync_allgather_shared(), or rounds
  bool rounds = false;  // board_step's allgather is gather_rounds (header_rounds), not the board
  size_t bstride = 0;   // board_step: bytes per process in blocks

  explicit Ctx(Kind k) : kind(k), call(kCall[k]), hdr(scratch().hdr), hmsg(scratch().hmsg) {}
  ~Ctx() { hmsg.clear(); }  // frees the header messages still held
  Ctx(const Ctx&) = delete;
  Ctx& operator=(const Ctx&) = delete;

  void bad(int code, const std::string& what) {
    if (own_code == 0) {
      own_code = code;
      own_msg = what;
    }
  }
  int nested(int rc, const char* c_call) { return record_nested(call, step0, rc, c_call); }
  int fail(int code, const std::string& what) { return report(call, step0, code, what); }
  int internal(const std::string& what) { return fail(BSPK_ERR_INTERNAL, what); }

  // The checks at the call ([call] errors: nothing happens).
  int begin() {
    if (bspk_nprocs() <= 0) return report_local(call, BSPK_ERR_STATE, "called before bspk_init or after bspk_finalize");
    me = bspk_pid();
    p = bspk_nprocs();
    step0 = static_cast<int64_t>(bspk_superstep());
    if (const uint64_t sends = bspk_step_sends())
      return fail(BSPK_ERR_STATE, "called after " + std::to_string(sends) +
                                      " message(s) or copies were issued in this superstep: a collective ends the "
                                      "superstep and must be its only communication (call bspk_sync first)");
    if (bspk_declared() != 0)
      return fail(BSPK_ERR_STATE,
                  "called after bspk_expect or bspk_will_send in this superstep: a collective makes its own "
                  "declarations (call bspk_sync first)");
    board = bspk_sync_allgather_shared() != 0;
    if (!board && header_rounds(p)) board = rounds = true;
    return BSPK_OK;
  }

  // Checks a local pointer holding need elements; es_out gets its element size.
  void check_ptr(const bspk_ptr& ptr, size_t need, const char* name, size_t* es_out) {
    if (need == 0) {
      if (ptr.region != 0 && es_out && *es_out == 0) *es_out = bspk_elem_size(ptr);
      return;
    }
    if (ptr.region == 0) return bad(BSPK_ERR_PTR, std::string(name) + " is BSPK_NULL");
    // A pointer into a region of this process is read from its fields (what
    // bspk_owner / bspk_nelems / bspk_elem_size return for it); anything else
    // (another owner, a bspk_lookup handle) through the accessors.
    const bool own = ptr.owner == me;
    if (!own && bspk_owner(ptr) != me)
      return bad(BSPK_ERR_PTR, std::string(name) + " points into a region of pid " + std::to_string(bspk_owner(ptr)) +
                                   ": collectives take local regions");
    const size_t have = own ? (ptr.offset <= ptr.nelems ? ptr.nelems - ptr.offset : 0) : bspk_nelems(ptr);
    if (have < need)
      return bad(BSPK_ERR_RANGE, std::string(name) + " has " + std::to_string(have) +
                                     " elements from the pointer on, " + std::to_string(need) + " are needed");
    void* b = nullptr;
    const size_t k = bspk_span(ptr, &b);
    if (k == 0) return bad(BSPK_ERR_PTR, std::string(name) + " is not a live local region (freed?)");
    if (checked.region == 0) {  // the first pointer checked: the one the data is read from
      checked = ptr;
      checked_base = b;
      checked_span = k;
    }
    const size_t e = own ? ptr.elem_size : bspk_elem_size(ptr);
    if (es_out) {
      if (*es_out != 0 && *es_out != e)
        return bad(BSPK_ERR_ARG, std::string(name) + " has elements of " + std::to_string(e) +
                                     " bytes, the other region " + std::to_string(*es_out));
      *es_out = e;
    }
  }

  void set_op(bspk_op o) {
    opcode = o;
    if (o != 0 && o == g_builtin.code) {  // the built-in op of the call before
      op = g_builtin.op;
      opsig = static_cast<uint32_t>(o);
      return;
    }
    std::string why;
    if (resolve(o, &op, &why) != BSPK_OK) {
      bad(BSPK_ERR_ARG, why);
      opsig = 0x20000u;
      return;
    }
    opsig = op_signature(o);
    if (!op.is_user()) g_builtin = {o, op};  // (user ops can be freed: resolved at every call)
  }
  void check_root(int r) {
    root = r;
    if (r < 0 || r >= p) bad(BSPK_ERR_PID, "root " + std::to_string(r) + " is outside [0, " + std::to_string(p) + ")");
  }
  // The region of ptr (n elements) must hold elements of the op's type.
  void check_op_ptr(const bspk_ptr& ptr, size_t cnt) {
    size_t e = 0;
    check_ptr(ptr, cnt, "ptr", &e);
    if (own_code == 0 && cnt > 0 && e != op.es)
      bad(BSPK_ERR_ARG, "the region has elements of " + std::to_string(e) + " bytes, but " + op_name(opcode) +
                            " works on elements of " + std::to_string(op.es) + " bytes");
    es = op.es;
  }

  int32_t hdr_root() const { return has_root(kind) ? root : -1; }
  uint32_t hdr_op() const { return has_op(kind) ? opsig : 0; }
  uint64_t hdr_n() const { return kind == ALLTOALLV ? 0 : n; }
  // header_tag(make_hdr(me), algo) without building the header.
  uint64_t own_tag(uint32_t algo) const {
    return header_tag(kind, own_code != 0, hdr_root(), hdr_op(), static_cast<uint32_t>(es), hdr_n(), algo);
  }
  Hdr make_hdr(int dest) const {
    Hdr h;
    std::memset(&h, 0, sizeof h);
    h.magic = kMagic;
    h.kind = kind;
    h.bad = own_code != 0;
    h.root = hdr_root();
    h.sender = me;
    h.op = hdr_op();
    h.es = static_cast<uint32_t>(es);
    h.n = hdr_n();
    if (kind == ALLTOALLV && sendcounts && recvcounts) {
      h.cnt = sendcounts[dest];
      h.rcnt = recvcounts[dest];
    }
    return h;
  }

  // bspk_expect(m) + bspk_sync. [step] errors of earlier copies are kept for
  // the end (the superstep ended: the collective goes on).
  int sync_expect(int m) {
    int rc = bspk_expect(m);
    if (rc != BSPK_OK) return nested(rc, "bspk_expect");
    rc = bspk_sync();
    if (rc == BSPK_ERR_PTR || rc == BSPK_ERR_RANGE || rc == BSPK_ERR_NAME || rc == BSPK_ERR_CONFLICT) {
      if (late_code == 0) {
        late_code = rc;
        nested(rc, "bspk_sync");
        late_msg = bspk_coll_error_string();
      }
      return BSPK_OK;
    }
    if (rc != BSPK_OK) return nested(rc, "bspk_sync");
    return BSPK_OK;
  }

  // Before a superstep of header or tagged messages: no header yet from
  // anyone (the board's header superstep, a short collective's only one,
  // needs neither).
  void headers_init() {
    hmsg.clear();
    hdr.assign(static_cast<size_t>(p), Hdr());
    hmsg.v.assign(static_cast<size_t>(p), bspk_ptr());
  }

  // Takes message m from pid s as s's header (header superstep): false if it
  // is not one (m is then still the caller's).
  bool take_header(const bspk_ptr& m, int s) {
    Hdr h;
    std::memset(&h, 0, sizeof h);
    bool ok = s >= 0 && s < p && s != me && hmsg[s].region == 0 && bspk_elem_size(m) == 1 && bspk_nelems(m) >= kHdr;
    if (ok) {
      Cur c(m, kHdr);
      ok = to_mem(c, &h, kHdr) && h.magic == kMagic && h.sender == s && h.kind > 0 && h.kind < KIND_END &&
           bspk_nelems(m) == kHdr + h.payload;
    }
    if (!ok) return false;
    hmsg[s] = m;
    hdr[static_cast<size_t>(s)] = h;
    return true;
  }
  int not_a_header(const bspk_ptr& m, int s) {
    (void)bspk_free(m);
    hmsg.clear();
    return fail(BSPK_ERR_ARG, "a message from pid " + std::to_string(s) +
                                  " in this superstep is not a collective's header: pid " + std::to_string(s) +
                                  " did not call a collective in this superstep");
  }

  // The header superstep with 64-byte header messages (n == 0, invalid
  // arguments, bspk_alltoallv); payload(j, buf) appends the data for process
  // j. A message that carries its header in the tag (tagged_step) means the
  // arguments differ: every process then knows it (see tagged_step) and all
  // exchange their bare headers in one more superstep, for check_all's
  // message.
  template <class F>
  int header_step(F&& payload) {
    bool tagged = false;
    const int rc = exchange_headers(payload, &tagged);
    if (rc != BSPK_OK) return rc;
    return tagged ? bare_headers() : BSPK_OK;
  }
  // The header step without data (n == 0 or invalid arguments): then
  // check_all's error, or nothing to do.
  int headers_only() {
    int rc = header_step([](int, std::vector<unsigned char>&) { return true; });
    if (rc || (rc = check_all())) return rc;
    return finish();
  }

  // One superstep of 64-byte header messages to every other process (plus
  // what payload appends), bspk_expect(p - 1); the headers received go to
  // hdr/hmsg, and *tagged says whether a tagged message (tagged_step's) came
  // instead of some header.
  template <class F>
  int exchange_headers(F&& payload, bool* tagged) {
    headers_init();
    std::vector<unsigned char>& buf = scratch().buf;
    for (int j = 0; j < p; j++) {
      if (j == me) continue;
      buf.assign(kHdr, 0);
      if (own_code == 0 && !payload(j, buf)) bad(BSPK_ERR_PTR, "the data could not be read from the region");
      if (own_code != 0) buf.resize(kHdr);
      Hdr h = make_hdr(j);
      h.payload = static_cast<uint32_t>(buf.size() - kHdr);
      std::memcpy(buf.data(), &h, kHdr);
      const int rc = bspk_send_buf(j, buf.data(), buf.size());
      if (rc != BSPK_OK) return nested(rc, "bspk_send_buf");
    }
    int rc = sync_expect(p - 1);
    if (rc != BSPK_OK) return rc;
    int got = 0;
    for (;;) {
      bspk_ptr m = bspk_recv();
      if (m.region == 0) break;
      const int s = bspk_sender_id(m);
      if (is_header_tag(bspk_tag(m)) && s >= 0 && s < p && s != me) {
        (void)bspk_free(m);
        *tagged = true;
      } else if (!take_header(m, s)) {
        return not_a_header(m, s);
      }
      got++;
    }
    if (got != p - 1) return internal("the header superstep brought " + std::to_string(got) + " headers, not " +
                                      std::to_string(p - 1));
    return BSPK_OK;
  }

  // Header in the tag (n > 0, valid arguments; not bspk_alltoallv): the
  // collective's first data superstep, in which every process sends exactly
  // one message to every other one (msg(j, &ptr, &len): the len elements at
  // ptr for j, len 0 for an empty message), is also its header superstep.
  // Each message's tag is header_tag(this process's header, algo), algo
  // naming the algorithm chosen (direct or not: the short limit may differ
  // between processes); received messages go to got[sender]. The counts
  // (p - 1 each) still depend on no argument, and a process with n == 0 or
  // invalid arguments sends its header message instead (header_step).
  // Equal tags mean equal arguments. If arguments differ
  // anywhere, every process sees a tag or a header unlike its own (equality
  // is transitive: a process equal to all others would make all equal), so
  // all of them take one more superstep exchanging bare headers and return
  // check_all's error; the data already sent is dropped unread.
  template <class F>
  int tagged_step(uint32_t algo, F&& msg, Msgs& got) {
    headers_init();
    const uint64_t tag = own_tag(algo);
    for (int k = 1; k < p; k++) {
      const int j = kth_peer(me, p, k);
      bspk_ptr q{};
      size_t len = 0;
      msg(j, &q, &len);
      const int rc = bspk_send_tag(j, q, len, tag);
      if (rc != BSPK_OK) return nested(rc, "bspk_send_tag");
    }
    int rc = sync_expect(p - 1);
    if (rc != BSPK_OK) return rc;
    bool differ = false;
    int n_got = 0;
    for (;;) {
      bspk_ptr m = bspk_recv();
      if (m.region == 0) break;
      const int s = bspk_sender_id(m);
      const uint64_t t = bspk_tag(m);
      if (is_header_tag(t) && s >= 0 && s < p && s != me && got[s].region == 0 && hmsg[s].region == 0) {
        got[s] = m;
        differ = differ || t != tag;
      } else if (take_header(m, s)) {
        differ = true;
      } else {
        return not_a_header(m, s);
      }
      n_got++;
    }
    if (n_got != p - 1) return internal("the header superstep brought " + std::to_string(n_got) + " messages, not " +
                                        std::to_string(p - 1));
    if (!differ) return BSPK_OK;
    got.clear();
    return bare_headers();
  }

  // The header superstep of a job whose processes share a board
  // (bspk_sync_allgather_shared(): one host): ONE bspk_sync_allgather, the
  // same call on every process whatever its arguments, of this process's
  // digest (header_tag, in 16 bytes) followed by the cnt elements at src
  // (the short algorithms' data; 0: none). Equal digests and sizes mean equal
  // arguments and the same algorithm: then BSPK_OK (or this process's own
  // error, when all passed the same invalid arguments), and data(j) is
  // process j's data. Otherwise every process sees a difference, and all take
  // bare_headers' superstep for check_all's error. On one host the whole
  // superstep is a shared-memory barrier (sync/board.h), so short
  // collectives cost one barrier and long ones one barrier more than
  // elsewhere.
  //
  // In rounds (Ctx::rounds, a job without the board) the allgather is
  // gather_rounds, and the block is built where its first message sends it
  // from (scratch().wire, after the round summary and the block's length).
  int board_step(const bspk_ptr& src, size_t cnt) {
    Scratch& sc = scratch();
    size_t bytes = own_code != 0 ? 0 : cnt * es;
    // (The scratch vectors only grow: a short collective resizes nothing.)
    std::vector<unsigned char>& buf = rounds ? sc.wire : sc.block;
    const size_t at = rounds ? kRoundHead : 0;  // where the block starts in buf
    if (buf.size() < at + kDigest + bytes + 8) buf.resize(at + kDigest + bytes + 8);
    unsigned char* const blk = buf.data() + at;
    if (bytes && same_ptr(src, checked) && checked_span >= cnt) {
      bspk::copy_bytes(blk + kDigest, checked_base, bytes);  // checked in this superstep: one run
    } else if (bytes) {
      Cur c(src, cnt);
      if (!to_mem(c, blk + kDigest, bytes)) {
        bad(BSPK_ERR_PTR, "the data could not be read from the region");
        bytes = 0;
      }
    }
    const uint64_t tag = own_tag(static_cast<uint32_t>(bytes != 0) + 2);
    std::memcpy(blk, &tag, sizeof tag);
    std::memset(blk + sizeof tag, 0, kDigest - sizeof tag);
    bstride = kDigest + bytes;
    if (sc.all.size() < static_cast<size_t>(p) * bstride) sc.all.resize(static_cast<size_t>(p) * bstride);
    if (sc.sizes.size() < static_cast<size_t>(p)) sc.sizes.resize(static_cast<size_t>(p));
    // (bspk_sync_allgather and gather_rounds set every process's size.)
    bool differ = false;
    if (rounds) {
      if (const int rc = gather_rounds(bstride, tag, &differ)) return rc;
    } else if (const int rc = bspk_sync_allgather(blk, bstride, sc.all.data(), sc.sizes.data())) {
      return nested(rc, "bspk_sync_allgather");
    }
    for (int j = 0; j < p && !differ; j++)
      differ = sc.sizes[static_cast<size_t>(j)] != bstride ||
               std::memcmp(sc.all.data() + static_cast<size_t>(j) * bstride, &tag, sizeof tag) != 0;
    if (!differ) return own_code != 0 ? check_all() : BSPK_OK;
    return bare_headers();
  }
  // board_step's allgather in a job without the board: this process's block
  // (len bytes, starting with its digest `tag`, which board_step put at
  // kRoundHead in scratch().wire) and every other's into
  // scratch().all (stride bstride; a longer block is cut, a shorter one
  // leaves the rest untouched) and their sizes into scratch().sizes, in
  // ceil(log2 p) supersteps of ONE message per process with bspk_expect(1)
  // -- Bruck et al.'s concatenation: in round k (d = 2^k) process i sends
  // the blocks of i .. i+c-1 (mod p), c = min(d, p - d), to i - d and
  // receives those of i+d .. i+d+c-1 from i + d; when p is a power of two,
  // recursive doubling instead: i exchanges its d blocks with i XOR d (it
  // holds those of i XOR 0 .. i XOR (d-1), in that order), pairs that wait
  // only for each other, where Bruck's ring makes every process wait for its
  // neighbour's wait (one-double rounds of bspk_send_buf + bspk_expect(1),
  // tcp, 4 processes on 2 cores, 3 runs of 3 alternations: 22.8-31.6 us per
  // two rounds paired against 27.6-37.6 in the ring). The counts depend on p
  // alone, so they are exact whatever the arguments (the header superstep's
  // rule), and after the last round every process holds every block: cost
  // ceil(log2 p) l + (p - 1) b g for blocks of b bytes, against one
  // superstep of p - 1 messages for the direct exchange. A message is a
  // round summary (Rounds) and the blocks, each as its length (8 bytes) and
  // its bytes, padded to 8. *differ: some process's digest differs from
  // `tag` (then the blocks are not all there).
  int gather_rounds(size_t len, uint64_t tag, bool* differ) {
    Scratch& sc = scratch();
    std::vector<unsigned char>& w = sc.wire;   // summary, then blocks me, me+1, ... in wire form
    std::vector<size_t>& at_blk = sc.wire_at;  // where the k-th of them starts (and one past the last)
    auto padded = [](size_t b) { return (b + 7) & ~size_t{7}; };
    Rounds r(tag);
    w.resize(kRoundHead + padded(len));  // (board_step wrote the block)
    const uint64_t l64 = len;
    std::memcpy(w.data() + 8, &l64, 8);
    at_blk.assign(1, 8);
    at_blk.push_back(w.size());
    const bool paired = rounds_paired(p);
    for (int d = 1; d < p; d *= 2) {
      const int c = paired ? d : std::min(d, p - d);
      std::memcpy(w.data(), &r.summary, 8);
      // (after a difference, the summary alone: the blocks no longer matter)
      const size_t out = r.differ() ? 8 : at_blk[static_cast<size_t>(c)];
      int rc = bspk_send_buf(round_dest(me, p, d), w.data(), out);
      if (rc != BSPK_OK) return nested(rc, "bspk_send_buf");
      if ((rc = sync_expect(1))) return rc;
      const bspk_ptr m = r.take(round_src(me, p, d));
      if (r.differ()) {
        if (m.region != 0) (void)bspk_free(m);
        continue;
      }
      // c blocks after the summary (which take() read), exactly
      const size_t bytes = bspk_nelems(m) * bspk_elem_size(m), base = w.size();
      bool ok = bytes >= 8 && bspk_elem_size(m) == 1;
      if (ok) {
        w.resize(base + bytes - 8);
        Cur cur(m, bytes);
        uint64_t skip;
        ok = to_mem(cur, &skip, 8) && to_mem(cur, w.data() + base, bytes - 8);
      }
      (void)bspk_free(m);
      size_t o = base;
      for (int k = 0; ok && k < c; k++) {
        uint64_t b = 0;
        ok = w.size() - o >= 8;
        if (ok) std::memcpy(&b, w.data() + o, 8);
        ok = ok && b <= w.size() - o - 8 && padded(b) <= w.size() - o - 8;
        if (ok) at_blk.push_back(o += 8 + padded(b));
      }
      if (!ok || o != w.size()) r.summary = Rounds::kDiffer;  // not a header round's message: a difference
    }
    *differ = r.differ();
    if (*differ) return BSPK_OK;
    for (int k = 0; k < p; k++) {  // the k-th block held is pid me + k (Bruck) or me XOR k (paired)
      const size_t j = static_cast<size_t>(paired ? me ^ k : (me + k) % p), o = at_blk[static_cast<size_t>(k)];
      uint64_t b = 0;
      std::memcpy(&b, w.data() + o, 8);
      sc.sizes[j] = b;
      bspk::copy_bytes(sc.all.data() + j * bstride, w.data() + o + 8, std::min<size_t>(b, bstride));
    }
    return BSPK_OK;
  }

  // After board_step: process j's data (aligned for its elements: the stride
  // is 16 bytes plus whole elements).
  const unsigned char* data(int j) const {
    return scratch().all.data() + static_cast<size_t>(j) * bstride + kDigest;
  }

  // Arguments differ and some process sent its header in a tag: one more
  // superstep in which every process sends every other one its bare header
  // (every process gets here, see tagged_step), then check_all's error.
  int bare_headers() {
    bool tagged = false;
    int rc = exchange_headers([](int, std::vector<unsigned char>&) { return true; }, &tagged);
    if (rc != BSPK_OK) return rc;
    if (tagged) return internal("a tagged message in the superstep of bare headers");
    rc = check_all();
    if (rc != BSPK_OK) return rc;
    // Same arguments, different algorithms: only a different short limit
    return fail(BSPK_ERR_ARG,
                "the processes chose different algorithms for the same arguments (is BSPK_COLL_SHORT set alike on "
                "every process?)");
  }

  // After the header superstep: this process's own error, another's, a mismatch.
  int check_all() {
    if (own_code != 0) return fail(own_code, own_msg);
    for (int j = 0; j < p; j++)
      if (j != me && hdr[static_cast<size_t>(j)].bad)
        return fail(BSPK_ERR_ARG, "pid " + std::to_string(j) + " passed invalid arguments to " +
                                      kCall[hdr[static_cast<size_t>(j)].kind] + " (its own message says which)");
    const Hdr mine = make_hdr(me);
    for (int j = 0; j < p; j++) {
      if (j == me) continue;
      const Hdr& h = hdr[static_cast<size_t>(j)];
      auto pj = [j] { return "pid " + std::to_string(j); };  // built only for an error
      if (h.kind != mine.kind)
        return fail(BSPK_ERR_ARG, pj() + " called " + kCall[h.kind] + ", this process " + kCall[mine.kind]);
      if (h.root != mine.root)
        return fail(BSPK_ERR_ARG, pj() + " passed root = " + std::to_string(h.root) + ", this process root = " +
                                      std::to_string(mine.root));
      if (h.n != mine.n)
        return fail(BSPK_ERR_ARG, pj() + " passed n = " + std::to_string(h.n) + ", this process n = " +
                                      std::to_string(mine.n));
      if (h.op != mine.op)
        return fail(BSPK_ERR_ARG, pj() + " passed op = " + op_signature_name(h.op) + ", this process op = " +
                                      op_signature_name(mine.op));
      if (h.es != 0 && mine.es != 0 && h.es != mine.es)
        return fail(BSPK_ERR_ARG, pj() + " has elements of " + std::to_string(h.es) + " bytes, this process " +
                                      std::to_string(mine.es) + " bytes");
    }
    return BSPK_OK;
  }

  // The payload of pid j's header message, as bytes.
  Cur payload(int j) const {
    const bspk_ptr& m = hmsg.v[static_cast<size_t>(j)];
    return Cur(bspk_incr(m, static_cast<ptrdiff_t>(kHdr)), hdr[static_cast<size_t>(j)].payload);
  }
  bool payload_is(int j, size_t bytes) {
    return hdr[static_cast<size_t>(j)].payload == bytes;
  }

  // Receive the messages of a data superstep: at most one per sender, of
  // elements of es bytes.
  int recv_data(Msgs& got) {
    for (;;) {
      bspk_ptr m = bspk_recv();
      if (m.region == 0) return BSPK_OK;
      const int s = bspk_sender_id(m);
      if (s < 0 || s >= p || got[s].region != 0) {
        (void)bspk_free(m);
        return internal("an unexpected message from pid " + std::to_string(s));
      }
      got[s] = m;
    }
  }
  // Message got[j] (len elements) into dst by bspk_move: its frames become
  // dst's where they line up (no copy), and the message is consumed.
  bool take(Msgs& got, int j, const bspk_ptr& dst, size_t len) {
    const bspk_ptr m = got[j];
    got[j] = bspk_ptr();
    if (bspk_move(dst, m, len) == BSPK_OK) return true;
    (void)bspk_free(m);
    return false;
  }
  // A data message of pid j must hold len elements of es bytes.
  bool data_ok(Msgs& got, int j, size_t len) {
    const bspk_ptr& m = got[j];
    return m.region != 0 && bspk_nelems(m) == len && bspk_elem_size(m) == es;
  }

  int finish() {
    if (late_code != 0) {
      report(call, step0, late_code, late_msg.substr(late_msg.find(": ") + 2));
      return late_code;
    }
    return BSPK_OK;
  }
};

bspk_ptr Rounds::take(int from) {
  bspk_ptr m = bspk_recv();
  for (bspk_ptr extra = bspk_recv(); extra.region != 0; extra = bspk_recv()) {
    (void)bspk_free(extra);
    summary = kDiffer;
  }
  if (m.region == 0 || bspk_sender_id(m) != from) {
    if (m.region != 0) (void)bspk_free(m);
    summary = kDiffer;
    return bspk_ptr();
  }
  uint64_t s = bspk_tag(m);
  if (s == 0) {  // a bspk_send_buf message: the summary leads it
    Cur cur(m, bspk_nelems(m) * bspk_elem_size(m) >= 8 && bspk_elem_size(m) == 1 ? 8 : 0);
    if (!to_mem(cur, &s, 8)) s = kDiffer;
  }
  if (s != own) summary = kDiffer;
  return m;
}

bool append_cm(std::vector<unsigned char>& buf, const bspk_ptr& p, size_t nelem, size_t es) {
  const size_t old = buf.size();
  buf.resize(old + nelem * es);
  if (nelem == 0) return true;
  Cur c(p, nelem);
  return to_mem(c, buf.data() + old, nelem * es);
}

// acc = src(order[0]) op src(order[1]) op ... (len elements).
template <class Src>
bool fold(const Ctx& c, std::vector<unsigned char>& acc, size_t len, int from, int to, Src&& src) {
  acc.assign(len * c.es, 0);
  for (int j = from; j < to; j++) {
    Cur s = src(j);
    if (j == from) {
      if (!to_mem(s, acc.data(), len * c.es)) return false;
      c.op.start(acc.data(), len);
    } else if (!combine(c.op, acc.data(), s, len)) {
      return false;
    }
  }
  return true;
}

int send(Ctx& c, int dest, const bspk_ptr& p, size_t n) {
  const int rc = bspk_send(dest, p, n);
  return rc == BSPK_OK ? rc : c.nested(rc, "bspk_send");
}

// ---- the collectives ---------------------------------------------------------------

// Long reduce-scatter step (reduce, allreduce), also the header superstep
// (Ctx::tagged_step): block me of every process's ptr comes here and is
// combined in pid order into acc.
int reduce_scatter(Ctx& c, const bspk_ptr& ptr, std::vector<unsigned char>& acc) {
  const int p = c.p, me = c.me;
  Msgs got(p);
  int rc = c.tagged_step(
      0,
      [&](int j, bspk_ptr* q, size_t* len) {
        *q = at(ptr, boff(c.n, p, j));
        *len = blen(c.n, p, j);
        if (*len == 0) *q = ptr;  // an empty message: the header alone
      },
      got);
  if (rc) return rc;
  const size_t mylen = blen(c.n, p, me), myoff = boff(c.n, p, me);
  for (int j = 0; j < p; j++)
    if (j != me && !c.data_ok(got, j, mylen)) return c.internal("reduce-scatter block missing");
  if (mylen > 0 &&
      !fold(c, acc, mylen, 0, p, [&](int j) { return j == me ? Cur(at(ptr, myoff), mylen) : Cur(got[j], mylen); }))
    return c.internal("reading a block");
  return BSPK_OK;
}

// f(run, elements) for each contiguous run of the n elements (es bytes each)
// of comem range c; runs end at frame ends, so they hold whole elements.
template <class F>
bool each_run(Cur& c, size_t n, size_t es, F&& f) {
  for (size_t bytes = n * es; bytes;) {
    char* x;
    const size_t t = c.get(bytes, &x);
    if (!t || t % es || !f(reinterpret_cast<unsigned char*>(x), t / es)) return false;
    bytes -= t;
  }
  return true;
}

// The direct algorithms' result: ptr = x_0 op ... op x_{upto-1}, x_j being
// got[j] (this process's own ptr for j == me), n elements each. Combined in
// place, without a staging copy: into ptr when x_0 is this process's own
// (me == 0), else into pid 0's message (the runtime's frames, ours to
// change), which then becomes ptr's data by bspk_move (frames change hands:
// no copy where they line up).
int fold_direct(Ctx& c, const bspk_ptr& ptr, int upto, Msgs& got) {
  for (int j = 0; j < upto; j++)
    if (j != c.me && !c.data_ok(got, j, c.n)) return c.internal("data missing");
  const bspk_ptr acc = c.me == 0 ? ptr : got[0];
  if (c.op.starts()) {
    Cur a(acc, c.n);
    if (!each_run(a, c.n, c.es, [&](unsigned char* x, size_t k) { return c.op.start(x, k), true; }))
      return c.internal("reading the data");
  }
  for (int j = 1; j < upto; j++) {
    Cur a(acc, c.n), s(j == c.me ? ptr : got[j], c.n);
    if (!each_run(a, c.n, c.es, [&](unsigned char* x, size_t k) { return combine(c.op, x, s, k); }))
      return c.internal("combining the data");
  }
  if (c.me != 0 && !c.take(got, 0, ptr, c.n)) return c.internal("writing the result");
  return BSPK_OK;
}

// The largest data (bytes per process) that board_step carries for the
// short algorithms on one host (bspk_coll.h "Cost"; chosen from alternated
// runs against the message algorithms, shm p = 2 and 4): 8 KiB for the
// reductions (each process folds the p blocks itself: one superstep instead
// of one or two of messages after the header superstep); for broadcast,
// gathers and alltoall (move: all p blocks for alltoall), whose messages
// change frames without copies, 2 KiB at p <= 2 and 4 KiB above.
// BSPK_COLL_SHORT, when set, caps it (tests use it to reach the long
// algorithms with little data).
// In rounds (no board) the reductions carry up to 16 KiB: the alternative
// there is R rounds of digests and then two supersteps of messages
// (bspk_allreduce, tcp, counts by messages, 2 cores, medians of 7 alternated
// runs, rounds with the data against rounds then reduce-scatter + allgather:
// p = 4, 16 KiB 130 against 256 us, 32 KiB 166 against 182, 128 KiB 634
// against 320; p = 8, 16 KiB 560 against 678, 32 KiB 830 against 662), and
// the others 8 KiB (bspk_allgather of 8 KiB per process: p = 4 68 against
// 105 us, p = 8 408 against 419; 32 KiB at p = 4: 169 against 150).
size_t board_limit(int p, bool move, bool rounds) {
  const size_t cap = rounds ? (move ? 8192 : 16384) : !move ? 8192 : p <= 2 ? 2048 : 4096;
  return short_setting().set ? std::min(short_limit(), cap) : cap;
}

// After board_step with data: ptr = x_0 op ... op x_{upto-1} (x_j: process
// j's data), combined in pid order, in place when ptr's n elements lie in one
// aligned run (else through a staging vector).
int fold_blocks(Ctx& c, const bspk_ptr& ptr, int upto) {
  const size_t N = c.n * c.es;
  // ptr's first run: as check_ptr found it (no frame of a region moves at
  // the collective's boundary: no process stored into it in that superstep).
  void* b = c.checked_base;
  size_t run = c.checked_span;
  if (!same_ptr(ptr, c.checked)) run = bspk_span(ptr, &b);
  const bool in_place = run >= c.n && reinterpret_cast<uintptr_t>(b) % align_for(c.es) == 0;
  std::vector<unsigned char> tmp;
  if (!in_place) tmp.resize(N);
  unsigned char* acc = in_place ? static_cast<unsigned char*>(b) : tmp.data();
  bspk::copy_bytes(acc, c.data(0), N);
  c.op.start(acc, c.n);
  for (int j = 1; j < upto; j++) c.op.apply(acc, c.data(j), c.n);
  if (!in_place) {
    Cur d(ptr, c.n);
    if (!from_mem(d, acc, N)) return c.internal("writing the result");
  }
  return BSPK_OK;
}

// Board jobs: the header superstep, carrying the cnt elements at ptr when
// they fit in board_limit (cnt 0: never). True when that ends the collective,
// with *rc its result: an error, n == 0 on every process (nothing to do), or
// the data came with it and use_data() (which returns a status) put them in
// place. False: the message algorithm follows.
template <class F>
bool board_first(Ctx& c, const bspk_ptr& ptr, size_t cnt, bool move, F&& use_data, int* rc) {
  const bool shrt = c.own_code == 0 && c.n > 0 && cnt > 0 && cnt * c.es <= board_limit(c.p, move, c.rounds);
  if ((*rc = c.board_step(ptr, shrt ? cnt : 0))) return true;
  if (c.n > 0 && !shrt) return false;
  if (c.n > 0 && (*rc = use_data())) return true;
  *rc = c.finish();
  return true;
}

// Broadcast, n > 0 and valid arguments: the header rides in the tag of the
// first data superstep's messages (Ctx::tagged_step). Direct (short data or
// p <= 2): the root sends ptr itself; else scatter (block j to process j)
// then an allgather among the non-roots.
int broadcast_tagged(Ctx& c, const bspk_ptr& ptr, bool direct) {
  const int p = c.p, me = c.me, root = c.root;
  Msgs got(p);
  int rc = c.tagged_step(
      direct,
      [&](int j, bspk_ptr* q, size_t* len) {
        *q = ptr;
        if (me != root) return;  // an empty message: the header alone
        if (direct) {
          *len = c.n;
        } else {
          *q = at(ptr, boff(c.n, p, j));
          *len = blen(c.n, p, j);
        }
      },
      got);
  if (rc) return rc;
  if (direct) {
    if (me != root) {
      if (!c.data_ok(got, root, c.n)) return c.internal("broadcast data missing");
      if (!c.take(got, root, ptr, c.n)) return c.internal("moving the data");
    }
    return c.finish();
  }
  const size_t mylen = blen(c.n, p, me), myoff = boff(c.n, p, me);
  if (me != root) {
    if (!c.data_ok(got, root, mylen)) return c.internal("scatter block missing");
    if (mylen > 0 && !c.take(got, root, at(ptr, myoff), mylen)) return c.internal("moving the data");
  }
  got.clear();
  // allgather: every process sends its block to the non-roots (the root's
  // own block goes here too; the root has everything)
  if (mylen > 0)
    for (int k = 1; k < p; k++)
      if (const int j = kth_peer(me, p, k); j != root && (rc = send(c, j, at(ptr, myoff), mylen))) return rc;
  int expect = 0;
  if (me != root)
    for (int k = 0; k < p; k++)
      if (k != me && blen(c.n, p, k) > 0) expect++;
  if ((rc = c.sync_expect(expect))) return rc;
  if ((rc = c.recv_data(got))) return rc;
  if (me != root)
    for (int k = 0; k < p; k++) {
      const size_t len = blen(c.n, p, k);
      if (k == me || len == 0) continue;
      if (!c.data_ok(got, k, len)) return c.internal("allgather block missing");
      if (!c.take(got, k, at(ptr, boff(c.n, p, k)), len)) return c.internal("moving the data");
    }
  return c.finish();
}

// Broadcast in rounds (Ctx::rounds) at p <= 8, or of data that fit in the
// rounds (board_limit):
// the header rounds carry the root's data themselves, along a binomial
// tree in their dissemination pattern. In round k (d = 2^k) a process at
// distance r < d behind the root (r = (root - i) mod p) sends the data to
// i - d when r + d < p, zero copy: the root its region, the others the
// message they received, forwarded as it is; every other message of the
// rounds is an 8-byte summary (Rounds). The data message carries the
// summary in its tag. ceil(log2 p) supersteps and no more: (p - 1) N g in
// all, N g + l per round on the critical path (scatter + allgather after
// the rounds would take two supersteps more). At larger p long data take
// the rounds of digests, then scatter + allgather. When p is a power of
// two the rounds pair processes as gather_rounds does (i with i XOR d, the
// distance r = i XOR root): the same tree, with partners that wait only for
// each other.
int broadcast_rounds(Ctx& c, const bspk_ptr& ptr) {
  const int p = c.p, me = c.me;
  const bool data = c.own_code == 0 && c.n > 0;
  const int dist = data ? (rounds_paired(p) ? me ^ c.root : (c.root - me + p) % p) : p;
  Rounds r(c.own_tag(4));
  bspk_ptr held = data && me == c.root ? ptr : bspk_ptr();
  bspk_ptr got{};
  auto drop = [&](int rc) {
    if (got.region != 0) (void)bspk_free(got);
    return rc;
  };
  for (int d = 1; d < p; d *= 2) {
    const int dest = round_dest(me, p, d);
    int rc;
    if (!r.differ() && held.region != 0 && dist < d && dist + d < p) {
      if ((rc = bspk_send_tag(dest, held, c.n, r.summary))) return drop(c.nested(rc, "bspk_send_tag"));
    } else if ((rc = bspk_send_buf(dest, &r.summary, sizeof r.summary))) {
      return drop(c.nested(rc, "bspk_send_buf"));
    }
    if ((rc = c.sync_expect(1))) return drop(rc);
    const bspk_ptr m = r.take(round_src(me, p, d));
    if (m.region == 0) continue;
    if (!r.differ() && dist >= d && dist < 2 * d && bspk_tag(m) != 0 && bspk_nelems(m) == c.n &&
        bspk_elem_size(m) == c.es) {
      got = held = m;  // (forwarded in the later rounds, moved into ptr after the last)
    } else {
      (void)bspk_free(m);
    }
  }
  if (r.differ()) return drop(c.bare_headers());
  if (c.own_code != 0) return c.check_all();  // every process passed the same invalid arguments
  if (data && me != c.root) {
    if (got.region == 0) return c.internal("broadcast data missing");
    if (bspk_move(ptr, got, c.n) != BSPK_OK) return drop(c.internal("moving the data"));
  }
  return c.finish();
}

// In rounds at 4 <= p <= 8, a broadcast whose blocks of scatter + allgather
// would reach kSplitBlock bytes (N >= p * kSplitBlock; with BSPK_COLL_SHORT
// set, p * S, for tests) leaves the binomial tree of broadcast_rounds for
// the R rounds of digests, then scatter + allgather: the root sends
// 2 (p-1)/p N (1.5 N at p = 4) instead of R N, and each other process
// (p-2)/p N instead of the tree's inner nodes N or more each. Measured on
// tcp, counts by messages, 2 cores, us, tree -> split (p = 4:
// bench/collectives, three alternated runs; p = 3 and 8: loops of
// broadcasts after 150 of 256 KiB, two runs):
// p = 4, 256 KiB 68-72 -> 142-157 (hence the threshold), 1 MiB 409-508 ->
// 339-360, 2 MiB 1065-1167 -> 736-846, 16 MiB 12150-12582 -> 9743-11170;
// p = 8, 1 MiB 1236-1387 -> 1367-1602, 2 MiB 2889-3150 -> 2191-3058; p = 3
// (not taken): 2 MiB 572-610 -> 694-989. The choice depends on (p, N, S)
// alone; processes that passed different n may choose differently, and
// the rounds of digests and broadcast_rounds then still find the mismatch
// (their rounds have the same partners and counts).
constexpr size_t kSplitBlock = size_t{256} << 10;
bool broadcast_split(const Ctx& c) {
  const size_t block = short_setting().set ? short_limit() : kSplitBlock;
  return c.p >= 4 && c.p <= 8 && c.n * c.es >= static_cast<size_t>(c.p) * block;
}

// Whether a broadcast by messages (broadcast_tagged) is direct (the root
// sends ptr to every process) rather than scatter + allgather: short data
// (N <= S) or p <= 2; and on one host (the shared board, not rounds) up to
// kBoardDirectMax bytes (S with BSPK_COLL_SHORT set, for tests), where every
// receiver pulls the root's frames itself, in parallel, and the direct
// broadcast saves the allgather's superstep. Measured on shm, 2 cores, us,
// split -> direct (bench/collectives and loops of broadcasts): p = 4, 32 KiB
// 13.7 -> 7.5, 256 KiB 31 -> 19, 1 MiB 145-151 -> 108-112, 4 MiB 581 -> 491,
// 8 MiB 1182 -> 1196, 16 MiB 2537 -> 4041; p = 8, 32 KiB 46 -> 22-24,
// 256 KiB 136-141 -> 66-82, 1 MiB 308-323 -> 256-273, 4 MiB 1232 -> 923,
// 16 MiB 7777 -> 14622; p = 3 and 6 alike up to 4 MiB.
constexpr size_t kBoardDirectMax = size_t{4} << 20;
bool broadcast_direct(const Ctx& c) {
  const size_t N = c.n * c.es;
  if (N <= short_limit() || c.p <= 2) return true;
  return c.board && !c.rounds && !short_setting().set && N <= kBoardDirectMax;
}

int do_broadcast(Ctx& c, const bspk_ptr& ptr) {
  if (c.rounds && !broadcast_split(c) && (c.p <= 8 || c.n * c.es <= board_limit(c.p, true, true)))
    return broadcast_rounds(c, ptr);
  // short: the root's data comes with the header superstep (every process sends its own)
  auto place = [&] {
    if (c.me == c.root) return BSPK_OK;
    Cur d(ptr, c.n);
    return from_mem(d, c.data(c.root), c.n * c.es) ? BSPK_OK : c.internal("writing the result");
  };
  int rc;
  if (c.board && board_first(c, ptr, c.n, true, place, &rc)) return rc;
  if (c.own_code == 0 && c.n > 0) return broadcast_tagged(c, ptr, broadcast_direct(c));
  return c.headers_only();
}

int do_reduce(Ctx& c, const bspk_ptr& ptr, bool all) {
  const size_t N = c.n * c.es;
  const bool shrt = N <= short_limit();
  const int p = c.p, me = c.me, root = c.root;
  int rc;
  if (c.board &&  // short: every process's data comes with the header superstep
      board_first(c, ptr, c.n, false, [&] { return all || me == root ? fold_blocks(c, ptr, p) : BSPK_OK; }, &rc))
    return rc;
  if (c.own_code != 0 || c.n == 0) return c.headers_only();
  if (shrt || p <= 2) {  // direct: each process's ptr to the root (all: to every process), the header in the tag
    Msgs got(p);
    rc = c.tagged_step(
        1,
        [&](int j, bspk_ptr* q, size_t* len) {
          *q = ptr;
          *len = all || j == root ? c.n : 0;
        },
        got);
    if (rc) return rc;
    if ((all || me == root) && (rc = fold_direct(c, ptr, p, got))) return rc;
    return c.finish();
  }
  std::vector<unsigned char> acc;
  if ((rc = reduce_scatter(c, ptr, acc))) return rc;
  const size_t mylen = blen(c.n, p, me), myoff = boff(c.n, p, me);
  Stage stage;
  int expect = 0;
  if (all) {
    if (mylen > 0) {
      Cur d(at(ptr, myoff), mylen);
      if (!from_mem(d, acc.data(), mylen * c.es)) return c.internal("writing the result");
      for (int k = 1; k < p; k++)
        if ((rc = send(c, kth_peer(me, p, k), at(ptr, myoff), mylen))) return rc;
    }
    for (int k = 0; k < p; k++)
      if (k != me && blen(c.n, p, k) > 0) expect++;
  } else if (me == root) {
    if (mylen > 0) {
      Cur d(at(ptr, myoff), mylen);
      if (!from_mem(d, acc.data(), mylen * c.es)) return c.internal("writing the result");
    }
    for (int k = 0; k < p; k++)
      if (k != me && blen(c.n, p, k) > 0) expect++;
  } else if (mylen > 0) {
    stage.p = bspk_malloc("", 0, mylen, c.es);
    if (stage.p.region == 0) return c.nested(BSPK_ERR_NOMEM, "bspk_malloc");
    Cur d(stage.p, mylen);
    if (!from_mem(d, acc.data(), mylen * c.es)) return c.internal("staging the block");
    if ((rc = send(c, root, stage.p, mylen))) return rc;
  }
  if ((rc = c.sync_expect(expect))) return rc;
  Msgs got(p);
  if ((rc = c.recv_data(got))) return rc;
  if (all || me == root)
    for (int k = 0; k < p; k++) {
      const size_t len = blen(c.n, p, k);
      if (k == me || len == 0) continue;
      if (!c.data_ok(got, k, len)) return c.internal("result block missing");
      Cur s(got[k], len), d(at(ptr, boff(c.n, p, k)), len);
      if (!cm_copy(d, s, len * c.es)) return c.internal("copying the result");
    }
  return c.finish();
}

int do_scan(Ctx& c, const bspk_ptr& ptr, bool ex) {
  const size_t N = c.n * c.es;
  const bool shrt = N <= short_limit();
  const int p = c.p, me = c.me;
  std::vector<unsigned char> acc;
  const int upto = ex ? me : me + 1;  // combine pids [0, upto)
  int rc;
  if (c.board &&  // short: every process's data comes with the header superstep
      board_first(
          c, ptr, c.n, false,
          [&] { return upto > 0 && (me != 0 || c.op.starts()) ? fold_blocks(c, ptr, upto) : BSPK_OK; }, &rc))
    return rc;
  if (c.own_code != 0 || c.n == 0) return c.headers_only();
  if (shrt || p <= 2) {  // direct: ptr to every higher pid, the header in the tag (empty messages to the lower)
    Msgs got(p);
    rc = c.tagged_step(
        1,
        [&](int j, bspk_ptr* q, size_t* len) {
          *q = ptr;
          *len = j > me ? c.n : 0;
        },
        got);
    if (rc) return rc;
    // Pid 0's scan is x_0 alone, which only LAND / LOR change (to 1 or 0,
    // in fold's start).
    if (upto > 0 && (me != 0 || c.op.starts()) && (rc = fold_direct(c, ptr, upto, got))) return rc;
    return c.finish();
  }
  // Block j of every needed x_i goes to process j (scan: all i; exscan: i <
  // p-1), the header in the tag; empty messages where no block goes.
  const bool i_send = !ex || me < p - 1;
  const size_t mylen = blen(c.n, p, me), myoff = boff(c.n, p, me);
  const int senders = ex ? p - 1 : p;  // pids [0, senders) contribute
  Stage stage;  // prefix i of block me at slice i (i: the pid it goes to)
  {
    Msgs got(p);
    rc = c.tagged_step(
        0,
        [&](int j, bspk_ptr* q, size_t* len) {
          *len = i_send ? blen(c.n, p, j) : 0;
          *q = *len > 0 ? at(ptr, boff(c.n, p, j)) : ptr;
        },
        got);
    if (rc) return rc;
    if (mylen > 0) {
      for (int k = 0; k < senders; k++)
        if (k != me && !c.data_ok(got, k, mylen)) return c.internal("scan block missing");
      stage.p = bspk_malloc("", 0, static_cast<size_t>(p) * mylen, c.es);
      if (stage.p.region == 0) return c.nested(BSPK_ERR_NOMEM, "bspk_malloc");
      acc.assign(mylen * c.es, 0);
      for (int i = 0; i < senders; i++) {
        Cur s = i == me ? Cur(at(ptr, myoff), mylen) : Cur(got[i], mylen);
        if (i == 0 ? !to_mem(s, acc.data(), mylen * c.es) : !combine(c.op, acc.data(), s, mylen))
          return c.internal("reading a block");
        if (i == 0) c.op.start(acc.data(), mylen);
        const int dest = ex ? i + 1 : i;  // who gets the prefix up to i
        Cur d(at(stage.p, static_cast<size_t>(dest) * mylen), mylen);
        if (!from_mem(d, acc.data(), mylen * c.es)) return c.internal("staging a prefix");
      }
    }
  }
  if (mylen > 0) {
    for (int t = ex ? 1 : 0; t < p; t++) {
      if (t == me) continue;
      if ((rc = send(c, t, at(stage.p, static_cast<size_t>(t) * mylen), mylen))) return rc;
    }
    if (!ex || me > 0) {  // own block of the result
      Cur s(at(stage.p, static_cast<size_t>(me) * mylen), mylen), d(at(ptr, myoff), mylen);
      if (!cm_copy(d, s, mylen * c.es)) return c.internal("writing the result");
    }
  }
  int expect = 0;
  if (!ex || me > 0)
    for (int k = 0; k < p; k++)
      if (k != me && blen(c.n, p, k) > 0) expect++;
  if ((rc = c.sync_expect(expect))) return rc;
  Msgs got(p);
  if ((rc = c.recv_data(got))) return rc;
  if (!ex || me > 0)
    for (int k = 0; k < p; k++) {
      const size_t len = blen(c.n, p, k);
      if (k == me || len == 0) continue;
      if (!c.data_ok(got, k, len)) return c.internal("scan result block missing");
      Cur s(got[k], len), d(at(ptr, boff(c.n, p, k)), len);
      if (!cm_copy(d, s, len * c.es)) return c.internal("copying the result");
    }
  return c.finish();
}

// gather (root >= 0), allgather (root < 0), alltoall (a2a).
int do_gather(Ctx& c, const bspk_ptr& dst, const bspk_ptr& src, bool all, bool a2a) {
  const size_t N = c.n * c.es;
  const int p = c.p, me = c.me, root = c.root;
  auto gets = [&](int j) { return all || a2a || j == root; };
  auto src_for = [&](int j) { return a2a ? at(src, static_cast<size_t>(j) * c.n) : src; };
  Msgs got(p);
  int rc;
  // short: every process's src comes with the header superstep (alltoall: all p blocks)
  auto place = [&] {
    if (all || a2a || me == root)
      for (int j = 0; j < p; j++) {
        Cur d(at(dst, static_cast<size_t>(j) * c.n), c.n);
        if (!from_mem(d, c.data(j) + (a2a ? static_cast<size_t>(me) * N : 0), N)) return c.internal("writing a block");
      }
    return BSPK_OK;
  };
  if (c.board && board_first(c, src, a2a ? static_cast<size_t>(p) * c.n : c.n, true, place, &rc)) return rc;
  if (c.own_code != 0 || c.n == 0) return c.headers_only();
  // One superstep: the blocks carry the headers in their tags (empty
  // messages where none goes).
  rc = c.tagged_step(
      1,
      [&](int j, bspk_ptr* q, size_t* len) {
        *q = src_for(j);
        *len = gets(j) ? c.n : 0;
      },
      got);
  if (rc) return rc;
  if (all || a2a || me == root) {
    for (int j = 0; j < p; j++) {
      if (j == me) {
        Cur d(at(dst, static_cast<size_t>(j) * c.n), c.n), s(src_for(me), c.n);
        if (!cm_copy(d, s, N)) return c.internal("copying the own block");
        continue;
      }
      if (!c.data_ok(got, j, c.n)) return c.internal("block missing");
      if (!c.take(got, j, at(dst, static_cast<size_t>(j) * c.n), c.n)) return c.internal("moving a block");
    }
  }
  return c.finish();
}

int do_alltoallv(Ctx& c, const bspk_ptr& dst, const size_t* rdispls, const bspk_ptr& src, const size_t* sdispls) {
  const int p = c.p, me = c.me;
  const size_t S = short_limit();
  auto sshort = [&](int j) { return c.sendcounts[j] * c.es <= S; };
  if (c.board) {  // the kind and element size agree first (the counts are per pair: header_step)
    if (int rc = c.board_step(src, 0)) return rc;
  }
  int rc = c.header_step([&](int j, std::vector<unsigned char>& buf) {
    return !sshort(j) || append_cm(buf, at(src, sdispls[j]), c.sendcounts[j], c.es);
  });
  if (rc || (rc = c.check_all())) return rc;
  // Pairs: both ends see a disagreement.
  std::string pair_err;
  std::vector<char> pair_bad(static_cast<size_t>(p), 0);
  for (int j = 0; j < p; j++) {
    if (j == me) continue;
    const Hdr& h = c.hdr[static_cast<size_t>(j)];
    std::string e;
    if (h.cnt != c.recvcounts[j])
      e = "pid " + std::to_string(j) + " sends " + std::to_string(h.cnt) + " elements to this process, recvcounts[" +
          std::to_string(j) + "] = " + std::to_string(c.recvcounts[j]) + " here";
    else if (h.rcnt != c.sendcounts[j])
      e = "pid " + std::to_string(j) + " expects " + std::to_string(h.rcnt) + " elements from this process (its recvcounts[" +
          std::to_string(me) + "]), sendcounts[" + std::to_string(j) + "] = " + std::to_string(c.sendcounts[j]) + " here";
    if (!e.empty()) {
      pair_bad[static_cast<size_t>(j)] = 1;
      if (pair_err.empty()) pair_err = e;
    }
  }
  for (int k = 1; k < p; k++)
    if (const int j = kth_peer(me, p, k); !sshort(j) && (rc = send(c, j, at(src, sdispls[j]), c.sendcounts[j])))
      return rc;
  int expect = 0;
  for (int j = 0; j < p; j++) {
    const Hdr& h = c.hdr[static_cast<size_t>(j)];
    if (j != me && h.cnt * h.es > S) expect++;
  }
  if ((rc = c.sync_expect(expect))) return rc;
  Msgs got(p);
  if ((rc = c.recv_data(got))) return rc;
  for (int j = 0; j < p; j++) {
    const size_t cnt = c.recvcounts[j];
    if (pair_bad[static_cast<size_t>(j)] || cnt == 0) continue;
    const bspk_ptr dj = at(dst, rdispls[j]);
    if (j != me && cnt * c.es > S) {  // a message of its own: moved in
      if (!c.data_ok(got, j, cnt)) return c.internal("block missing");
      if (!c.take(got, j, dj, cnt)) return c.internal("moving a block");
      continue;
    }
    if (j != me && !c.payload_is(j, cnt * c.es)) return c.internal("short payload size");
    Cur d(dj, cnt), s = j == me ? Cur(at(src, sdispls[me]), cnt) : c.payload(j);
    if (!cm_copy(d, s, cnt * c.es)) return c.internal(j == me ? "copying the own block" : "copying a block");
  }
  if (!pair_err.empty()) return c.fail(BSPK_ERR_ARG, pair_err);
  return c.finish();
}

}  // namespace
}  // namespace bspk_coll

using namespace bspk_coll;

extern "C" {

int bspk_broadcast(int root, bspk_ptr ptr, size_t n) {
  Ctx c(BCAST);
  int rc = c.begin();
  if (rc) return rc;
  c.check_root(root);
  c.n = n;
  c.check_ptr(ptr, n, "ptr", &c.es);
  if (n == 0) c.es = 0;
  return do_broadcast(c, ptr);
}

int bspk_reduce(int root, bspk_ptr ptr, size_t n, bspk_op op) {
  Ctx c(REDUCE);
  int rc = c.begin();
  if (rc) return rc;
  c.check_root(root);
  c.n = n;
  c.set_op(op);
  if (c.own_code == 0) c.check_op_ptr(ptr, n);
  return do_reduce(c, ptr, false);
}

int bspk_allreduce(bspk_ptr ptr, size_t n, bspk_op op) {
  Ctx c(ALLREDUCE);
  int rc = c.begin();
  if (rc) return rc;
  c.n = n;
  c.set_op(op);
  if (c.own_code == 0) c.check_op_ptr(ptr, n);
  return do_reduce(c, ptr, true);
}

int bspk_scan(bspk_ptr ptr, size_t n, bspk_op op) {
  Ctx c(SCAN);
  int rc = c.begin();
  if (rc) return rc;
  c.n = n;
  c.set_op(op);
  if (c.own_code == 0) c.check_op_ptr(ptr, n);
  return do_scan(c, ptr, false);
}

int bspk_exscan(bspk_ptr ptr, size_t n, bspk_op op) {
  Ctx c(EXSCAN);
  int rc = c.begin();
  if (rc) return rc;
  c.n = n;
  c.set_op(op);
  if (c.own_code == 0) c.check_op_ptr(ptr, n);
  return do_scan(c, ptr, true);
}

int bspk_gather(int root, bspk_ptr dst, bspk_ptr src, size_t n) {
  Ctx c(GATHER);
  int rc = c.begin();
  if (rc) return rc;
  c.check_root(root);
  c.n = n;
  c.check_ptr(src, n, "src", &c.es);
  if (c.own_code == 0 && root == c.me) c.check_ptr(dst, static_cast<size_t>(c.p) * n, "dst", &c.es);
  if (n == 0) c.es = 0;
  return do_gather(c, dst, src, false, false);
}

int bspk_allgather(bspk_ptr dst, bspk_ptr src, size_t n) {
  Ctx c(ALLGATHER);
  int rc = c.begin();
  if (rc) return rc;
  c.n = n;
  c.check_ptr(src, n, "src", &c.es);
  if (c.own_code == 0) c.check_ptr(dst, static_cast<size_t>(c.p) * n, "dst", &c.es);
  if (n == 0) c.es = 0;
  return do_gather(c, dst, src, true, false);
}

int bspk_alltoall(bspk_ptr dst, bspk_ptr src, size_t n) {
  Ctx c(ALLTOALL);
  int rc = c.begin();
  if (rc) return rc;
  c.n = n;
  c.check_ptr(src, static_cast<size_t>(c.p) * n, "src", &c.es);
  if (c.own_code == 0) c.check_ptr(dst, static_cast<size_t>(c.p) * n, "dst", &c.es);
  if (n == 0) c.es = 0;
  return do_gather(c, dst, src, false, true);
}

int bspk_alltoallv(bspk_ptr dst, const size_t* recvcounts, const size_t* rdispls, bspk_ptr src,
                   const size_t* sendcounts, const size_t* sdispls) {
  Ctx c(ALLTOALLV);
  int rc = c.begin();
  if (rc) return rc;
  std::vector<size_t> zeros(static_cast<size_t>(c.p), 0);
  if (!recvcounts || !rdispls || !sendcounts || !sdispls) {
    c.bad(BSPK_ERR_ARG, std::string(!recvcounts ? "recvcounts" : !rdispls ? "rdispls" : !sendcounts ? "sendcounts" : "sdispls") +
                            " is NULL");
    recvcounts = rdispls = sendcounts = sdispls = zeros.data();
  }
  c.sendcounts = sendcounts;
  c.recvcounts = recvcounts;
  size_t sneed = 0, rneed = 0;
  for (int j = 0; j < c.p; j++) {
    if (sendcounts[j]) sneed = std::max(sneed, sdispls[j] + sendcounts[j]);
    if (recvcounts[j]) rneed = std::max(rneed, rdispls[j] + recvcounts[j]);
  }
  c.check_ptr(src, sneed, "src", &c.es);
  if (c.own_code == 0) c.check_ptr(dst, rneed, "dst", &c.es);
  if (c.own_code == 0 && sendcounts[c.me] != recvcounts[c.me])
    c.bad(BSPK_ERR_ARG, "sendcounts[" + std::to_string(c.me) + "] = " + std::to_string(sendcounts[c.me]) +
                            " differs from recvcounts[" + std::to_string(c.me) + "] = " + std::to_string(recvcounts[c.me]) +
                            " (this process's block to itself)");
  if (c.own_code != 0) {  // send no data: headers only
    c.sendcounts = c.recvcounts = zeros.data();
    return do_alltoallv(c, dst, zeros.data(), src, zeros.data());
  }
  return do_alltoallv(c, dst, rdispls, src, sdispls);
}

}  // extern "C"
