// tests/model/runner.cpp -- every process runs its part of a program through
// the public API (<bspk.h>, linked against the bspk library only), and checks
// it against the reference model, which each process runs in full alongside
// (it is deterministic and cheap):
//   - the return code of every call (BSPK_OK, or the error the header names
//     for the deliberate error cases);
//   - every message it receives: order, sender, element size, count and the
//     content (digest, then the first differing element);
//   - every region it owns, before each bspk_sync (rule 1: nothing of the
//     superstep's copies is visible yet, messages or copies that arrive from
//     processes running ahead included) and after it (the copies applied);
//   - pointers found in regions (bspk_owner, bspk_nelems, bspk_elem_size of
//     what the bytes hold), and bspk_lookup pointers after their superstep;
//   - bspk_sync returns BSPK_OK with the exact bspk_expect count the model
//     computes per rule 5 (or the model's bspk_will_send vector).
// On the first difference the process prints the seed, p, provider, frame
// size, superstep, pid, region and element and the command that replays the
// case, and ends the job (bspk_abort).
#include <bspk.h>
#include <bspk_coll.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>

#include "driver.h"
#include "model.h"

namespace model {

namespace {

// The user op of Coll ops with op 0 (program.h coll_user_k).
template <class T>
void affine(void* acc, const void* next, size_t n) {
  auto* a = static_cast<T*>(acc);
  auto* b = static_cast<const T*>(next);
  for (size_t i = 0; i < n; ++i) a[i] = static_cast<T>(a[i] * static_cast<T>(coll_user_k(sizeof(T))) + b[i]);
}

struct Runner {
  const Options& o;
  const Program& pr;
  int me, p;
  uint64_t job_step0;  // job superstep at which this program began
  Model m;
  std::map<int, bspk_ptr> handles;  // rid -> pointer to element 0 (kept after a free: stale)
  std::map<int, bspk_ptr> slots;
  std::string provider;
  int cur_step = -1;
  uint64_t ops_done = 0;

  Runner(const Options& o_, const Program& pr_, uint64_t js)
      : o(o_), pr(pr_), me(bspk_pid()), p(bspk_nprocs()), job_step0(js), m(pr_) {
    const char* pv = std::getenv("BSPK_PROVIDER");
    if (!pv || !*pv) pv = std::getenv("FI_PROVIDER");
    provider = pv && *pv ? pv : "shm";
  }

  std::string replay() const {
    std::ostringstream s;
    std::string feat = pr.feat.cli();
    std::string prog = o.program_file.empty() ? "--seed " + std::to_string(pr.seed) : "--program " + o.program_file;
    s << "  replay: BSPK_FRAME_SIZE=" << pr.frame << " BSPK_SYNC_TIMEOUT=60 " << o.bspkrun << " -n " << p
      << " --provider " << provider << " " << o.self << " " << prog << (feat.empty() ? "" : " " + feat) << "\n";
    if (o.program_file.empty() && (o.seeds > 1))
      s << "  (the failing job: ... " << o.self << " --seed " << o.seed << " --seeds " << o.seeds << ")\n";
    s << "  shrink: " << o.self << " --shrink " << prog << " --np " << p << " --provider " << provider
      << " --frame-size " << pr.frame << (feat.empty() ? "" : " " + feat) << "\n";
    return s.str();
  }

  [[noreturn]] void diff(const std::string& what) {
    std::fprintf(stdout,
                 "bspk_model: DIFFERENCE seed=%" PRIu64 " p=%d provider=%s frame=%" PRIu64
                 " superstep=%d pid=%d (job superstep %" PRIu64 ")\n  %s\n%s",
                 pr.seed, p, provider.c_str(), pr.frame, cur_step, me, job_step0 + static_cast<uint64_t>(cur_step < 0 ? 0 : cur_step),
                 what.c_str(), replay().c_str());
    std::fflush(stdout);
    bspk_abort("bspk_model: difference from the model (seed %" PRIu64 ", superstep %d, pid %d)", pr.seed, cur_step, me);
  }

