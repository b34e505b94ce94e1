// dsm/dsm.h -- distributed shared memory on comem: named regions, bspk_lookup,
// bspk_copy (store and fetch) with superstep semantics [BSPk §3, §6.2, Fig. 5].
//
// Directory. A named region (name, idx) has a *home* process, hash mod p.
// bspk_malloc sends Register to the home at once, bspk_free an Unregister (at
// once, or once this process's Registers are acknowledged). Nothing orders
// messages from different processes, so the home does not trust an entry
// beyond what its holder confirmed: before giving it out to a lookup made in
// superstep u, or refusing a second owner registering in superstep t, it asks
// the holder (OwnerQuery) whether the region was live in u (t); the holder
// answers once it has entered the sync ending u - 1. A second owner whose
// pair was live is refused (both owners are told; the caller's next bspk_sync
// returns BSPK_ERR_NAME); otherwise it takes the pair over.
// bspk_lookup answers from this process's own names or its cache; otherwise
// it returns a *handle* (provisional) pointer at once and asks the home. The
// home answers when it knows the pair; if it does not, it asks every process
// to report when it has entered the sync ending the lookup's superstep
// (registrations are sent by then) and answers "unknown" only after all have.
// The asker waits for its answers on entering bspk_sync, so a handle is
// resolved by the end of the superstep of the lookup. A handle names its
// maker (pid and a random salt), so another process that gets it (in a
// message or a region) resolves it by asking the maker (HandleQuery).
// Directory messages are control traffic: not counted by bspk_expect.
//
// Copies. bspk_copy(dst, src, n) with a remote dst is a *store*: the source
// elements go onto the wire at once, straight from the source frames, as
// fragments of at most one frame, cut at source and destination frame
// boundaries. With a remote src it is a *fetch*: a FetchReq goes to the
// owner. Both are counted at their target like messages (bspk.h, DSM rule 5).
// Both-local copies are queued, and counted at once as a message this process
// sent to itself and received (rule 5). Copies whose pointer is a handle not yet
// resolved are queued and issued when the sync resolves it.
//
// Puts. bspk_put(dst, src, nbytes) copies the bytes at the call into a staging
// region (comem::Comem::create_filled; one small buffer for up to 4 KiB), laid
// out so that its frame boundaries fall where dst's do, and issues a copy from
// it: a store is sent from it at once and the region is freed when those
// sends complete; a local put is queued and at the boundary the staging
// frames that cover whole destination frames are flipped in (the rest is
// copied), then the region is freed. With a handle not yet resolved the
// element size is unknown: the bytes are staged as 1-byte elements and
// reshaped at the sync (in place when the element size divides the frame
// size, else laid out again: the one case of a second copy).
//
// Boundary of superstep s on each process (sync::Engine::on_boundary), in order:
//   1. stores into this process's regions issued in s, by source pid and issue
//      order: a fragment that covers a whole destination frame (or its tail up
//      to the region's end) and arrived at the start of a frame is *flipped*
//      into the region's index array, the old frame going back to the pool;
//      anything else, and every fragment into a contiguous region
//      (bspk_malloc_contiguous: its frames stay one run), is copied (counted
//      in bytes_copied);
//   2. this process's both-local copies of s (local puts flip whole frames in,
//      except into contiguous regions);
//   3. fetch requests for s are answered from the regions as they now are
//      (fetches logically follow stores [BSPk §3]), straight from the frames;
//      the sync waits until those sends are complete before the program can
//      write the regions again;
//   4. this process's own fetches of s: wait for every reply, then flip or copy
//      them into their destinations.
// So every copy issued in s takes effect at the boundary s -> s+1 of the
// process owning its destination, never earlier; one arriving from a process
// that is ahead is held in its own frames until then (bspk.h, DSM rules 1, 2, 6).
//
// Files: directory.cpp (names, lookups, the home's answers), copy.cpp
// (issuing stores and fetches, arrivals), boundary.cpp (applying them at the
// superstep boundary, checking mode), dsm.cpp (assembly, the sync hooks).
//
// Checking mode (BSPK_CHECK=1): the writes of step 1-4 are recorded, and
// elements written in one superstep by two different issuing processes are
// reported (BSPK_ERR_CONFLICT from that bspk_sync, naming both pids).
#pragma once

