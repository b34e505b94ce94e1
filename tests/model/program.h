// tests/model/program.h -- the description of one random BSP program, shared by
// the generator (gen.cpp), the reference model (model.cpp) and the runner
// (runner.cpp). Nothing here knows how BSPk is implemented: a program is a list
// of supersteps, each a sync mode plus, per process, a list of operations on
// *program* regions (named by a program-wide region number "rid", never by a
// runtime value) and *slots* (pointers a process obtained from bspk_lookup or
// read out of region bytes).
//
// Also here: the deterministic PRNG (splitmix64 with our own bounded draw, so
// every process and every build makes the same program from a seed), the byte
// patterns written into regions, the feature switches and the text form of a
// program (--dump-program / --program / --print-program).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace model {

// ---------------------------------------------------------------- PRNG
inline uint64_t mix64(uint64_t x) {  // splitmix64 finaliser
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// splitmix64 stream; below(n) is a multiply-shift bounded draw (not
// std::uniform_int_distribution, whose output differs between libraries).
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0xD1B54A32D192ED03ull + 1) {}
  uint64_t next() { return mix64(s += 0x9E3779B97F4A7C15ull); }
  uint64_t below(uint64_t n) {  // uniform in [0, n); 0 when n == 0
    return n ? static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64) : 0;
  }
  bool chance(unsigned percent) { return below(100) < percent; }
  template <class T>
  const T& pick(const std::vector<T>& v) { return v[below(v.size())]; }
};

// Byte k of the pattern `pat` (k counted from the start of the write, put or
// buffered send that uses it).
inline uint8_t pat_byte(uint64_t pat, uint64_t k) {
  return static_cast<uint8_t>(mix64(pat ^ ((k >> 3) * 0x2545F4914F6CDD1Dull)) >> ((k & 7) * 8));
}

// 64-bit FNV-1a, the digest of region and message contents.
struct Fnv {
  uint64_t h = 0xcbf29ce484222325ull;
  void add(uint8_t b) { h = (h ^ b) * 0x100000001b3ull; }
};

// ---------------------------------------------------------------- features
// Switches for parts of the contract that are known to be defective (or
// under repair) in the runtime, so that the bounded CI set can skip them
// while the fix lands. All default on.
struct Features {
  std::map<std::string, bool> on;
  Features();
  bool operator()(const std::string& name) const;
  bool set(const std::string& spec);  // "name", "no-name", "name=on|off"; false if unknown
  std::string str() const;            // "name=on,name=off,..." (every switch)
  std::string cli() const;            // "--feature no-x ..." for the switches that differ from the defaults
  static const std::vector<std::pair<std::string, std::string>>& list();  // name, what it generates
};

// ---------------------------------------------------------------- operations
enum class K {
  Malloc,   // rid n es name idx contig pat : bspk_malloc(_contiguous), then fill all of it with pat
  Free,     // rid (-1: bspk_free(BSPK_NULL), an error case)
  Write,    // rid off n pat            : local write of elements [off, off+n)
  Send,     // to rid off n [tag]       : bspk_send(to, rid+off, n), or bspk_send_tag with tag (Op::extra) != 0
  SendBuf,  // to n pat                 : bspk_send_buf(to, pattern bytes, n)
  Copy,     // dst src n                : bspk_copy(dst, src, n)
  Put,      // dst n pat                : bspk_put(dst, pattern bytes, n * elem size) (+extra bytes: error case)
  Recv,     // rid [contig]             : bspk_recv (contig: bspk_recv_contiguous); keep as region rid, or (rid -1) check and free it
  RecvEnd,  //                          : bspk_recv returns BSPK_NULL (every message claimed)
  Lookup,   // slot name idx            : slot = bspk_lookup(name, idx)
  WritePtr, // rid off src              : write the bytes of pointer src (sizeof(bspk_ptr)) at byte off of region rid
  LoadPtr,  // slot rid off             : read sizeof(bspk_ptr) bytes at byte off of region rid as a pointer into slot
  Delay,    // us busy                  : usleep / spin (puts processes supersteps apart)
  Move,     // dst src n                : bspk_move(dst, src, n): at once, then src's region is freed
  Coll,     // what root n op es rid off dst : a collective of bspk_coll.h on region rid + off (dst: the
            // gather / allgather / alltoall destination), ending the superstep in place of bspk_sync;
            // op: a built-in bspk_op, or 0 for the test's non-commutative user op on es-byte integers
};
// The collectives a Coll op makes (Op::idx).
// The last two (feature sync-allgather, drawn apart so that the seeds' other
// collectives stay as they were) are bspk.h's bspk_sync_allgather and
// bspk_sync_allgatherv: Op::n is this process's block in bytes (processes may
// differ), Op::pat the seed of its bytes (pat_byte), Op::extra bit 0
// "pass sizes" (bspk_sync_allgather); rid -1, no root, es 0.
enum CollKind {
  kBroadcast, kReduce, kAllreduce, kScan, kExscan, kGather, kAllgather, kAlltoall, kAlltoallv, kNumColl,
  kSyncAllgather = kNumColl, kSyncAllgatherv, kNumCollAll
};
const char* coll_name(int kind);
bool coll_rooted(int kind);  // broadcast, reduce, gather: Op::to is the root
inline bool coll_sync(int kind) { return kind == kSyncAllgather || kind == kSyncAllgatherv; }
// The user op of Coll ops with op 0: acc = acc * K + next on unsigned es-byte
// integers (wrapping), K an FNV prime: not commutative, so pid order shows.
inline uint64_t coll_user_k(uint64_t es) { return es == 4 ? 0x01000193ull : 0x100000001b3ull; }
const char* kname(K k);

// A pointer as the program names it: an own region (kind 'r', id = rid) or a
// slot (kind 's', id = slot), advanced by off elements with bspk_incr.
struct Ref {
  char kind = 0;
  int id = -1;
  uint64_t off = 0;
  bool operator==(const Ref& o) const { return kind == o.kind && id == o.id && off == o.off; }
};

struct Op {
  K k = K::Delay;
  int rid = -1;
  uint64_t off = 0, n = 0, es = 0;
  int to = -1;
  std::string name;  // "" anonymous
  int idx = 0;
  int contig = 0;
  uint64_t pat = 0;
  uint64_t extra = 0;  // Put: extra bytes (not a multiple of the element size: BSPK_ERR_ARG case); Send: the tag
  Ref dst, src;
  int slot = -1;
  int us = 0, busy = 0;
  std::vector<uint64_t> sc, sd, rc, rd;  // Coll alltoallv: sendcounts, sdispls, recvcounts, rdispls (p each)
};

enum class Mode { Expect, WillSend, Counted };
const char* mname(Mode m);

struct Step {
  Mode mode = Mode::Counted;
  std::vector<std::vector<Op>> ops;  // per pid
  std::vector<int> decl_at;          // per pid: declare (expect / will_send) before ops[decl_at]
};

struct Program {
  uint64_t seed = 0;
  int p = 1;
  uint64_t frame = 4096;
  std::string prefix;  // prefix of every region name of this program (names are unique per program)
  Features feat;
  std::vector<Step> steps;
  size_t nops() const;
};

std::string op_str(const Op& op);  // one line, readable and parseable
std::string program_str(const Program& pr);
bool parse_program(const std::string& text, Program* pr, std::string* err);
bool read_file(const std::string& path, std::string* out);
bool write_file(const std::string& path, const std::string& text);

// Generator (gen.cpp): the program for (seed, p, frame size, features).
Program generate(uint64_t seed, int p, uint64_t frame, const Features& f);

}  // namespace model