  void expect_rc(int rc, int want, const Op& op) {
    if (rc == want) return;
    diff("`" + op_str(op) + "` returned " + std::to_string(rc) + ", the model says " + std::to_string(want) +
         " (" + bspk_error_string() + ")");
  }

  // Visit nbytes bytes of the region p points into, from byte `first` (counted
  // from p's element), frame piece by frame piece (bspk_span).
  template <class F>
  void for_bytes(bspk_ptr base, uint64_t first, uint64_t nbytes, F&& f) {
    if (nbytes == 0) return;
    uint64_t es = bspk_elem_size(base);
    bspk_ptr q = bspk_incr(base, static_cast<ptrdiff_t>(first / es));
    uint64_t skip = first % es, k = 0;
    while (k < nbytes) {
      void* b = nullptr;
      size_t cnt = bspk_span(q, &b);
      if (cnt == 0) diff("bspk_span returned 0 with " + std::to_string(nbytes - k) + " bytes left to visit");
      auto* bb = static_cast<uint8_t*>(b);
      uint64_t take = std::min<uint64_t>(cnt * es - skip, nbytes - k);
      for (uint64_t i = 0; i < take; ++i) f(bb + skip + i, k + i);
      k += take;
      skip = 0;
      q = bspk_incr(q, static_cast<ptrdiff_t>(cnt));
    }
  }

  std::vector<uint8_t> read_all(bspk_ptr base, uint64_t nbytes) {
    std::vector<uint8_t> v(nbytes);
    for_bytes(base, 0, nbytes, [&](uint8_t* b, uint64_t k) { v[k] = *b; });
    return v;
  }

  bspk_ptr ptr_of(const Ref& r) {
    bspk_ptr base = r.kind == 'r' ? handles.at(r.id) : slots.at(r.id);
    return r.off ? bspk_incr(base, static_cast<ptrdiff_t>(r.off)) : base;
  }

  // The accessors of a pointer value against what the model says it names.
  void check_ptr(const bspk_ptr& v, int rid, uint64_t off, const std::string& where) {
    const MRegion* r = m.region(rid);
    if (!r || !r->live) return;
    int owner = bspk_owner(v);
    size_t ne = bspk_nelems(v), es = bspk_elem_size(v);
    if (owner != r->owner || ne != r->n - off || es != r->es)
      diff(where + ": pointer to r" + std::to_string(rid) + "+" + std::to_string(off) + " has owner/nelems/elem_size " +
           std::to_string(owner) + "/" + std::to_string(ne) + "/" + std::to_string(es) + ", the model says " +
           std::to_string(r->owner) + "/" + std::to_string(r->n - off) + "/" + std::to_string(r->es));
  }

  // Contents (masking pointer bytes, which the model cannot know) and the
  // whole pointers in them.
  void compare(const std::string& what, const Bytes& want, uint64_t es, const std::vector<uint8_t>& got, bool ptrs) {
    Fnv dw, dg;
    for (size_t i = 0; i < want.b.size(); ++i)
      if (!want.tag[i]) dw.add(want.b[i]), dg.add(got[i]);
    if (dw.h != dg.h) {
      for (size_t i = 0; i < want.b.size(); ++i)
        if (!want.tag[i] && want.b[i] != got[i]) {
          char buf[256];
          std::snprintf(buf, sizeof buf,
                        ": first differing element %zu (byte %zu of it, byte %zu of %zu): expected 0x%02x, got 0x%02x "
                        "(digest expected %016" PRIx64 ", got %016" PRIx64 ")",
                        i / es, i % es, i, want.b.size(), want.b[i], got[i], dw.h, dg.h);
          diff(what + buf);
        }
    }
    if (!ptrs) return;
    for (size_t i = 0; i + kPtrBytes <= want.tag.size(); ++i) {
      uint32_t t = want.tag[i];
      if (!t || tag_byte(t) != 0) continue;
      int s = tag_sym(t);
      bool whole = true;
      for (uint64_t k = 1; k < kPtrBytes && whole; ++k) whole = want.tag[i + k] == make_tag(s, k);
      if (!whole) continue;
      const Sym& sy = m.syms()[s];
      if (sy.provisional) continue;  // accessors of a provisional value: only on its maker, after its superstep
      bspk_ptr v;
      std::memcpy(&v, got.data() + i, sizeof v);
      check_ptr(v, sy.rid, sy.off, what + ", pointer at byte " + std::to_string(i));
    }
  }