#include <bspk.h>

#include <climits>
#include <deque>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/stats.h"
#include "comem/region.h"
#include "dsm/wire.h"
#include "sync/engine.h"
#include "sync/step_ring.h"

namespace bspk::dsm {

// Owner field of a pointer returned by bspk_lookup before the pair was
// resolved (a *provisional* pointer, or handle); its region field is the
// handle number on the process that made it, its sender field that process's
// pid. So a provisional pointer written into a region and followed by another
// process still names the pair it was made for (issue 12, defect 1): the
// other process asks the maker what its handle resolved to (DirOp::HandleQuery)
// and keeps the answer in a handle of its own.
constexpr int32_t kHandleOwner = INT32_MIN;

class Dsm {
 public:
  // check: BSPK_CHECK conflict detection.
  Dsm(sync::Engine& engine, comem::Comem& comem, Stats& stats, bool check);

  // A named region was just created by bspk_malloc: register it job-wide.
  void registered(const bspk_ptr& p, const char* name, int idx);
  // A local region is about to be freed: unregister its name at the next sync.
  void freeing(uint32_t region, uint32_t gen);

  // bspk_lookup.
  bspk_ptr lookup(const char* name, int idx);
  // p with a resolved handle replaced by the region it names (else p itself);
  // a handle made on another process is resolved once this process has
  // asked its maker (see adopt()).
  bspk_ptr resolve(const bspk_ptr& p) const;
  static bool is_handle(const bspk_ptr& p) { return p.region != 0 && p.owner == kHandleOwner; }

  // bspk_copy. Throws bspk::Error for errors found at the call.
  void copy(const bspk_ptr& dst, const bspk_ptr& src, uint64_t n);
  // bspk_put: nbytes from ordinary memory into the region dst points into,
  // copied at the call into a staging region (see "Puts" above) and then
  // issued as a copy from it. Throws bspk::Error for errors found at the call.
  void put(const bspk_ptr& dst, const void* src, uint64_t nbytes);
  // bspk_move: n elements of local region src into local region dst at once
  // (frame flips where whole frames line up, else copies), then src's region
  // is freed. Throws bspk::Error (nothing moved) for bad arguments.
  void move(const bspk_ptr& dst, const bspk_ptr& src, uint64_t n);

  // Copies and puts of this superstep waiting for a lookup (issued, and
  // counted in stats.copies, at the sync): part of bspk_step_sends.
  size_t deferred() const { return deferred_.size(); }

  // bspk_sync: before the engine's sync (directory answers, deferred copies)
  // and after it (errors found at the boundary, reported once the superstep
  // has ended so that no other process is left waiting).
  void before_sync() {
    entered_ = engine_.step();
    entered_any_ = true;
    // The common superstep (no directory traffic pending, nothing deferred)
    // costs these tests only: the body is out of line.
    if (!prog_waiting_.empty() || !owner_queries_.empty() || acks_waiting_ || lookups_waiting_ ||
        !unregisters_.empty() || !deferred_.empty())
      before_sync_pending();
  }
  void after_sync();
  // bspk_finalize, after the final superstep's boundary: wait until every
  // copy error the targets of this process's copies sent it has arrived
  // (each target says how many it sent, once past its own final boundary),
  // so that take_error() sees a refusal of a final-superstep copy too.
  void flush_errors();
  // The error after_sync would throw (0 if none), cleared; for bspk_finalize,
  // which must finish its collective shutdown before reporting it.
  int take_error(std::string* msg) {
    int c = post_code_;
    *msg = std::move(post_msg_);
    post_code_ = 0;
    post_msg_.clear();
    return c;
  }

