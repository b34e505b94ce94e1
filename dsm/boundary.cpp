// dsm/boundary.cpp -- the boundary of a superstep: stores, local copies,
// fetch answers and own fetches applied in that order, frame flips, and the
// checking mode (see dsm.h).
#include <bspk.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "base/copy.h"
#include "base/error.h"
#include "dsm/dsm.h"

namespace bspk::dsm {

using wire::Header;

namespace {
// Contiguous bytes <-> elements [off, off+n) of a region, frame by frame.
void scatter(comem::Region& r, uint64_t off, uint64_t n, const char* from) {
  for (uint64_t i = off, end = off + n; i < end;) {
    uint64_t c = std::min(r.span(i), end - i);
    bspk::copy_bytes(r.elem(i), from, c * r.elem_size);
    from += c * r.elem_size;
    i += c;
  }
}
void gather(const comem::Region& r, uint64_t off, uint64_t n, char* to) {
  for (uint64_t i = off, end = off + n; i < end;) {
    uint64_t c = std::min(r.span(i), end - i);
    bspk::copy_bytes(to, r.elem(i), c * r.elem_size);
    to += c * r.elem_size;
    i += c;
  }
}
}  // namespace

// Elements [soff, soff + n) of sr into [doff, doff + n) of d, where nothing
// but the caller refers to sr's frames: a chunk that fills a destination frame
// from its start (or its used part up to the region's end) and starts a
// source frame is swapped in (frame flip, no copy; the old frame goes to sr);
// the rest is copied. Slot 0 implies unbiased entries on both sides (see
// apply()). Never into a contiguous region (its frames stay one run), never
// out of or into a region with sends in flight (their frames are on the
// wire), never with a small buffer.
void Dsm::flip_or_copy(comem::Region& d, uint64_t doff, comem::Region& sr, uint64_t soff, uint64_t n) {
  const uint32_t es = d.elem_size;
  for (uint64_t i = 0; i < n;) {
    const uint64_t k = std::min(sr.span(soff + i), n - i);
    uint64_t df, ds, sf, ss;
    d.locate(doff + i, &df, &ds);
    sr.locate(soff + i, &sf, &ss);
    if (ds == 0 && ss == 0 && !d.small && !sr.small && !d.contiguous && !sr.contiguous && d.inflight == 0 &&
        sr.inflight == 0 && (k == d.epf || doff + i + k == d.nelems)) {
      std::swap(d.frames[df], sr.frames[sf]);
      stats_.frames_flipped++;
    } else {
      scatter(d, doff + i, k, static_cast<const char*>(sr.elem(soff + i)));
      stats_.bytes_copied += k * es;
    }
    i += k;
  }
}

void Dsm::move(const bspk_ptr& dst, const bspk_ptr& src, uint64_t n) {
  for (const bspk_ptr* p : {&dst, &src})
    if (is_handle(*p))
      fail(BSPK_ERR_PTR, "the %s is a bspk_lookup pointer not resolved yet (a region of another process, or "
                         "not registered): bspk_move takes local regions",
           p == &dst ? "destination" : "source");
  comem::Region& d = comem_.local(dst);
  comem::Region& sr = comem_.local(src);
  if (dst.region == src.region)
    fail(BSPK_ERR_ARG, "destination and source are the same region (region id %#x): bspk_move consumes the source",
         src.region);
  check_copy(dst, src, n);  // element sizes and both ranges, as for bspk_copy
  flip_or_copy(d, dst.offset, sr, src.offset, n);
  freeing(src.region, src.gen);
  comem_.release(src.region);
}

bool Dsm::apply(uint32_t region, uint32_t gen, uint64_t off, uint64_t cnt, uint32_t es, uintptr_t buf, bool small, int writer,
                std::string* err) {
  comem::Region* r = target(region, gen, es, off, cnt, err);
  if (!r) {
    *err = "the destination: " + *err + "; nothing written";
    return false;
  }
  if (check_) writes_.push_back(Write{region, off, off + cnt, writer});
  uint64_t f, slot;
  r->locate(off, &f, &slot);
  // Frame flip: the fragment fills destination frame f (or its used part) and
  // sits at the start of a whole frame; nothing else reads the old frame.
  // Never into a contiguous region: its frames must stay one run (and its
  // addresses valid), so whole frames are copied into place like partial ones.
  if (!small && !r->small && !r->contiguous && slot == 0 && (cnt == r->epf || off + cnt == r->nelems) && r->inflight == 0) {
    comem_.frames().free(r->frames[f]);  // slot == 0 implies an unbiased frame
    r->frames[f] = buf;
    stats_.frames_flipped++;
    return true;
  }
  scatter(*r, off, cnt, reinterpret_cast<const char*>(buf));
  stats_.bytes_copied += cnt * es;
  return false;
}

comem::Region* Dsm::target(uint32_t region, uint32_t gen, uint32_t es, uint64_t off, uint64_t cnt,
                           std::string* err) {
  comem::Region* r = comem_.find(region, gen);
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
  } else if (post_msg_.size() < 4000) {
    // Several errors in one superstep: the first one's code is returned, and
    // every message is kept in it (printed with it unless BSPK_ERRORS=quiet).
    post_msg_ += "; also: " + msg;
  }
}