  std::string rdesc(int rid) {
    const MRegion* r = m.region(rid);
    std::ostringstream s;
    s << "region r" << rid;
    if (!r->name.empty()) s << " (" << r->name << ", " << r->idx << ")";
    if (r->sender >= 0) s << " (received from " << r->sender << ")";
    s << " n=" << r->n << " es=" << r->es << (r->contig ? " contiguous" : "");
    return s.str();
  }

  // A contiguous region (bspk_malloc_contiguous, bspk_recv_contiguous) lies
  // in one piece: bspk_is_contiguous, and bspk_span from element 0 spans all.
  void check_contiguous(bspk_ptr h, uint64_t n, const std::string& what) {
    void* b = nullptr;
    size_t got = n ? bspk_span(h, &b) : 0;
    if (!bspk_is_contiguous(h) || got != n)
      diff(what + ": not in one piece (bspk_is_contiguous " + std::to_string(bspk_is_contiguous(h)) + ", bspk_span " +
           std::to_string(got) + " of " + std::to_string(n) + " elements)");
  }

  void compare_regions(const char* when) {
    for (int rid : m.live_owned(me)) {
      const MRegion* r = m.region(rid);
      bspk_ptr h = handles.at(rid);
      if (bspk_nelems(h) != r->n || (r->n && bspk_elem_size(h) != r->es))
        diff(std::string(when) + ": " + rdesc(rid) + ": bspk_nelems/elem_size " + std::to_string(bspk_nelems(h)) + "/" +
             std::to_string(bspk_elem_size(h)));
      compare(std::string(when) + ": " + rdesc(rid), r->d, r->es, read_all(h, r->n * r->es), true);
      if (r->contig) check_contiguous(h, r->n, std::string(when) + ": " + rdesc(rid));
      if (r->n > 0 && bspk_tag(h) != r->tag)
        diff(std::string(when) + ": " + rdesc(rid) + ": bspk_tag " + std::to_string(bspk_tag(h)) + ", the model says " +
             std::to_string(r->tag) + (r->sender >= 0 ? "" : " (a region this process allocated)"));
    }
  }