 private:
  struct Frag {        // one received fragment, held until its boundary
    int src = 0;
    uint32_t seq = 0;  // store: issue number from src; fetch reply: fetch id
    uint32_t k = 0;    // fragment number
    uint32_t region = 0;
    uint32_t gen = 0;  // region's generation (high bits): stores only
    uint64_t off = 0;  // destination element offset
    uint64_t cnt = 0;  // elements
    uint32_t elem_size = 0;
    uintptr_t buf = 0;
    bool small = false;
    bool put = false;  // a store fragment of a bspk_put (for error messages)
  };
  struct FetchReq {
    int src = 0;
    uint32_t id = 0, region = 0, gen = 0, elem_size = 0, phase = 0;
    uint64_t off = 0, n = 0;
  };
  struct Box {  // copies targeting this process, issued in one superstep
    std::vector<Frag> stores;
    std::vector<FetchReq> fetches;
    std::unordered_map<uint64_t, uint32_t> partial;  // (src, seq) -> fragments so far
    void reset() {
      stores.clear();
      fetches.clear();
      partial.clear();
    }
  };
  struct Fetch {  // one of this process's fetches in the current superstep
    uint32_t id = 0;
    int owner = 0;
    uint32_t dst_region = 0, dst_gen = 0;
    uint64_t dst_off = 0, n = 0, got = 0;
    std::string error;
    std::vector<Frag> frags;
  };
  struct LocalCopy {
    uint32_t dst, src;
    uint64_t dst_off, src_off, n;
    uint32_t dst_gen, src_gen;
    bool put = false;  // src is a bspk_put's staging region: flip its whole frames in, then free it
  };
  struct Handle {
    std::string name;
    int idx = 0;
    // Invalid: the maker never issued the handle a foreign pointer names.
    enum State : uint8_t { Pending, Found, Unknown, Invalid } state = Pending;
    int maker = -1;            // >= 0: stands for handle maker_handle of that pid (asked there)
    uint32_t maker_handle = 0, maker_salt = 0;
    int owner = -1;
    uint32_t region = 0, gen = 0, elem_size = 0;
    uint64_t nelems = 0;
    uint32_t asked = 0;  // superstep of the outstanding question
  };
  struct Deferred {
    bspk_ptr dst, src;
    uint64_t n;        // elements; for a put: bytes (src is a staging region of 1-byte elements)
    bool put = false;
  };
  struct Entry {  // home directory entry
    int owner;
    uint32_t region, gen;
    uint64_t nelems;
    uint32_t elem_size;
    uint32_t live_through = 0;  // the region is known live in supersteps up to this (from its registration on)
    uint32_t reg_step = 0;      // superstep of its registration
    // Freed (by the Unregister, or as the holder answered): the pair still
    // names the region for lookups made in supersteps up to freed_at (a
    // process behind may still ask), and nothing after.
    bool freed = false;
    uint32_t freed_at = 0;
    // Does the entry name the pair's region in superstep s? 1 yes, 0 no (freed
    // before s), -1 unknown (the holder must say).
    int live_in(uint32_t s) const {
      if (freed) return wire::step_after(s, freed_at) ? 0 : 1;
      return wire::step_before(live_through, s) ? -1 : 1;
    }
  };
  struct Unresolved {  // at the home
    int asker;
    uint32_t handle, step;
    std::string name;
    int idx;
  };
  struct Round {  // at the home: progress query for a superstep
    int replies = 0;
    std::vector<int64_t> announced;  // Registers each process says it sent here (-1: no reply yet)
  };
  struct Write {  // checking mode
    uint32_t region;
    uint64_t begin, end;
    int writer;
  };

