// dsm/copy.cpp -- issuing copies (stores straight from the source frames,
// fetch requests, answers to fetches) and holding the copies that arrive until
// the boundary of their superstep (see dsm.h).
#include <bspk.h>

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "dsm/dsm.h"

namespace bspk::dsm {

using wire::Header;

void Dsm::copy(const bspk_ptr& dst, const bspk_ptr& src, uint64_t n) {
  if (dst.region == 0) fail(BSPK_ERR_PTR, "destination pointer is BSPK_NULL");
  if (src.region == 0) fail(BSPK_ERR_PTR, "source pointer is BSPK_NULL");
  const bspk_ptr da = adopt(dst), sa = adopt(src);
  bspk_ptr d = resolve(da), s = resolve(sa);
  const bool provisional = is_handle(d) || is_handle(s);
  // n == 0 does nothing (bspk.h), even through a pointer not resolved yet.
  if (n == 0 && provisional) return;
  if (!provisional) {
    if (deferred_.empty() || n == 0) {
      issue(d, s, n);
      return;
    }
    // Once a copy of this superstep waits for a lookup, later ones wait
    // behind it: issued in call order at the sync, so that one process's
    // overlapping copies still end with the last one's data (DSM rule 4).
    // Their errors are still found here, at the call.
    check_copy(d, s, n);
  } else {
    for (const bspk_ptr* p : {&d, &s}) {
      if (!is_handle(*p)) continue;
      if (!own_handle(*p)) fail(BSPK_ERR_PTR, "not a pointer returned by bspk_lookup");
      // Unknown at an earlier sync: ask again for this superstep.
      if (handles_[p->region].state == Handle::Unknown) ask(p->region);
    }
    // A local side must be valid now (its frames are read or written later).
    if (!is_handle(d) && d.owner == pid_) comem_.local(d);
    if (!is_handle(s) && s.owner == pid_) comem_.local(s);
  }
  deferred_.push_back(Deferred{da, sa, n});
}

void Dsm::put(const bspk_ptr& dst, const void* src, uint64_t nbytes) {
  if (dst.region == 0) fail(BSPK_ERR_PTR, "destination pointer is BSPK_NULL");
  if (!src && nbytes) fail(BSPK_ERR_ARG, "source buffer is NULL (with %llu bytes to put)", (unsigned long long)nbytes);
  const bspk_ptr da = adopt(dst);
  bspk_ptr d = resolve(da);
  if (!is_handle(d) && (deferred_.empty() || nbytes == 0)) {
    put_known(d, src, nbytes);
    return;
  }
  if (is_handle(d)) {
    if (!own_handle(d)) fail(BSPK_ERR_PTR, "not a pointer returned by bspk_lookup");
    if (nbytes == 0) return;
    if (handles_[d.region].state == Handle::Unknown) ask(d.region);
  } else {
    // Behind a copy that waits for a lookup: issued in call order at the
    // sync (see copy()), its errors found here all the same.
    uint32_t es = 0, dskew = 0;
    check_put(d, nbytes, &es, &dskew);
  }
  // The destination's element size is known once the pair is resolved: stage
  // the bytes as bytes now (the caller may reuse src at once); reshaped and
  // issued by before_sync.
  bspk_ptr tmp = comem_.create_filled(src, nbytes, 1);
  deferred_.push_back(Deferred{da, tmp, nbytes, true});
  stats_.bytes_copied += nbytes;
}

void Dsm::put_known(const bspk_ptr& d, const void* src, uint64_t nbytes) {
  uint32_t es = 0, dskew = 0;
  const uint64_t n = check_put(d, nbytes, &es, &dskew);
  if (n == 0) return;
  // Staging frames aligned with the destination's (same element size, so the
  // same elements per frame): whole destination frames can be flipped in.
  const uint64_t epf = comem_.frame_size() / es;
  bspk_ptr tmp = comem_.create_filled(src, n, es, static_cast<uint32_t>((d.offset + dskew) % epf));
  try {
    issue(d, tmp, n, true);
  } catch (...) {
    comem_.release(tmp.region);
    throw;
  }
  stats_.bytes_copied += nbytes;
}

uint64_t Dsm::check_put(const bspk_ptr& d, uint64_t nbytes, uint32_t* es_out, uint32_t* dskew_out) {
  if (d.owner < 0 || d.owner >= nprocs_)
    fail(BSPK_ERR_PTR, "destination pointer names pid %d, outside [0, %d)", d.owner, nprocs_);
  uint64_t dn = d.nelems;
  uint32_t es = d.elem_size, dskew = 0;  // remote regions are taken as unskewed (named regions are)
  if (d.owner == pid_) {
    const comem::Region& r = comem_.local(d);
    dn = r.nelems;
    es = r.elem_size;
    dskew = r.skew;  // a received message's region
  }
  if (es == 0 || es > comem_.frame_size())
    fail(BSPK_ERR_PTR, "destination pointer has %u-byte elements: not a comem pointer", es);
  if (nbytes % es)
    fail(BSPK_ERR_ARG, "%llu bytes are not a whole number of the destination's %u-byte elements",
         (unsigned long long)nbytes, es);
  const uint64_t n = nbytes / es;
  if (d.offset > dn || n > dn - d.offset)
    fail(BSPK_ERR_RANGE,
         "destination: %llu elements (%llu bytes) from element %llu run past the end of the region (%llu elements on pid %d)",
         (unsigned long long)n, (unsigned long long)nbytes, (unsigned long long)d.offset, (unsigned long long)dn,
         d.owner);
  *es_out = es;
  *dskew_out = dskew;
  return n;
}

void Dsm::check_copy(const bspk_ptr& d, const bspk_ptr& s, uint64_t n) {
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
}

void Dsm::issue(const bspk_ptr& d, const bspk_ptr& s, uint64_t n, bool put) {
  check_copy(d, s, n);
  const bool dl = d.owner == pid_, sl = s.owner == pid_;
  if (n == 0) {
    if (put) comem_.release(s.region);
    return;
  }
  stats_.copies++;
  if (dl && sl) {
    stats_.ops_self++;
    local_.push_back(LocalCopy{d.region, s.region, d.offset, s.offset, n, d.gen, s.gen, put});
    // DSM rule 5: its target is this process, which counts it like a message
    // to itself: sent and arrived in this superstep (bspk_expect,
    // bspk_will_send's v[pid] and the counted mode all include it).
    engine_.count_sent(pid_);
    engine_.message_arrived(engine_.step(), pid_);
  } else if (!dl) {
    store(d, s, n, put);
    if (put) comem_.release(s.region);  // destroyed when the last fragment's send completes
  } else {
    fetch(d, s, n);
  }
}

// Send n elements of local region r from element i as fragments of at most one
// frame, cut at r's frame boundaries and at the destination's, whose element
// for i is d (destination regions are taken as unskewed: named regions are).
// Each header carries the fragment's destination element minus `base`. A
// fragment that fills a destination frame (or its part up to d_end, the
// destination's end) is sent to land in a whole frame, so that it can be
// flipped in; others go by size class. Returns the sends still reading r.
uint32_t Dsm::send_fragments(int dest, wire::Kind kind, Header h, comem::Region& r, uint32_t region, uint64_t i,
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
    inflight += engine_.send_frame(dest, kind, h, reinterpret_cast<void*>(f.buf), f.cnt * es, &comem_.pool_of(r),
                                   region, tag);
  }
  engine_.flush_split();
  return inflight;
}