  void exec(const Op& op, const OpResult& want) {
    int rc = BSPK_OK;
    switch (op.k) {
      case K::Malloc: {
        const char* name = op.name.empty() ? "" : op.name.c_str();
        bspk_ptr h = op.contig ? bspk_malloc_contiguous(name, op.idx, op.n, op.es) : bspk_malloc(name, op.idx, op.n, op.es);
        if (bspk_is_null(h)) diff("`" + op_str(op) + "` returned BSPK_NULL: " + bspk_error_string());
        if (bspk_owner(h) != me || bspk_nelems(h) != op.n || bspk_elem_size(h) != op.es)
          diff("`" + op_str(op) + "`: owner/nelems/elem_size " + std::to_string(bspk_owner(h)) + "/" +
               std::to_string(bspk_nelems(h)) + "/" + std::to_string(bspk_elem_size(h)));
        handles[op.rid] = h;
        for_bytes(h, 0, op.n * op.es, [&](uint8_t* b, uint64_t k) { *b = pat_byte(op.pat, k); });
        break;
      }
      case K::Free:
        rc = bspk_free(op.rid < 0 ? BSPK_NULL : handles.at(op.rid));
        expect_rc(rc, want.code, op);
        break;
      case K::Write: {
        uint64_t es = m.region(op.rid)->es;
        for_bytes(handles.at(op.rid), op.off * es, op.n * es, [&](uint8_t* b, uint64_t k) { *b = pat_byte(op.pat, k); });
        break;
      }
      case K::Send:
        if (op.extra)
          rc = bspk_send_tag(op.to, bspk_incr(handles.at(op.rid), static_cast<ptrdiff_t>(op.off)), op.n, op.extra);
        else
          rc = bspk_send(op.to, bspk_incr(handles.at(op.rid), static_cast<ptrdiff_t>(op.off)), op.n);
        expect_rc(rc, want.code, op);
        break;
      case K::SendBuf: {
        std::vector<uint8_t> buf(op.n);
        for (uint64_t k = 0; k < op.n; ++k) buf[k] = pat_byte(op.pat, k);
        rc = bspk_send_buf(op.to, op.n ? buf.data() : nullptr, op.n);
        expect_rc(rc, want.code, op);
        break;
      }
      case K::Copy:
        rc = bspk_copy(ptr_of(op.dst), ptr_of(op.src), op.n);
        expect_rc(rc, want.code, op);
        break;
      case K::Put: {
        const MRegion* dr = op.dst.kind == 'r' ? m.region(op.dst.id) : m.region(m.slots(me).at(op.dst.id).rid);
        uint64_t nbytes = op.n * dr->es + op.extra;
        std::vector<uint8_t> buf(nbytes + 1);
        for (uint64_t k = 0; k < nbytes; ++k) buf[k] = pat_byte(op.pat, k);
        rc = bspk_put(ptr_of(op.dst), buf.data(), nbytes);
        expect_rc(rc, want.code, op);
        break;
      }
      case K::Recv: {
        bspk_ptr r = op.contig ? bspk_recv_contiguous() : bspk_recv();
        if (!want.has_msg) {
          if (!bspk_is_null(r))
            diff("bspk_recv returned a message (from " + std::to_string(bspk_sender_id(r)) + ", " +
                 std::to_string(bspk_nelems(r)) + " elements), the model says none is left");
          break;
        }
        const Msg& w = want.msg;
        std::string what = "received message (from " + std::to_string(w.from) + ", n=" + std::to_string(w.n) +
                           " es=" + std::to_string(w.es) + ")";
        if (bspk_is_null(r)) diff("bspk_recv returned BSPK_NULL, the model expects a " + what);
        int from = bspk_sender_id(r);
        size_t n = bspk_nelems(r), es = bspk_elem_size(r);
        if (from != w.from || n != w.n || (n && es != w.es) || bspk_owner(r) != me)
          diff("bspk_recv: message from " + std::to_string(from) + " with n=" + std::to_string(n) +
               " es=" + std::to_string(es) + " owner=" + std::to_string(bspk_owner(r)) + ", the model expects a " + what +
               " (order: sender pid, then send order)");
        compare(what, w.d, w.es, read_all(r, w.n * w.es), true);
        if (op.contig) check_contiguous(r, w.n, what + " from bspk_recv_contiguous");
        if (n > 0) {  // bspk_tag of the first and the last element
          uint64_t t0 = bspk_tag(r), t1 = bspk_tag(bspk_incr(r, static_cast<ptrdiff_t>(n - 1)));
          if (t0 != w.tag || t1 != w.tag)
            diff(what + ": bspk_tag " + std::to_string(t0) + " (last element " + std::to_string(t1) + "), the model says " +
                 std::to_string(w.tag));
        }
        if (op.rid >= 0) {
          handles[op.rid] = r;
        } else if (int f = bspk_free(r); f != BSPK_OK) {
          diff("bspk_free of a received message returned " + std::to_string(f));
        }
        break;
      }
      case K::RecvEnd: {
        bspk_ptr r = bspk_recv();
        if (!bspk_is_null(r))
          diff("bspk_recv returned a message (from " + std::to_string(bspk_sender_id(r)) +
               "), the model says every message was claimed");
        break;
      }
      case K::Lookup: {
        bspk_ptr v = bspk_lookup(op.name.c_str(), op.idx);
        if (bspk_is_null(v)) diff("`" + op_str(op) + "` returned BSPK_NULL: " + bspk_error_string());
        slots[op.slot] = v;
        // Exact at once for the owner; for a pair resolved before, only if
        // lookups are resolved by the end of their superstep (lookup-resolved).
        if (want.exact && (pr.feat("lookup-resolved") || m.region(m.slots(me).at(op.slot).rid)->owner == me))
          check_ptr(v, m.slots(me).at(op.slot).rid, 0, "`" + op_str(op) + "` (exact at once)");
        break;
      }
      case K::WritePtr: {
        bspk_ptr v = ptr_of(op.src);
        auto* src = reinterpret_cast<const uint8_t*>(&v);
        for_bytes(handles.at(op.rid), op.off, kPtrBytes, [&](uint8_t* b, uint64_t k) { *b = src[k]; });
        break;
      }
      case K::LoadPtr: {
        bspk_ptr v;
        auto* dst = reinterpret_cast<uint8_t*>(&v);
        for_bytes(handles.at(op.rid), op.off, kPtrBytes, [&](uint8_t* b, uint64_t k) { dst[k] = *b; });
        slots[op.slot] = v;
        const Sym& sy = m.syms()[want.sym];
        if (!sy.provisional) check_ptr(v, sy.rid, sy.off, "`" + op_str(op) + "`");
        break;
      }
      case K::Move:
        rc = bspk_move(ptr_of(op.dst), ptr_of(op.src), op.n);
        expect_rc(rc, want.code, op);
        break;
      case K::Coll: {
        if (coll_sync(op.idx)) {
          run_sync_allgather(op);
          break;
        }
        static const bspk_op user4 = bspk_op_create(affine<uint32_t>, 4, 0), user8 = bspk_op_create(affine<uint64_t>, 8, 0);
        const bspk_op o = op.pat ? static_cast<bspk_op>(op.pat) : op.es == 4 ? user4 : user8;
        const bspk_ptr src = bspk_incr(handles.at(op.rid), static_cast<ptrdiff_t>(op.off));
        const bspk_ptr dst = op.dst.kind ? ptr_of(op.dst) : BSPK_NULL;
        switch (op.idx) {
          case kBroadcast: rc = bspk_broadcast(op.to, src, op.n); break;
          case kReduce: rc = bspk_reduce(op.to, src, op.n, o); break;
          case kAllreduce: rc = bspk_allreduce(src, op.n, o); break;
          case kScan: rc = bspk_scan(src, op.n, o); break;
          case kExscan: rc = bspk_exscan(src, op.n, o); break;
          case kGather: rc = bspk_gather(op.to, dst, src, op.n); break;
          case kAllgather: rc = bspk_allgather(dst, src, op.n); break;
          case kAlltoall: rc = bspk_alltoall(dst, src, op.n); break;
          case kAlltoallv: {
            std::vector<size_t> rcv(op.rc.begin(), op.rc.end()), rdv(op.rd.begin(), op.rd.end());
            std::vector<size_t> scv(op.sc.begin(), op.sc.end()), sdv(op.sd.begin(), op.sd.end());
            rc = bspk_alltoallv(dst, rcv.data(), rdv.data(), src, scv.data(), sdv.data());
            break;
          }
        }
        if (rc != BSPK_OK)
          diff("`" + op_str(op) + "` returned " + std::to_string(rc) + ": " + bspk_coll_error_string());
        break;
      }
      case K::Delay:
        if (op.busy) {
          double end = bspk_time() + op.us * 1e-6;
          volatile uint64_t x = 0;
          while (bspk_time() < end) x = x + 1;
        } else {
          usleep(static_cast<useconds_t>(op.us));
        }
        break;
    }
    ++ops_done;
  }