  int home(const std::string& name, int idx) const;
  bool on_msg(const wire::Header& h, uintptr_t buf, size_t len, bool small);
  void on_dir(int src, const DirRec& r);
  void send_dir(int dest, const DirRec& r);
  void ask(uint32_t handle);
  // p, or for a provisional pointer made on another process the same pointer
  // as a handle of this process (created, and its maker asked, on first use).
  // Throws BSPK_ERR_PTR for a maker pid outside the job.
  bspk_ptr adopt(const bspk_ptr& p);
  bspk_ptr handle_ptr(uint32_t id, uint64_t offset = 0) const {
    return bspk_ptr{offset, 0, id, kHandleOwner, 0, pid_, handle_salt_};
  }
  // Is p a handle of this process (its number issued here, its salt ours)?
  bool own_handle(const bspk_ptr& p) const {
    return p.sender == pid_ && p.gen == handle_salt_ && p.region != 0 && p.region < handles_.size();
  }
  // Answer a HandleQuery about this process's handle k (now, or once k is resolved).
  void answer_handle(int asker, uint32_t their, uint32_t k, uint32_t salt);
  void answer_lookup(const Unresolved& u, const Entry* e);
  void home_try_resolve();
  void answer_progress();
  void home_register(const DirRec& reg);
  void home_lookup(const Unresolved& u);
  // Is a registration of `key` made in superstep s or before held in
  // contested_ (waiting for the pair's former holder to answer)?
  bool held_registration(const std::pair<std::string, int>& key, uint32_t s) const;
  // Ask the holder of `key`'s entry whether its region was live in `step`.
  void ask_holder(const std::pair<std::string, int>& key, const Entry& e, uint32_t step);
  void answer_owner_queries();
  Box& box(uint32_t step);
  void free_buf(uintptr_t buf, bool small);
  void on_boundary(uint32_t s);
  // The live local region `region` if elements [off, off+cnt) of elem_size es
  // fit in it; else nullptr and *err says why (naming the region and this pid).
  comem::Region* target(uint32_t region, uint32_t gen, uint32_t es, uint64_t off, uint64_t cnt, std::string* err);
  // Apply a fragment into a local region; returns true if buf became one of its frames.
  bool apply(uint32_t region, uint32_t gen, uint64_t off, uint64_t cnt, uint32_t es, uintptr_t buf, bool small,
             int writer, std::string* err);
  // put: src is a bspk_put's staging region, which this takes over (freed
  // when the sends from it complete, or after the boundary for a local copy).
  void issue(const bspk_ptr& dst, const bspk_ptr& src, uint64_t n, bool put = false);
  // The checks of issue() (pids, both remote, element sizes, ranges); throws.
  void check_copy(const bspk_ptr& d, const bspk_ptr& s, uint64_t n);
  // The checks of a bspk_put into the resolved d: the number of elements,
  // with d's element size and (local d) its skew. Throws.
  uint64_t check_put(const bspk_ptr& d, uint64_t nbytes, uint32_t* es, uint32_t* dskew);
  // A bspk_put whose destination pointer is known (resolved): the checks, the
  // staging region, the issue. Throws for errors.
  void put_known(const bspk_ptr& d, const void* src, uint64_t nbytes);
  void flip_or_copy(comem::Region& d, uint64_t doff, comem::Region& sr, uint64_t soff, uint64_t n);
  uint32_t send_fragments(int dest, wire::Kind kind, wire::Header h, comem::Region& r, uint32_t region,
                          uint64_t i, uint64_t d, uint64_t base, uint64_t n, uint64_t d_end);
  void store(const bspk_ptr& dst, const bspk_ptr& src, uint64_t n, bool put);
  void fetch(const bspk_ptr& dst, const bspk_ptr& src, uint64_t n);
  void serve(const FetchReq& q);
  void post_error(int code, const std::string& msg);
  // Tell an issuer that a copy was refused (counted for flush_errors).
  void send_copy_error(int dest, const DirRec& r) {
    cerr_sent_[static_cast<size_t>(dest)]++;
    send_dir(dest, r);
  }
  void answer_flush(int dest);
  std::string describe_region(uint32_t region) const;
  std::string pair_text(const std::string& name, int idx) const;

  sync::Engine& engine_;
  comem::Comem& comem_;
  Stats& stats_;
  const bool check_;
  const int pid_, nprocs_;