void Dsm::store(const bspk_ptr& dst, const bspk_ptr& src, uint64_t n, bool put) {
  comem::Region& r = comem_.local(src);
  const int dest = dst.owner;
  if (store_seq_[static_cast<size_t>(dest)] == 0) store_seq_used_.push_back(dest);
  Header h{};
  h.seq = store_seq_[static_cast<size_t>(dest)]++;
  h.nelems = n;
  h.elem_size = r.elem_size;
  h.u32[0] = dst.region;
  h.u32[3] = dst.gen;
  h.skew = put ? 1 : 0;  // only for the target's error messages
  targeted_[static_cast<size_t>(dest)] = 1;
  uint32_t inflight = send_fragments(dest, kStore, h, r, src.region, src.offset, dst.offset, 0, n, dst.nelems);
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
  f.dst_gen = dst.gen;
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
  h.u32[3] = src.gen;
  h.u32[1] = static_cast<uint32_t>(src.offset);
  h.u32[2] = static_cast<uint32_t>(src.offset >> 32);
  fetches_.push_back(std::move(f));
  fetches_left_++;
  targeted_[static_cast<size_t>(src.owner)] = 1;
  engine_.send_frame(src.owner, kFetchReq, h, nullptr, 0, nullptr, 0, wire::kTagSmall);
  engine_.count_sent(src.owner);
}