  // A superstep ended by bspk_sync_allgather(v) (program.h kSyncAllgather):
  // this process's block of op.n bytes (seed op.pat), every process's block
  // and size from the step's ops; the results are checked against bspk.h's
  // definition: block j cut to this process's nbytes at all + j * nbytes (the
  // rest of its place untouched), sizes[j] its nbytes, BSPK_ERR_ARG naming
  // the first pid whose nbytes differs when sizes is NULL (the blocks still
  // copied); for bspk_sync_allgatherv, read called once per process in pid
  // order with its whole block.
  struct Seen {
    std::vector<int> pids;
    std::vector<std::vector<uint8_t>> blocks;
  };
  static void sync_read(int pid, const void* block, size_t nbytes, void* arg) {
    auto* s = static_cast<Seen*>(arg);
    s->pids.push_back(pid);
    const auto* b = static_cast<const uint8_t*>(block);
    s->blocks.emplace_back(b, b + nbytes);
  }
  static uint8_t canary(uint64_t i) { return static_cast<uint8_t>(0xA5 ^ (i * 7)); }

  void run_sync_allgather(const Op& op) {
    const Step& st = pr.steps.at(static_cast<size_t>(cur_step));
    std::vector<uint64_t> n(p), pat(p);
    for (int j = 0; j < p; ++j) n[j] = st.ops[j].back().n, pat[j] = st.ops[j].back().pat;
    std::vector<uint8_t> mine(op.n);
    for (uint64_t k = 0; k < op.n; ++k) mine[k] = pat_byte(op.pat, k);
    // got[0, len): pid j's block up to cut, then the canary of all[at + k]
    auto block_diff = [&](int j, const uint8_t* got, uint64_t len, uint64_t cut, uint64_t at, const char* where) {
      for (uint64_t k = 0; k < len; ++k) {
        const uint8_t want = k < cut ? pat_byte(pat[j], k) : canary(at + k);
        if (got[k] != want)
          diff("`" + op_str(op) + "`: pid " + std::to_string(j) + "'s block (" + std::to_string(n[j]) + " bytes), byte " +
               std::to_string(k) + " " + where + ": expected " + std::to_string(want) + ", got " + std::to_string(got[k]));
      }
    };
    if (op.idx == kSyncAllgather) {
      const bool with_sizes = op.extra & 1;
      std::vector<uint8_t> all(static_cast<size_t>(p) * op.n);
      for (size_t i = 0; i < all.size(); ++i) all[i] = canary(i);
      std::vector<size_t> sizes(static_cast<size_t>(p), 777777);
      const int rc = bspk_sync_allgather(op.n ? mine.data() : nullptr, op.n, op.n ? all.data() : nullptr,
                                         with_sizes ? sizes.data() : nullptr);
      int differs = -1;
      for (int j = 0; j < p && differs < 0; ++j)
        if (n[j] != op.n) differs = j;
      const int want = !with_sizes && differs >= 0 ? BSPK_ERR_ARG : BSPK_OK;
      if (rc != want)
        diff("`" + op_str(op) + "` returned " + std::to_string(rc) + ", expected " + std::to_string(want) + ": " +
             bspk_error_string());
      if (want != BSPK_OK) {
        const std::string names = "pid " + std::to_string(differs) + " passed nbytes = " + std::to_string(n[differs]);
        if (std::strstr(bspk_error_string(), names.c_str()) == nullptr)
          diff("`" + op_str(op) + "`: the error does not say \"" + names + "\": " + bspk_error_string());
      }
      for (int j = 0; j < p; ++j) {
        const uint64_t at = static_cast<uint64_t>(j) * op.n;
        block_diff(j, all.data() + at, op.n, std::min(n[j], op.n), at, "in all");
        if (with_sizes && sizes[j] != n[j])
          diff("`" + op_str(op) + "`: sizes[" + std::to_string(j) + "] = " + std::to_string(sizes[j]) + ", expected " +
               std::to_string(n[j]));
      }
      return;
    }
    // allgatherv: the block in 1-4 pieces cut where the seed says, empty ones NULL
    std::vector<iovec> iov;
    uint64_t x = op.pat, at = 0;
    const int pieces = 1 + static_cast<int>(x % 4);
    for (int i = 0; i < pieces; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      const uint64_t len = i == pieces - 1 ? op.n - at : (x >> 33) % (op.n - at + 1);
      iov.push_back(iovec{len ? mine.data() + at : nullptr, len});
      at += len;
    }
    Seen seen;
    const int rc = bspk_sync_allgatherv(iov.data(), static_cast<int>(iov.size()), sync_read, &seen);
    if (rc != BSPK_OK)
      diff("`" + op_str(op) + "` returned " + std::to_string(rc) + ": " + bspk_error_string());
    if (seen.pids.size() != static_cast<size_t>(p))
      diff("`" + op_str(op) + "`: read called " + std::to_string(seen.pids.size()) + " times, not once per process");
    for (int j = 0; j < p; ++j) {
      if (seen.pids[j] != j)
        diff("`" + op_str(op) + "`: read's call " + std::to_string(j) + " was for pid " + std::to_string(seen.pids[j]) +
             " (pid order expected)");
      if (seen.blocks[j].size() != n[j])
        diff("`" + op_str(op) + "`: read got " + std::to_string(seen.blocks[j].size()) + " bytes for pid " +
             std::to_string(j) + ", which passed " + std::to_string(n[j]));
      block_diff(j, seen.blocks[j].data(), n[j], n[j], 0, "in read");
    }
  }

