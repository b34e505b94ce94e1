// tests/model/model.h -- the sequential reference model of BSPk's semantics.
//
// Written from the contract in include/bspk.h only (it includes nothing of the
// runtime, and only bspk.h for the BSPK_ERR_* codes). It runs the p virtual
// processes of a program one superstep at a time:
//   - regions (anonymous, named, contiguous, received messages) as plain byte
//     arrays, each byte tagged when it belongs to a bspk_ptr written into the
//     region (the model cannot know a pointer's bytes, only what it names);
//   - MP: a message carries the sender's bytes as they are at the send (rule 3
//     forbids changing them before the sync), is received in the next superstep
//     in order of sender pid, then send order, and is destroyed unclaimed at
//     the end of that superstep;
//   - DSM rules 1-6: copies are applied at the boundary, stores from other
//     processes first, then fetch replies (their sources read after the stores
//     and the owner's writes, before any fetch result), then each process's own
//     local copies in issue order; one issuer's overlapping copies: last wins;
//   - registrations, frees (a named pair is unregistered at the next sync),
//     lookups (exact or provisional, cached per process);
//   - the count rule 5: what bspk_expect must say on each process, and each
//     process's bspk_will_send vector;
//   - collectives (bspk_coll.h) that end a superstep in place of bspk_sync:
//     called alike on every process after only local work, they discard
//     unclaimed messages and leave each process's data as the sequential
//     definition of each call says (combined in pid order); bspk_sync_allgather
//     and bspk_sync_allgatherv end a superstep the same way, their blocks
//     checked by the runner from every process's op (they touch no region).
// It also decides whether a program stays within the contract (check()): an
// operation whose outcome the header leaves open is refused, so that every
// program the generator keeps has exactly one correct outcome.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <bspk.h>

#include "program.h"

namespace model {

constexpr uint64_t kPtrBytes = sizeof(bspk_ptr);  // a pointer written into a region as bytes

// A bspk_ptr value written into a region: what it names.
struct Sym {
  int rid;
  uint64_t off;      // element offset (the pointer is region rid advanced by off)
  bool provisional;  // a bspk_lookup pointer made before its pair was resolved on the maker
  int maker;
};

// Tags: 0 = ordinary byte; else sym * 64 + byte-in-pointer + 1.
inline uint32_t make_tag(int sym, uint64_t k) { return static_cast<uint32_t>(sym) * 64 + static_cast<uint32_t>(k) + 1; }
inline int tag_sym(uint32_t t) { return static_cast<int>((t - 1) / 64); }
inline uint64_t tag_byte(uint32_t t) { return (t - 1) % 64; }

struct Bytes {
  std::vector<uint8_t> b;
  std::vector<uint32_t> tag;
};

struct MRegion {
  int rid = -1, owner = -1;
  std::string name;  // "" anonymous
  int idx = 0;
  uint64_t n = 0, es = 1;
  int contig = 0;
  int sender = -1;       // a received message kept as a region: its sender
  uint64_t tag = 0;      // ... and its tag (bspk_tag: 0 for a region the process allocated)
  bool created = false;  // bspk_malloc / bspk_recv executed
  bool live = false;     // created and not freed
  int made_step = -1;
  Bytes d;
};

struct Msg {
  int from = -1;
  uint64_t es = 1, n = 0;
  uint64_t tag = 0;  // bspk_send_tag's (0: bspk_send, bspk_send_buf)
  Bytes d;
};

struct Slot {
  int rid = -1;
  uint64_t off = 0;
  bool provisional = false;
  bool from_lookup = false;
  int step = -1;
};

// What one operation must do on its process.
struct OpResult {
  int code = 0;          // the call's return (BSPK_OK or a BSPK_ERR_*)
  bool has_msg = false;  // Recv: a message is expected (else BSPK_NULL)
  Msg msg;
  bool exact = false;  // Lookup: exact at once (accessors valid during the superstep)
  int sym = -1;        // WritePtr / LoadPtr: the pointer written / read
};

class Model {
 public:
  explicit Model(const Program& pr);

  // Superstep s begins. `whole`: the complete step when replaying a program
  // (its named registrations are announced up front, as a lookup by any
  // process in s may name them); nullptr while the generator builds it.
  void begin_step(const Step* whole);
  // Is op, issued next by pid, within the contract? *code: what the call returns.
  bool check(int pid, const Op& op, int* code, std::string* why);
  // Apply op (check()ed first; on a violation error() is set and the result is empty).
  OpResult exec(int pid, const Op& op);
  // The boundary: copies, frees, inboxes of the next superstep, resolutions.
  void end_step();

