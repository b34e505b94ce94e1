// dsm/dsm.cpp -- assembly of the DSM layer on the engine, and its part of
// bspk_sync: directory answers and deferred copies before the engine's sync,
// errors found at the boundary after it (see dsm.h).
#include <bspk.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "base/error.h"
#include "dsm/dsm.h"

namespace bspk::dsm {

using wire::Header;

Dsm::Dsm(sync::Engine& engine, comem::Comem& comem, Stats& stats, bool check)
    : engine_(engine), comem_(comem), stats_(stats), check_(check), pid_(engine.pid()),
      nprocs_(engine.nprocs()), ring_(engine.options().max_ahead) {
  handles_.resize(1);
  std::random_device rd;
  handle_salt_ = rd();
  regs_sent_.assign(static_cast<size_t>(nprocs_), 0);
  regs_recv_.assign(static_cast<size_t>(nprocs_), 0);
  store_seq_.assign(static_cast<size_t>(nprocs_), 0);
  cerr_sent_.assign(static_cast<size_t>(nprocs_), 0);
  cerr_recv_.assign(static_cast<size_t>(nprocs_), 0);
  targeted_.assign(static_cast<size_t>(nprocs_), 0);
  for (wire::Kind k : {kStore, kFetchReq, kFetchReply, kDir})
    engine_.on(k, [this](const sync::Engine::Incoming& in) {
      bool kept = on_msg(in.h, in.buf, in.len, in.small);
      engine_.note_progress();
      return kept;
    });
  engine_.on_boundary([this](uint32_t s) { on_boundary(s); });
}

void Dsm::before_sync_pending() {
  if (!prog_waiting_.empty()) answer_progress();
  if (!owner_queries_.empty()) answer_owner_queries();
  if (acks_waiting_ || lookups_waiting_) {
    engine_.wait_until([&] { return acks_waiting_ == 0 && lookups_waiting_ == 0; },
                       [&] {
                         std::string w = strprintf("the directory of named regions: %u registration(s) not "
                                                   "acknowledged, %u lookup(s) not answered",
                                                   acks_waiting_, lookups_waiting_);
                         for (size_t i = 1; i < handles_.size(); ++i)
                           if (handles_[i].state == Handle::Pending) {
                             const Handle& h = handles_[i];
                             if (h.maker >= 0)
                               w += strprintf(" (e.g. a provisional bspk_lookup pointer made on pid %d, asked there)",
                                              h.maker);
                             else
                               w += strprintf(" (e.g. %s, home pid %d)", pair_text(h.name, h.idx).c_str(),
                                              home(h.name, h.idx));
                             break;
                           }
                         return w;
                       });
  }
  for (const DirRec& r : unregisters_) send_dir(home(std::string(r.text), r.idx), r);
  unregisters_.clear();
  if (deferred_.empty()) return;
  std::vector<Deferred> todo;
  todo.swap(deferred_);
  for (const Deferred& c : todo) {
    const char* call = c.put ? "bspk_put" : "bspk_copy";
    bspk_ptr d = resolve(c.dst), s = resolve(c.src);
    if (is_handle(d) || is_handle(s)) {
      const Handle& h = handles_[(is_handle(d) ? d : s).region];
      if (h.state == Handle::Invalid) {
        post_error(BSPK_ERR_PTR,
                   strprintf("%s in superstep %u: the %s pointer claims to be a provisional bspk_lookup pointer made "
                             "on pid %d (handle %u), which made no such pointer: not a pointer returned by "
                             "bspk_lookup (corrupt, or from another job); the %s was dropped",
                             call, engine_.step(), is_handle(d) ? "destination" : "source", h.maker, h.maker_handle,
                             c.put ? "put" : "copy"));
        if (c.put) comem_.release(c.src.region);
        continue;
      }
      post_error(BSPK_ERR_NAME,
                 strprintf("%s in superstep %u uses bspk_lookup%s, but no process had registered that "
                           "pair by the end of the superstep; the %s was dropped",
                           call, engine_.step(), pair_text(h.name, h.idx).c_str(), c.put ? "put" : "copy"));
      if (c.put) comem_.release(c.src.region);
      continue;
    }
    uint32_t staged = c.put ? c.src.region : 0;  // the put's staging region while it is ours to free
    try {
      if (c.put) {
        // Now the destination's element size is known: check the byte count
        // against it and make the staged bytes elements of that size.
        if (d.owner < 0 || d.owner >= nprocs_)
          fail(BSPK_ERR_PTR, "destination pointer names pid %d, outside [0, %d)", d.owner, nprocs_);
        uint32_t es = d.owner == pid_ ? comem_.local(d).elem_size : d.elem_size;
        if (es == 0 || es > comem_.frame_size())
          fail(BSPK_ERR_PTR, "destination pointer has %u-byte elements: not a comem pointer", es);
        if (c.n % es)
          fail(BSPK_ERR_ARG, "%llu bytes are not a whole number of the destination's %u-byte elements",
               (unsigned long long)c.n, es);
        uint64_t copied = 0;
        s = comem_.reshape(staged, es, &copied);  // may replace the region
        staged = s.region;
        stats_.bytes_copied += copied;
        issue(d, s, c.n / es, true);  // takes the staging region over (unless it throws)
        staged = 0;
      } else {
        issue(d, s, c.n);
      }
    } catch (const Error& e) {
      if (staged) comem_.release(staged);
      post_error(e.code(), strprintf("%s in superstep %u (its bspk_lookup pointer resolved at the sync): %s", call,
                                     engine_.step(), e.what()));
    }
  }
}

void Dsm::answer_flush(int dest) {
  DirRec r = dir_rec(DirOp::ErrCount, "");
  r.count = cerr_sent_[static_cast<size_t>(dest)];
  send_dir(dest, r);
}

void Dsm::flush_errors() {
  final_done_ = true;
  for (int d : flush_waiting_) answer_flush(d);
  flush_waiting_.clear();
  cerr_told_.assign(static_cast<size_t>(nprocs_), -1);
  int asked = 0;
  for (int t = 0; t < nprocs_; ++t)
    if (targeted_[static_cast<size_t>(t)] && t != pid_) {
      send_dir(t, dir_rec(DirOp::ErrFlush, ""));
      ++asked;
    }
  if (!asked) return;
  auto done = [&] {
    for (int t = 0; t < nprocs_; ++t) {
      if (!targeted_[static_cast<size_t>(t)] || t == pid_) continue;
      int64_t told = cerr_told_[static_cast<size_t>(t)];
      if (told < 0 || cerr_recv_[static_cast<size_t>(t)] < static_cast<uint64_t>(told)) return false;
    }
    return true;
  };
  engine_.wait_until(done, [&] {
    std::string w = "the copy errors of the final superstep from";
    for (int t = 0; t < nprocs_; ++t)
      if (targeted_[static_cast<size_t>(t)] && t != pid_ &&
          (cerr_told_[static_cast<size_t>(t)] < 0 ||
           cerr_recv_[static_cast<size_t>(t)] < static_cast<uint64_t>(cerr_told_[static_cast<size_t>(t)])))
        w += strprintf(" pid %d", t);
    return w;
  });
}

void Dsm::after_sync() {
  if (!post_code_) return;
  int c = post_code_;
  std::string m = std::move(post_msg_);
  post_code_ = 0;
  post_msg_.clear();
  throw Error(c, m);
}

}  // namespace bspk::dsm