  void declare(Mode mode) {
    int rc = BSPK_OK;
    if (mode == Mode::Expect) rc = bspk_expect(m.expect_count(me));
    else if (mode == Mode::WillSend) rc = bspk_will_send(m.will_send(me).data());
    if (rc != BSPK_OK)
      diff(std::string("declaration (") + mname(mode) + ", expect " + std::to_string(m.expect_count(me)) + ") returned " +
           std::to_string(rc) + ": " + bspk_error_string());
  }

  void run() {
    for (size_t s = 0; s < pr.steps.size(); ++s) {
      cur_step = static_cast<int>(s);
      const Step& st = pr.steps[s];
      m.begin_step(&st);
      std::vector<OpResult> mine;
      for (int q = 0; q < p; ++q)
        for (const Op& op : st.ops[q]) {
          OpResult r = m.exec(q, op);
          if (q == me) mine.push_back(std::move(r));
        }
      if (!m.error().empty()) {
        std::fprintf(stderr, "bspk_model: the program leaves the contract: %s\n", m.error().c_str());
        bspk_abort("bspk_model: invalid program");
      }
      const auto& ops = st.ops[me];
      // A superstep ended by a collective (the process's last op) instead of bspk_sync.
      const bool coll = !ops.empty() && ops.back().k == K::Coll;
      const size_t nloc = ops.size() - (coll ? 1 : 0);
      size_t decl = std::min<size_t>(static_cast<size_t>(std::max(0, st.decl_at[me])), nloc);
      for (size_t i = 0; i < nloc; ++i) {
        if (i == decl && !coll) declare(st.mode);
        exec(ops[i], mine[i]);
      }
      if (decl == nloc && !coll) declare(st.mode);
      compare_regions(coll ? "before the collective" : "before bspk_sync");
      if (coll) {
        m.end_step();
        exec(ops.back(), mine.back());
        compare_regions("after the collective");
        if (!bspk_is_null(bspk_recv())) diff("a message is left to bspk_recv after the collective (its inbox must be empty)");
        continue;
      }
      std::vector<int> made;
      for (const Op& op : ops)
        if (op.k == K::Lookup) made.push_back(op.slot);
      m.end_step();
      int rc = bspk_sync();
      if (rc != BSPK_OK) diff("bspk_sync returned " + std::to_string(rc) + ": " + bspk_error_string());
      compare_regions("after bspk_sync");
      // "afterwards the values of the region it names"
      for (int sl : made)
        if (pr.feat("lookup-resolved") || m.region(m.slots(me).at(sl).rid)->owner == me)
          check_ptr(slots.at(sl), m.slots(me).at(sl).rid, 0, "bspk_lookup pointer after its superstep");
    }
    cur_step = static_cast<int>(pr.steps.size());
    // Clean up for the next program: free what is left; one counted superstep.
    for (int rid : m.live_owned(me))
      if (int rc = bspk_free(handles.at(rid)); rc != BSPK_OK) diff("cleanup: bspk_free returned " + std::to_string(rc));
    if (int rc = bspk_sync(); rc != BSPK_OK) diff("cleanup: bspk_sync returned " + std::to_string(rc) + ": " + bspk_error_string());
  }
};

}  // namespace

int run_job(const Options& o) {
  if (!std::getenv("BSPK_ERRORS")) setenv("BSPK_ERRORS", "quiet", 1);  // the deliberate error calls
  if (bspk_init(nullptr, nullptr) != BSPK_OK) {
    std::fprintf(stderr, "bspk_model: bspk_init: %s\n", bspk_error_string());
    return 1;
  }
  bspk_stats st;
  bspk_get_stats(&st);
  uint64_t frame = st.frame_size;
  int p = bspk_nprocs();
  Program file;
  if (!o.program_file.empty()) {
    std::string text, err;
    if (!read_file(o.program_file, &text) || !parse_program(text, &file, &err))
      bspk_abort("bspk_model: cannot read %s: %s", o.program_file.c_str(), err.c_str());
    if (file.p != p || file.frame != frame)
      bspk_abort("bspk_model: %s is for p=%d and frame size %" PRIu64 " (run it with bspkrun -n %d and BSPK_FRAME_SIZE=%" PRIu64
                 "), this job has p=%d and frame size %" PRIu64,
                 o.program_file.c_str(), file.p, file.frame, file.p, file.frame, p, frame);
    std::string bad = validate(file);
    if (!bad.empty()) bspk_abort("bspk_model: %s leaves the contract: %s", o.program_file.c_str(), bad.c_str());
  }
  uint64_t nprog = 0, nsteps = 0, nops = 0, job_step = 0;
  double t0 = bspk_time();
  uint64_t count = o.program_file.empty() ? o.seeds : 1;
  for (uint64_t i = 0; i < count; ++i) {
    Program gen;
    if (o.program_file.empty()) gen = generate(o.seed + i, p, frame, o.feat);
    const Program& pr = o.program_file.empty() ? gen : file;
    if (o.verbose && bspk_pid() == 0) std::printf("bspk_model: seed %" PRIu64 ": %zu supersteps, %zu operations\n", pr.seed, pr.steps.size(), pr.nops());
    Runner r(o, pr, job_step);
    r.run();
    ++nprog;
    nsteps += pr.steps.size();
    nops += pr.nops();
    job_step += pr.steps.size() + 1;
  }
  if (bspk_pid() == 0) {
    const char* pv = std::getenv("BSPK_PROVIDER");
    std::printf("bspk_model: %" PRIu64 " programs (%s), p=%d, provider=%s, frame=%" PRIu64 ": %" PRIu64
                " supersteps, %" PRIu64 " operations, 0 differences, %.1f s\n",
                nprog,
                o.program_file.empty() ? ("seeds " + std::to_string(o.seed) + ".." + std::to_string(o.seed + o.seeds - 1)).c_str()
                                       : o.program_file.c_str(),
                p, pv && *pv ? pv : "shm", frame, nsteps, nops, bspk_time() - t0);
    std::fflush(stdout);
  }
  int rc = bspk_finalize();
  if (rc != BSPK_OK) {
    std::fprintf(stderr, "bspk_model: bspk_finalize returned %d: %s\n", rc, bspk_error_string());
    return 1;
  }
  return 0;
}

}  // namespace model