  // Declarations of the current superstep (after every exec of it).
  int expect_count(int pid) const { return cnt_[pid]; }
  const std::vector<int>& will_send(int pid) const { return will_[pid]; }

  int step() const { return step_; }
  const std::string& error() const { return err_; }
  const MRegion* region(int rid) const;
  std::vector<int> live_owned(int pid) const;  // rids, ascending
  const std::vector<Sym>& syms() const { return syms_; }
  const std::deque<Msg>& inbox(int pid) const { return inbox_[pid]; }
  const std::map<int, Slot>& slots(int pid) const { return slots_[pid]; }
  // Pairs registered now (name#idx -> rid), and when each freed pair was freed.
  const std::map<std::string, int>& registered() const { return reg_; }
  int freed_at(const std::string& pair) const;
  bool used_pair(int pid, const std::string& pair) const;
  bool region_busy(int rid) const;
  // Has pid already issued, in this superstep, a copy into elements [a, b) of rid?
  bool own_target(int rid, uint64_t a, uint64_t b, int pid) const;  // used (or freed) in the current superstep
  // The pointer symbols lying whole in region rid: (byte offset, sym).
  std::vector<std::pair<uint64_t, int>> whole_ptrs(int rid) const;

 private:
  struct Iv {
    uint64_t a, b;
  };
  struct Tgt {
    uint64_t a, b;
    int cls, issuer;  // cls 0 store, 1 fetch target, 2 local copy
  };
  struct RStep {
    std::vector<Iv> zsrc, fsrc;
    std::vector<Tgt> tgt;
    bool used = false, freed = false;
  };
  struct Pending {
    int issuer, cls, drid;
    uint64_t doff, n;
    int srid;
    uint64_t soff;
    Bytes data;  // stores and local copies: the source at the call (rule 3 keeps it unchanged)
  };
  struct Resolved {
    int rid, owner;
    uint64_t off;
  };
  bool resolve(int pid, const Ref& r, Resolved* out, bool* provisional, std::string* why) const;
  bool target_ok(int rid, uint64_t a, uint64_t b, int cls, int issuer, const Iv* extra_src, std::string* why);
  bool zsrc_ok(int rid, uint64_t a, uint64_t b, std::string* why);
  bool fsrc_ok(int rid, uint64_t a, uint64_t b, std::string* why);
  bool usable(int rid, std::string* why) const;
  static std::string pair(const std::string& name, int idx) { return name + "#" + std::to_string(idx); }
  void fill(Bytes* d, uint64_t at, uint64_t nbytes, uint64_t pat);
  static Bytes slice(const Bytes& d, uint64_t at, uint64_t nbytes);
  static void paste(Bytes* d, uint64_t at, const Bytes& s);

  const Program& pr_;
  int p_;
  int step_ = -1;
  std::string err_;
  std::map<int, MRegion> regions_;
  std::vector<Sym> syms_;
  std::vector<std::deque<Msg>> inbox_;
  std::vector<std::map<int, Slot>> slots_;
  std::map<std::string, int> reg_;       // pair -> rid
  std::map<std::string, int> freed_at_;  // pair -> superstep of its last free
  std::map<std::string, int> freed_by_;  // pair -> the process that freed it last
  std::vector<std::map<std::string, int>> used_;      // per pid: pair -> rid it used (the lookup cache)
  std::vector<std::map<std::string, int>> resolved_;  // per pid: pair -> rid resolved at an earlier boundary
  // current superstep
  std::unordered_map<int, RStep> rs_;
  std::vector<std::pair<int, Msg>> sends_;  // (sender, message), in exec order
  std::vector<Pending> pend_;
  std::vector<std::pair<int, std::string>> lookups_;  // (pid, pair)
  std::vector<int> cnt_;
  std::vector<std::vector<int>> will_;
  std::vector<char> nonlocal_;  // per pid: communicated (or tried to) in this superstep
  std::vector<Op> coll_;        // per pid: its collective of this superstep (k == Coll), else k == Delay
  bool coll_ok(int pid, const Op& op, std::string* why);
  void apply_coll();
};

// Run the whole program through a fresh model: "" if it stays within the
// contract, else the first violation (superstep, pid, operation, why).
// *where (optional): superstep, pid and index of the first operation outside
// it (index -1: not an operation's fault).
struct Where {
  int step = -1, pid = -1, index = -1;
};
std::string validate(const Program& pr, Where* where = nullptr);

}  // namespace model