void Dsm::on_boundary(uint32_t s) {
  for (int d : store_seq_used_) store_seq_[static_cast<size_t>(d)] = 0;
  store_seq_used_.clear();
  Box* held = ring_.find(s);
  const bool have_box = held && (!held->stores.empty() || !held->fetches.empty());
  if (!have_box && local_.empty() && fetches_.empty()) return;
  writes_.clear();
  std::string err;
  if (have_box) {
    Box& b = *held;
    // 1. Stores, in (source pid, issue order, fragment) order: the last store of
    // one process wins over its earlier ones.
    std::sort(b.stores.begin(), b.stores.end(), [](const Frag& x, const Frag& y) {
      return x.src != y.src ? x.src < y.src : x.seq != y.seq ? x.seq < y.seq : x.k < y.k;
    });
    int last_src = -1;
    uint32_t last_seq = 0;
    for (Frag& f : b.stores) {
      err.clear();
      stats_.bytes_stored_in += f.cnt * f.elem_size;
      if (!apply(f.region, f.gen, f.off, f.cnt, f.elem_size, f.buf, f.small, f.src, &err)) free_buf(f.buf, f.small);
      f.buf = 0;
      if (!err.empty() && (f.src != last_src || f.seq != last_seq)) {
        last_src = f.src;
        last_seq = f.seq;
        DirRec e = dir_rec(DirOp::CopyError, strprintf("%s (store) into pid %d in superstep %u: %s",
                                                       f.put ? "bspk_put" : "bspk_copy", pid_, s, err.c_str()));
        e.idx = BSPK_ERR_PTR;
        send_copy_error(f.src, e);
      }
    }
    b.stores.clear();
  }
  // 2. Copies between two local regions.
  for (const LocalCopy& c : local_) {
    comem::Region* d = comem_.find(c.dst, c.dst_gen);
    comem::Region* sr = comem_.find(c.src, c.src_gen);
    if (!d || !sr) {
      if (c.put)
        post_error(BSPK_ERR_PTR, strprintf("bspk_put into a local region in superstep %u: the destination region was "
                                           "freed before the superstep ended; nothing written", s));
      else
        post_error(BSPK_ERR_PTR, strprintf("bspk_copy between local regions in superstep %u: the %s region was freed "
                                           "before the superstep ended; nothing written", s, d ? "source" : "destination"));
      if (c.put && sr) comem_.release(c.src);
      continue;
    }
    const uint32_t es = d->elem_size;
    if (c.put) {
      // From a put's staging region, which nothing else refers to.
      flip_or_copy(*d, c.dst_off, *sr, c.src_off, c.n);
      if (check_) writes_.push_back(Write{c.dst, c.dst_off, c.dst_off + c.n, pid_});
      comem_.release(c.src);
      continue;
    }
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
    Box& b = *held;
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
      stats_.bytes_fetched_in += g.cnt * g.elem_size;
      if (!apply(g.region, f.dst_gen, g.off, g.cnt, g.elem_size, g.buf, g.small, pid_, &err)) free_buf(g.buf, g.small);
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

}  // namespace bspk::dsm
