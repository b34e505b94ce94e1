#include "dsm/dsm.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"

namespace bspk::dsm {

using wire::Header;
using wire::Kind;

namespace {
// Contiguous bytes <-> elements [off, off+n) of a region, frame by frame.
void scatter(comem::Region& r, uint64_t off, uint64_t n, const char* from) {
  for (uint64_t i = off, end = off + n; i < end;) {
    uint64_t c = std::min(r.span(i), end - i);
    std::memcpy(r.elem(i), from, c * r.elem_size);
    from += c * r.elem_size;
    i += c;
  }
}
void gather(const comem::Region& r, uint64_t off, uint64_t n, char* to) {
  for (uint64_t i = off, end = off + n; i < end;) {
    uint64_t c = std::min(r.span(i), end - i);
    std::memcpy(to, r.elem(i), c * r.elem_size);
    to += c * r.elem_size;
    i += c;
  }
}
}  // namespace

Dsm::Dsm(sync::Engine& engine, comem::Comem& comem, Stats& stats, bool check)
    : engine_(engine), comem_(comem), stats_(stats), check_(check), pid_(engine.pid()),
      nprocs_(engine.nprocs()) {
  handles_.resize(1);
  regs_sent_.assign(static_cast<size_t>(nprocs_), 0);
  regs_recv_.assign(static_cast<size_t>(nprocs_), 0);
  store_seq_.assign(static_cast<size_t>(nprocs_), 0);
  ring_.resize(sync::ring_size(engine.options().max_ahead));
  engine_.set_dsm_handler(
      [this](const Header& h, uintptr_t b, size_t len, bool small) { return on_msg(h, b, len, small); });
  engine_.set_boundary([this](uint32_t s) { on_boundary(s); });
}

// ---------------------------------------------------------------- directory

int Dsm::home(const std::string& name, int idx) const {
  uint64_t x = 1469598103934665603ull;  // FNV-1a over the name and the index
  for (unsigned char c : name) x = (x ^ c) * 1099511628211ull;
  for (int b = 0; b < 4; ++b) x = (x ^ ((static_cast<uint32_t>(idx) >> (8 * b)) & 0xff)) * 1099511628211ull;
  return static_cast<int>(x % static_cast<uint64_t>(nprocs_));
}

std::string Dsm::pair_text(const std::string& name, int idx) const {
  return strprintf("(\"%s\", %d)", name.c_str(), idx);
}

void Dsm::send_dir(int dest, const DirRec& r) { engine_.send_control(dest, Kind::Dir, &r, sizeof r); }

static DirRec dir_rec(DirOp op, const std::string& text) {
  DirRec r{};
  r.op = static_cast<uint32_t>(op);
  std::snprintf(r.text, sizeof r.text, "%s", text.c_str());
  return r;
}

void Dsm::registered(const bspk_ptr& p, const char* name, int idx) {
  DirRec r = dir_rec(DirOp::Register, name);
  r.idx = idx;
  r.owner = pid_;
  r.region = p.region;
  r.nelems = p.nelems;
  r.elem_size = p.elem_size;
  r.step = engine_.step();
  int h = home(name, idx);
  regs_sent_[static_cast<size_t>(h)]++;
  acks_waiting_++;
  send_dir(h, r);
}

void Dsm::freeing(uint32_t region) {
  const auto* nm = comem_.name_of(region);
  if (!nm) return;
  DirRec r = dir_rec(DirOp::Unregister, nm->first);
  r.idx = nm->second;
  r.owner = pid_;
  r.region = region;
  unregisters_.push_back(r);
}

bspk_ptr Dsm::lookup(const char* name, int idx) {
  if (!name || !*name) fail(BSPK_ERR_ARG, "the name is NULL or empty (anonymous regions cannot be looked up)");
  std::string nm(name);
  if (nm.size() > 63) fail(BSPK_ERR_ARG, "name '%.20s...' is longer than 63 bytes", name);
  bspk_ptr mine = comem_.find_named(nm, idx);
  if (mine.region) return mine;
  uint32_t id;
  auto it = handle_of_.find({nm, idx});
  if (it != handle_of_.end()) {
    id = it->second;
    Handle& h = handles_[id];
    if (h.state == Handle::Found) return resolve(bspk_ptr{0, 0, id, kHandleOwner, 0, kHandleOwner});
    if (h.state == Handle::Pending) return bspk_ptr{0, 0, id, kHandleOwner, 0, kHandleOwner};
  } else {
    id = static_cast<uint32_t>(handles_.size());
    handles_.push_back(Handle{});
    handles_[id].name = nm;
    handles_[id].idx = idx;
    handle_of_[{nm, idx}] = id;
  }
  ask(id);  // again, if the home said "unknown" in an earlier superstep
  return bspk_ptr{0, 0, id, kHandleOwner, 0, kHandleOwner};
}

// Ask the pair's home to resolve handle `id` for the current superstep.
void Dsm::ask(uint32_t id) {
  Handle& h = handles_[id];
  h.state = Handle::Pending;
  h.asked = engine_.step();
  lookups_waiting_++;
  DirRec r = dir_rec(DirOp::Lookup, h.name);
  r.idx = h.idx;
  r.handle = id;
  r.step = h.asked;
  send_dir(home(h.name, h.idx), r);
}

bspk_ptr Dsm::resolve(const bspk_ptr& p) const {
  if (!is_handle(p) || p.region >= handles_.size()) return p;
  const Handle& h = handles_[p.region];
  if (h.state != Handle::Found) return p;
  return bspk_ptr{p.offset, h.nelems, h.region, h.owner, h.elem_size, h.owner};
}

void Dsm::answer_lookup(const Unresolved& u, const Entry* e) {
  DirRec r = dir_rec(DirOp::LookupReply, u.name);
  r.idx = u.idx;
  r.handle = u.handle;
  r.step = u.step;
  r.status = e ? 0 : 1;
  if (e) {
    r.owner = e->owner;
    r.region = e->region;
    r.nelems = e->nelems;
    r.elem_size = e->elem_size;
  }
  send_dir(u.asker, r);
}

// A progress round for superstep s is complete when every process has entered
// the sync ending s and every Register it sent here by then has arrived: a pair
// unknown now was not registered in any superstep <= s.
void Dsm::home_try_resolve() {
  for (auto it = rounds_.begin(); it != rounds_.end();) {
    Round& rd = it->second;
    bool done = rd.replies == nprocs_;
    for (int q = 0; done && q < nprocs_; ++q)
      done = regs_recv_[static_cast<size_t>(q)] >= static_cast<uint64_t>(rd.announced[static_cast<size_t>(q)]);
    if (!done) {
      ++it;
      continue;
    }
    const uint32_t s = it->first;
    for (size_t i = 0; i < unresolved_.size();) {
      Unresolved& u = unresolved_[i];
      if (u.step <= s) {
        auto e = dir_.find({u.name, u.idx});
        answer_lookup(u, e == dir_.end() ? nullptr : &e->second);
        unresolved_[i] = std::move(unresolved_.back());
        unresolved_.pop_back();
      } else {
        ++i;
      }
    }
    it = rounds_.erase(it);
  }
}

void Dsm::answer_progress() {
  for (size_t i = 0; i < prog_waiting_.size();) {
    auto [h, s] = prog_waiting_[i];
    if (entered_ >= static_cast<int64_t>(s)) {
      DirRec r = dir_rec(DirOp::ProgReply, "");
      r.step = s;
      r.count = regs_sent_[static_cast<size_t>(h)];
      send_dir(h, r);
      prog_waiting_[i] = prog_waiting_.back();
      prog_waiting_.pop_back();
    } else {
      ++i;
    }
  }
}

void Dsm::on_dir(int src, const DirRec& r) {
  std::string name(r.text, strnlen(r.text, sizeof r.text));
  switch (static_cast<DirOp>(r.op)) {
    case DirOp::Register: {
      regs_recv_[static_cast<size_t>(src)]++;
      auto key = std::make_pair(name, r.idx);
      auto it = dir_.find(key);
      DirRec ack = dir_rec(DirOp::RegAck, name);
      ack.idx = r.idx;
      if (it != dir_.end() && it->second.owner != src) {
        // Keep the first owner; both are told.
        ack.status = 1;
        ack.owner = it->second.owner;
        ack.region = it->second.region;
        ack.step = r.step;
        send_dir(src, ack);
        DirRec n = dir_rec(DirOp::DupNotice,
                           strprintf("the region %s registered by this process is also registered by pid %d "
                                     "(bspk_malloc in its superstep %u): names must be unique in the whole job",
                                     pair_text(name, r.idx).c_str(), src, r.step));
        send_dir(it->second.owner, n);
      } else {
        // New, or the same owner registering the pair again after freeing it.
        dir_[key] = Entry{src, r.region, r.nelems, r.elem_size};
        send_dir(src, ack);
        const Entry& e = dir_[key];
        for (size_t i = 0; i < unresolved_.size();) {
          if (unresolved_[i].name == name && unresolved_[i].idx == r.idx) {
            answer_lookup(unresolved_[i], &e);
            unresolved_[i] = std::move(unresolved_.back());
            unresolved_.pop_back();
          } else {
            ++i;
          }
        }
      }
      home_try_resolve();
      break;
    }
    case DirOp::RegAck:
      if (acks_waiting_) acks_waiting_--;
      if (r.status)
        post_error(BSPK_ERR_NAME,
                   strprintf("bspk_malloc%s: the pair is already registered by pid %d, so pid %d cannot "
                             "register it too (names are unique in the whole job; this region stays "
                             "allocated but has no job-wide name)",
                             pair_text(name, r.idx).c_str(), r.owner, pid_));
      break;
    case DirOp::Unregister: {
      auto it = dir_.find({name, r.idx});
      if (it != dir_.end() && it->second.owner == src && it->second.region == r.region) dir_.erase(it);
      break;
    }
    case DirOp::Lookup: {
      auto it = dir_.find({name, r.idx});
      Unresolved u{src, r.handle, r.step, name, r.idx};
      if (it != dir_.end()) {
        answer_lookup(u, &it->second);
        break;
      }
      unresolved_.push_back(u);
      if (rounds_.lower_bound(r.step) == rounds_.end()) {
        Round& rd = rounds_[r.step];
        rd.announced.assign(static_cast<size_t>(nprocs_), -1);
        DirRec q = dir_rec(DirOp::ProgQuery, "");
        q.step = r.step;
        for (int d = 0; d < nprocs_; ++d) send_dir(d, q);
      }
      break;
    }
    case DirOp::LookupReply: {
      if (r.handle == 0 || r.handle >= handles_.size()) break;
      Handle& h = handles_[r.handle];
      if (h.state != Handle::Pending) break;
      if (r.status == 0) {
        h.state = Handle::Found;
        h.owner = r.owner;
        h.region = r.region;
        h.nelems = r.nelems;
        h.elem_size = r.elem_size;
      } else {
        h.state = Handle::Unknown;
      }
      if (lookups_waiting_) lookups_waiting_--;
      break;
    }
    case DirOp::ProgQuery:
      prog_waiting_.emplace_back(src, r.step);
      answer_progress();
      break;
    case DirOp::ProgReply: {
      auto it = rounds_.find(r.step);
      if (it == rounds_.end()) break;
      auto& a = it->second.announced[static_cast<size_t>(src)];
      if (a < 0) it->second.replies++;
      a = static_cast<int64_t>(r.count);
      home_try_resolve();
      break;
    }
    case DirOp::DupNotice:
      post_error(BSPK_ERR_NAME, name);
      break;
    case DirOp::CopyError: {
      if (r.status == 2) {  // a fetch of ours was refused: it is complete (with nothing)
        uint32_t k = r.handle - fetch_base_;
        if (r.handle >= fetch_base_ && k < fetches_.size() && fetches_[k].got < fetches_[k].n) {
          fetches_[k].got = fetches_[k].n;
          fetches_[k].error = name;
          fetches_left_--;
        }
        break;
      }
      post_error(r.idx, name);
      break;
    }
    default:
      engine_.raise_async(BSPK_ERR_FABRIC, strprintf("directory message of unknown type %u from pid %d", r.op, src));
  }
}

// ---------------------------------------------------------------- copies

void Dsm::copy(const bspk_ptr& dst, const bspk_ptr& src, uint64_t n) {
  if (dst.region == 0) fail(BSPK_ERR_PTR, "destination pointer is BSPK_NULL");
  if (src.region == 0) fail(BSPK_ERR_PTR, "source pointer is BSPK_NULL");
  bspk_ptr d = resolve(dst), s = resolve(src);
  if (is_handle(d) || is_handle(s)) {
    for (const bspk_ptr* p : {&d, &s}) {
      if (!is_handle(*p)) continue;
      if (p->region >= handles_.size()) fail(BSPK_ERR_PTR, "not a pointer returned by bspk_lookup");
      // Unknown at an earlier sync: ask again for this superstep.
      if (handles_[p->region].state == Handle::Unknown) ask(p->region);
    }
    // A local side must be valid now (its frames are read or written later).
    if (!is_handle(d) && d.owner == pid_) comem_.local(d);
    if (!is_handle(s) && s.owner == pid_) comem_.local(s);
    deferred_.push_back(Deferred{dst, src, n});
    return;
  }
  issue(d, s, n);
}

void Dsm::issue(const bspk_ptr& d, const bspk_ptr& s, uint64_t n) {
  const bool dl = d.owner == pid_, sl = s.owner == pid_;
  for (const bspk_ptr* p : {&d, &s})
    if (p->owner < 0 || p->owner >= nprocs_)
      fail(BSPK_ERR_PTR, "%s pointer names pid %d, outside [0, %d)", p == &d ? "destination" : "source",
           p->owner, nprocs_);
  if (!dl && !sl)
    fail(BSPK_ERR_ARG,
         "both regions are remote (destination on pid %d, source on pid %d): a copy stores from a "
         "local region into a remote one, or fetches from a remote region into a local one",
         d.owner, s.owner);
  uint64_t dn = d.nelems, sn = s.nelems;
  uint32_t des = d.elem_size, ses = s.elem_size;
  if (dl) {
    comem::Region& r = comem_.local(d);
    dn = r.nelems;
    des = r.elem_size;
  }
  if (sl) {
    comem::Region& r = comem_.local(s);
    sn = r.nelems;
    ses = r.elem_size;
  }
  if (des != ses)
    fail(BSPK_ERR_ARG, "element sizes differ: destination %u bytes, source %u bytes", des, ses);
  if (d.offset > dn || n > dn - d.offset)
    fail(BSPK_ERR_RANGE, "destination: %llu elements from element %llu run past the end of the region (%llu elements on pid %d)",
         (unsigned long long)n, (unsigned long long)d.offset, (unsigned long long)dn, d.owner);
  if (s.offset > sn || n > sn - s.offset)
    fail(BSPK_ERR_RANGE, "source: %llu elements from element %llu run past the end of the region (%llu elements on pid %d)",
         (unsigned long long)n, (unsigned long long)s.offset, (unsigned long long)sn, s.owner);
  if (n == 0) return;
  stats_.copies++;
  if (dl && sl) local_.push_back(LocalCopy{d.region, s.region, d.offset, s.offset, n});
  else if (!dl) store(d, s, n);
  else fetch(d, s, n);
}

// Send n elements of local region r from element i as fragments of at most one
// frame, cut at r's frame boundaries and at the destination's, whose element
// for i is d (destination regions are taken as unskewed: named regions are).
// Each header carries the fragment's destination element minus `base`. A
// fragment that fills a destination frame (or its part up to d_end, the
// destination's end) is sent to land in a whole frame, so that it can be
// flipped in; others go by size class. Returns the sends still reading r.
uint32_t Dsm::send_fragments(int dest, Kind kind, Header h, comem::Region& r, uint32_t region, uint64_t i,
                             uint64_t d, uint64_t base, uint64_t n, uint64_t d_end) {
  const uint32_t es = r.elem_size;
  const uint64_t epf = r.epf;
  frag_scratch_.clear();
  for (uint64_t left = n; left;) {
    uint64_t c = std::min({r.span(i), epf - d % epf, left});
    Frag f;
    f.off = d;
    f.cnt = c;
    f.buf = reinterpret_cast<uintptr_t>(r.elem(i));
    frag_scratch_.push_back(f);
    i += c;
    d += c;
    left -= c;
  }
  h.nframes = static_cast<uint32_t>(frag_scratch_.size());
  uint32_t inflight = 0;
  for (uint32_t k = 0; k < h.nframes; ++k) {
    const Frag& f = frag_scratch_[k];
    h.frame = k;
    h.u32[1] = static_cast<uint32_t>(f.off - base);
    h.u32[2] = static_cast<uint32_t>((f.off - base) >> 32);
    bool whole = f.off % epf == 0 && (f.cnt == epf || f.off + f.cnt == d_end);
    uint64_t tag = whole || f.cnt * es > wire::kSmallPayload ? wire::kTagLarge : wire::kTagSmall;
    inflight += engine_.send_frame(dest, kind, h, reinterpret_cast<void*>(f.buf), f.cnt * es,
                                   comem_.desc(r, f.buf), region, tag);
  }
  return inflight;
}

void Dsm::store(const bspk_ptr& dst, const bspk_ptr& src, uint64_t n) {
  comem::Region& r = comem_.local(src);
  const int dest = dst.owner;
  if (store_seq_[static_cast<size_t>(dest)] == 0) store_seq_used_.push_back(dest);
  Header h{};
  h.seq = store_seq_[static_cast<size_t>(dest)]++;
  h.nelems = n;
  h.elem_size = r.elem_size;
  h.u32[0] = dst.region;
  uint32_t inflight = send_fragments(dest, Kind::Store, h, r, src.region, src.offset, dst.offset, 0, n, dst.nelems);
  comem_.send_started(r, inflight);
  engine_.count_sent(dest);
  stats_.bytes_stored += n * r.elem_size;
}

void Dsm::fetch(const bspk_ptr& dst, const bspk_ptr& src, uint64_t n) {
  comem::Region& r = comem_.local(dst);
  Fetch f;
  f.id = fetch_base_ + static_cast<uint32_t>(fetches_.size());
  f.owner = src.owner;
  f.dst_region = dst.region;
  f.dst_off = dst.offset;
  f.n = n;
  uint64_t fr, phase;
  r.locate(dst.offset, &fr, &phase);
  Header h{};
  h.seq = f.id;
  h.nelems = n;
  h.elem_size = r.elem_size;
  h.skew = static_cast<uint32_t>(phase);
  h.u32[0] = src.region;
  h.u32[1] = static_cast<uint32_t>(src.offset);
  h.u32[2] = static_cast<uint32_t>(src.offset >> 32);
  fetches_.push_back(std::move(f));
  fetches_left_++;
  engine_.send_frame(src.owner, Kind::FetchReq, h, nullptr, 0, nullptr, 0, wire::kTagSmall);
  engine_.count_sent(src.owner);
}

// Answer a fetch request at the boundary, straight from the region's frames.
void Dsm::serve(const FetchReq& q) {
  std::string err;
  comem::Region* r = target(q.region, q.elem_size, q.off, q.n, &err);
  if (!r) {
    DirRec e = dir_rec(DirOp::CopyError, strprintf("bspk_copy (fetch) by pid %d: the source: %s; nothing fetched",
                                                   q.src, err.c_str()));
    e.status = 2;
    e.handle = q.id;
    send_dir(q.src, e);
    return;
  }
  Header h{};
  h.seq = q.id;
  h.nelems = q.n;
  h.elem_size = r->elem_size;
  uint32_t inflight = send_fragments(q.src, Kind::FetchReply, h, *r, q.region, q.off, q.phase, q.phase, q.n, q.phase + q.n);
  comem_.send_started(*r, inflight);
  stats_.bytes_fetched += q.n * r->elem_size;
}

// ---------------------------------------------------------------- arrivals

Dsm::Box& Dsm::box(uint32_t step) {
  Box& b = ring_[step & (ring_.size() - 1)];  // size is a power of two
  if (b.step != step) {
    for (Frag& f : b.stores) free_buf(f.buf, f.small);
    b.stores.clear();
    b.fetches.clear();
    b.partial.clear();
    b.step = step;
  }
  return b;
}

void Dsm::free_buf(uintptr_t buf, bool small) {
  if (buf) (small ? *comem_.small_pool() : comem_.frames()).free(buf);
}

bool Dsm::on_msg(const Header& h, uintptr_t buf, size_t len, bool small) {
  const Kind kind = static_cast<Kind>(h.kind);
  if (kind == Kind::Dir) {
    if (len != sizeof(DirRec)) {
      engine_.raise_async(BSPK_ERR_FABRIC, strprintf("malformed directory message from pid %d", h.src));
      return false;
    }
    DirRec r;
    std::memcpy(&r, reinterpret_cast<const void*>(buf), sizeof r);
    r.text[sizeof r.text - 1] = 0;
    on_dir(h.src, r);
    return false;
  }
  if (h.elem_size == 0 || h.elem_size > comem_.frame_size() || len % h.elem_size) {
    engine_.raise_async(BSPK_ERR_FABRIC, strprintf("malformed copy fragment from pid %d (superstep %u)", h.src, h.step));
    return false;
  }
  const uint64_t off = uint64_t{h.u32[1]} | (uint64_t{h.u32[2]} << 32);
  if (kind == Kind::FetchReply) {
    uint32_t k = h.seq - fetch_base_;
    if (h.seq < fetch_base_ || k >= fetches_.size()) {
      engine_.raise_async(BSPK_ERR_FABRIC,
                          strprintf("a fetch reply from pid %d (superstep %u) matches no fetch of this process", h.src, h.step));
      return false;
    }
    Fetch& f = fetches_[k];
    Frag g;
    g.src = h.src;
    g.seq = h.seq;
    g.k = h.frame;
    g.region = f.dst_region;
    g.off = f.dst_off + off;
    g.cnt = len / h.elem_size;
    g.elem_size = h.elem_size;
    g.buf = buf;
    g.small = small;
    f.frags.push_back(g);
    f.got += g.cnt;
    if (f.got == f.n) fetches_left_--;
    return true;
  }
  if (h.step < engine_.step()) {
    // Later than its superstep: counted (and reported) as an excess arrival.
    engine_.message_arrived(h.step, h.src);
    return false;
  }
  Box& b = box(h.step);
  if (kind == Kind::FetchReq) {
    FetchReq q;
    q.src = h.src;
    q.id = h.seq;
    q.region = h.u32[0];
    q.elem_size = h.elem_size;
    q.phase = h.skew;
    q.off = off;
    q.n = h.nelems;
    b.fetches.push_back(q);
    engine_.message_arrived(h.step, h.src);
    return false;
  }
  // Store fragment: held in its own buffer until the boundary of its superstep.
  Frag g;
  g.src = h.src;
  g.seq = h.seq;
  g.k = h.frame;
  g.region = h.u32[0];
  g.off = off;
  g.cnt = len / h.elem_size;
  g.elem_size = h.elem_size;
  g.buf = buf;
  g.small = small;
  b.stores.push_back(g);
  if (h.nframes <= 1) {
    engine_.message_arrived(h.step, h.src);
  } else {
    uint64_t key = (uint64_t(uint32_t(h.src)) << 32) | h.seq;
    if (++b.partial[key] == h.nframes) {
      b.partial.erase(key);
      engine_.message_arrived(h.step, h.src);
    }
  }
  return true;
}

// ---------------------------------------------------------------- boundary

bool Dsm::apply(uint32_t region, uint64_t off, uint64_t cnt, uint32_t es, uintptr_t buf, bool small, int writer,
                std::string* err) {
  comem::Region* r = target(region, es, off, cnt, err);
  if (!r) {
    *err = "the destination: " + *err + "; nothing written";
    return false;
  }
  if (check_) writes_.push_back(Write{region, off, off + cnt, writer});
  uint64_t f, slot;
  r->locate(off, &f, &slot);
  // Frame flip: the fragment fills destination frame f (or its used part) and
  // sits at the start of a whole frame; nothing else reads the old frame.
  if (!small && !r->small && slot == 0 && (cnt == r->epf || off + cnt == r->nelems) && r->inflight == 0) {
    comem_.frames().free(r->frames[f]);  // slot == 0 implies an unbiased frame
    r->frames[f] = buf;
    stats_.frames_flipped++;
    return true;
  }
  scatter(*r, off, cnt, reinterpret_cast<const char*>(buf));
  stats_.bytes_copied += cnt * es;
  return false;
}

comem::Region* Dsm::target(uint32_t region, uint32_t es, uint64_t off, uint64_t cnt, std::string* err) {
  comem::Region* r = comem_.find(region);
  if (!r)
    *err = strprintf("region %#x on pid %d was freed", region, pid_);
  else if (r->elem_size != es)
    *err = strprintf("element sizes differ (%s on pid %d has %u-byte elements, the other side %u)",
                     describe_region(region).c_str(), pid_, r->elem_size, es);
  else if (off > r->nelems || cnt > r->nelems - off)
    *err = strprintf("elements [%llu, %llu) run past the end of %s on pid %d (%llu elements)",
                     (unsigned long long)off, (unsigned long long)(off + cnt), describe_region(region).c_str(), pid_,
                     (unsigned long long)r->nelems);
  else
    return r;
  return nullptr;
}

std::string Dsm::describe_region(uint32_t region) const {
  if (const auto* nm = comem_.name_of(region)) return "region " + pair_text(nm->first, nm->second);
  return strprintf("region %#x", region);
}

void Dsm::post_error(int code, const std::string& msg) {
  if (post_code_ == 0) {
    post_code_ = code;
    post_msg_ = msg;
  } else {
    // Several errors in one superstep: the first is returned, all are printed.
    std::fprintf(stderr, "bspk: error (pid %d, superstep %u, also): %s\n", pid_, engine_.step(), msg.c_str());
  }
}

void Dsm::on_boundary(uint32_t s) {
  for (int d : store_seq_used_) store_seq_[static_cast<size_t>(d)] = 0;
  store_seq_used_.clear();
  Box& b = ring_[s & (ring_.size() - 1)];
  const bool have_box = b.step == s && (!b.stores.empty() || !b.fetches.empty());
  if (!have_box && local_.empty() && fetches_.empty()) return;
  writes_.clear();
  std::string err;
  if (have_box) {
    // 1. Stores, in (source pid, issue order, fragment) order: the last store of
    // one process wins over its earlier ones.
    std::sort(b.stores.begin(), b.stores.end(), [](const Frag& x, const Frag& y) {
      return x.src != y.src ? x.src < y.src : x.seq != y.seq ? x.seq < y.seq : x.k < y.k;
    });
    int last_src = -1;
    uint32_t last_seq = 0;
    for (Frag& f : b.stores) {
      err.clear();
      if (!apply(f.region, f.off, f.cnt, f.elem_size, f.buf, f.small, f.src, &err)) free_buf(f.buf, f.small);
      f.buf = 0;
      if (!err.empty() && (f.src != last_src || f.seq != last_seq)) {
        last_src = f.src;
        last_seq = f.seq;
        DirRec e = dir_rec(DirOp::CopyError, strprintf("bspk_copy (store) into pid %d in superstep %u: %s",
                                                       pid_, s, err.c_str()));
        e.idx = BSPK_ERR_PTR;
        send_dir(f.src, e);
      }
    }
    b.stores.clear();
  }
  // 2. Copies between two local regions.
  for (const LocalCopy& c : local_) {
    comem::Region* d = comem_.find(c.dst);
    comem::Region* sr = comem_.find(c.src);
    if (!d || !sr) {
      post_error(BSPK_ERR_PTR, strprintf("bspk_copy between local regions in superstep %u: the %s region was freed "
                                         "before the superstep ended; nothing written", s, d ? "source" : "destination"));
      continue;
    }
    const uint32_t es = d->elem_size;
    if (c.dst == c.src && c.src_off < c.dst_off + c.n && c.dst_off < c.src_off + c.n) {
      // Overlapping ranges of one region: through a buffer, as memmove would.
      std::vector<char> tmp(c.n * es);
      gather(*sr, c.src_off, c.n, tmp.data());
      scatter(*d, c.dst_off, c.n, tmp.data());
    } else {
      for (uint64_t i = 0; i < c.n;) {  // source frame by source frame
        uint64_t k = std::min(sr->span(c.src_off + i), c.n - i);
        scatter(*d, c.dst_off + i, k, static_cast<const char*>(sr->elem(c.src_off + i)));
        i += k;
      }
    }
    if (check_) writes_.push_back(Write{c.dst, c.dst_off, c.dst_off + c.n, pid_});
    stats_.bytes_copied += c.n * es;
  }
  local_.clear();
  // 3. Fetches from this process, answered from the regions as they are now.
  if (have_box) {
    std::sort(b.fetches.begin(), b.fetches.end(),
              [](const FetchReq& x, const FetchReq& y) { return x.src != y.src ? x.src < y.src : x.id < y.id; });
    for (const FetchReq& q : b.fetches) serve(q);
    b.fetches.clear();
  }
  // 4. Our own fetches: every reply in; and the replies we sent must have left
  // the frames before the program may write them again.
  if (fetches_left_ || engine_.outstanding(s))
    engine_.wait_until([&] { return fetches_left_ == 0 && engine_.outstanding(s) == 0; },
                       [&] {
                         std::string w = strprintf("ending the superstep: %u fetch(es) of this process await replies",
                                                   fetches_left_);
                         for (const Fetch& f : fetches_)
                           if (f.got < f.n) {
                             w += strprintf(" (e.g. %llu of %llu elements from pid %d)", (unsigned long long)f.got,
                                            (unsigned long long)f.n, f.owner);
                             break;
                           }
                         if (engine_.outstanding(s))
                           w += strprintf("; %llu fetch reply send(s) not complete", (unsigned long long)engine_.outstanding(s));
                         return w;
                       });
  for (Fetch& f : fetches_) {
    if (!f.error.empty()) post_error(BSPK_ERR_PTR, f.error);
    std::sort(f.frags.begin(), f.frags.end(), [](const Frag& x, const Frag& y) { return x.k < y.k; });
    for (Frag& g : f.frags) {
      err.clear();
      if (!apply(g.region, g.off, g.cnt, g.elem_size, g.buf, g.small, pid_, &err)) free_buf(g.buf, g.small);
      if (!err.empty())
        post_error(BSPK_ERR_PTR, strprintf("bspk_copy (fetch from pid %d) in superstep %u: %s", f.owner, s, err.c_str()));
    }
  }
  fetch_base_ += static_cast<uint32_t>(fetches_.size());
  fetches_.clear();
  fetches_left_ = 0;
  // Checking mode: elements written in s by two different processes.
  if (check_ && writes_.size() > 1) {
    std::sort(writes_.begin(), writes_.end(), [](const Write& x, const Write& y) {
      return x.region != y.region ? x.region < y.region : x.begin < y.begin;
    });
    for (size_t i = 0; i + 1 < writes_.size();) {
      uint64_t end = writes_[i].end;
      int writer = writes_[i].writer;
      size_t j = i + 1;
      for (; j < writes_.size() && writes_[j].region == writes_[i].region; ++j) {
        const Write& w = writes_[j];
        if (w.begin < end && w.writer != writer) {
          post_error(BSPK_ERR_CONFLICT,
                     strprintf("conflicting writes in superstep %u (BSPK_CHECK=1): pids %d and %d both wrote "
                               "elements [%llu, %llu) of %s on pid %d; the result is one of the written values",
                               s, std::min(writer, w.writer), std::max(writer, w.writer), (unsigned long long)w.begin,
                               (unsigned long long)std::min(end, w.end), describe_region(w.region).c_str(), pid_));
        }
        if (w.end > end) {
          end = w.end;
          writer = w.writer;
        }
      }
      i = j;
    }
  }
}

// ---------------------------------------------------------------- sync

void Dsm::before_sync() {
  entered_ = engine_.step();
  if (!prog_waiting_.empty()) answer_progress();
  for (const DirRec& r : unregisters_) send_dir(home(std::string(r.text), r.idx), r);
  unregisters_.clear();
  if (acks_waiting_ || lookups_waiting_) {
    engine_.wait_until([&] { return acks_waiting_ == 0 && lookups_waiting_ == 0; },
                       [&] {
                         std::string w = strprintf("the directory of named regions: %u registration(s) not "
                                                   "acknowledged, %u lookup(s) not answered",
                                                   acks_waiting_, lookups_waiting_);
                         for (size_t i = 1; i < handles_.size(); ++i)
                           if (handles_[i].state == Handle::Pending) {
                             w += strprintf(" (e.g. %s, home pid %d)", pair_text(handles_[i].name, handles_[i].idx).c_str(),
                                            home(handles_[i].name, handles_[i].idx));
                             break;
                           }
                         return w;
                       });
  }
  if (deferred_.empty()) return;
  std::vector<Deferred> todo;
  todo.swap(deferred_);
  for (const Deferred& c : todo) {
    bspk_ptr d = resolve(c.dst), s = resolve(c.src);
    if (is_handle(d) || is_handle(s)) {
      const Handle& h = handles_[(is_handle(d) ? d : s).region];
      post_error(BSPK_ERR_NAME,
                 strprintf("bspk_copy in superstep %u uses bspk_lookup%s, but no process had registered that "
                           "pair by the end of the superstep; the copy was dropped",
                           engine_.step(), pair_text(h.name, h.idx).c_str()));
      continue;
    }
    try {
      issue(d, s, c.n);
    } catch (const Error& e) {
      post_error(e.code(), strprintf("bspk_copy in superstep %u (its bspk_lookup pointer resolved at the sync): %s",
                                     engine_.step(), e.what()));
    }
  }
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