  // directory, asker side
  std::vector<Handle> handles_;  // [0] unused
  uint32_t handle_salt_;         // random, in the gen field of our provisional pointers
  std::map<std::pair<std::string, int>, uint32_t> handle_of_;
  std::map<std::tuple<int, uint32_t, uint32_t>, uint32_t> foreign_of_;  // (maker, its handle, salt) -> ours
  std::map<uint32_t, std::vector<std::pair<int, uint32_t>>> handle_waiters_;  // our pending handle -> (asker, theirs)
  void before_sync_pending();  // before_sync's work when something is pending
  uint32_t lookups_waiting_ = 0;  // handles in state Pending
  uint32_t acks_waiting_ = 0;     // Registers not yet acknowledged
  std::vector<uint64_t> regs_sent_;  // Registers sent to each home
  std::vector<DirRec> unregisters_;  // sent once our Registers are acknowledged (see freeing())
  // Has this process entered the sync ending superstep s? (entered_: the
  // last such superstep, valid once entered_any_.)
  bool has_entered(uint32_t s) const { return entered_any_ && !wire::step_before(entered_, s); }
  uint32_t entered_ = 0;
  bool entered_any_ = false;
  std::vector<std::pair<int, uint32_t>> prog_waiting_;  // (home, step) queries to answer later
  // directory, home side
  // Per pair, its registrations oldest first (the last few: a lookup made in
  // superstep u is answered with the one that named the pair in u, however
  // late it arrives).
  std::map<std::pair<std::string, int>, std::vector<Entry>> dir_;
  static constexpr size_t kDirHistory = 8;
  // The registration of `key` made last in or before superstep s (nullptr: none).
  Entry* entry_at(const std::pair<std::string, int>& key, uint32_t s);
  // The registration of `key` that is (owner, region, gen), if kept.
  Entry* entry_of(const std::pair<std::string, int>& key, int owner, uint32_t region, uint32_t gen);
  std::vector<uint64_t> regs_recv_;  // Registers received from each process
  std::vector<Unresolved> unresolved_;
  std::map<uint32_t, Round> rounds_;
  // Pairs waiting for their holder's OwnerReply: the Registers and Lookups
  // that arrived meanwhile, decided when it comes (see home_register).
  struct Contested {
    std::deque<DirRec> regs;
    std::vector<Unresolved> lookups;
  };
  std::map<std::pair<std::string, int>, Contested> contested_;
  std::set<std::tuple<std::string, int, uint32_t>> asked_;  // OwnerQuery out for (pair, superstep)
  struct OwnerQ {
    int home;
    DirRec r;
  };
  std::vector<OwnerQ> owner_queries_;  // holder side: OwnerQueries to answer later
  struct Freed {
    uint32_t region, gen, step;
  };
  std::map<std::pair<std::string, int>, Freed> freed_at_;  // this process's last freed region of a pair, and when

  // copies
  sync::StepRing<Box> ring_;
  std::vector<Deferred> deferred_;
  std::vector<LocalCopy> local_;
  std::vector<Fetch> fetches_;  // this superstep's fetches (id = index + fetch_base_)
  uint32_t fetch_base_ = 1;
  uint32_t fetches_left_ = 0;
  std::vector<uint32_t> store_seq_;  // next store number per destination, this superstep
  std::vector<int> store_seq_used_;
  std::vector<Frag> frag_scratch_;
  std::vector<Write> writes_;

  int post_code_ = 0;
  std::string post_msg_;

  // copy errors (see flush_errors)
  std::vector<uint64_t> cerr_sent_, cerr_recv_;  // CopyErrors sent to / received from each pid
  std::vector<char> targeted_;                   // pids this process issued stores or fetches to
  std::vector<int64_t> cerr_told_;               // in flush_errors: what each target said (-1: not yet)
  bool final_done_ = false;                      // past the final superstep's boundary
  std::vector<int> flush_waiting_;               // ErrFlush requests to answer once final_done_
};

}  // namespace bspk::dsm