// Answer a fetch request at the boundary, straight from the region's frames.
void Dsm::serve(const FetchReq& q) {
  std::string err;
  comem::Region* r = target(q.region, q.gen, q.elem_size, q.off, q.n, &err);
  if (!r) {
    DirRec e = dir_rec(DirOp::CopyError, strprintf("bspk_copy (fetch) by pid %d: the source: %s; nothing fetched",
                                                   q.src, err.c_str()));
    e.status = 2;
    e.handle = q.id;
    send_copy_error(q.src, e);
    return;
  }
  Header h{};
  h.seq = q.id;
  h.nelems = q.n;
  h.elem_size = r->elem_size;
  uint32_t inflight = send_fragments(q.src, kFetchReply, h, *r, q.region, q.off, q.phase, q.phase, q.n, q.phase + q.n);
  comem_.send_started(*r, inflight);
  stats_.bytes_fetched += q.n * r->elem_size;
}

// ---------------------------------------------------------------- arrivals

Dsm::Box& Dsm::box(uint32_t step) {
  return ring_.at(step, engine_.step(), [this](Box& old) {
    for (Frag& f : old.stores) free_buf(f.buf, f.small);
  });
}

void Dsm::free_buf(uintptr_t buf, bool small) {
  if (buf) (small ? *comem_.small_pool() : comem_.frames()).free(buf);
}

bool Dsm::on_msg(const Header& h, uintptr_t buf, size_t len, bool small) {
  const wire::Kind kind = h.kind;
  if (kind == kDir) {
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
  if (kind == kFetchReply) {
    uint32_t k = h.seq - fetch_base_;
    if (h.seq < fetch_base_ || k >= fetches_.size()) {
      engine_.raise_async(BSPK_ERR_FABRIC,
                          strprintf("a fetch reply from pid %d (superstep %u) matches no fetch of this process", h.src, h.step));
      return false;
    }
    Fetch& f = fetches_[k];
    // The reply must fall inside what was fetched (a reply may not write
    // elsewhere in the destination region, nor count beyond the fetch).
    const uint64_t cnt = len / h.elem_size;
    if (h.src != f.owner || off > f.n || cnt > f.n - off || cnt > f.n - f.got) {
      engine_.raise_async(BSPK_ERR_FABRIC,
                          strprintf("a fetch reply from pid %d (superstep %u) for elements [%llu, %llu) lies outside "
                                    "the %llu elements fetched",
                                    h.src, h.step, (unsigned long long)off, (unsigned long long)(off + cnt),
                                    (unsigned long long)f.n));
      return false;
    }
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
  if (wire::step_before(h.step, engine_.step())) {
    // Later than its superstep: counted (and reported) as an excess arrival.
    engine_.message_arrived(h.step, h.src);
    return false;
  }
  Box& b = box(h.step);
  if (kind == kFetchReq) {
    FetchReq q;
    q.src = h.src;
    q.id = h.seq;
    q.region = h.u32[0];
    q.gen = h.u32[3];
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
  g.gen = h.u32[3];
  g.off = off;
  g.cnt = len / h.elem_size;
  g.elem_size = h.elem_size;
  g.buf = buf;
  g.small = small;
  g.put = (h.skew & 1) != 0;
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

}  // namespace bspk::dsm
