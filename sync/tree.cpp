#include "sync/tree.h"

#include <bspk.h>

#include <algorithm>
#include <cstring>

#include "base/error.h"

namespace bspk::sync {

Tree::Tree(Engine& engine, wire::Kind up, wire::Kind down, size_t width, MergeMeta merge, Result result,
           Admit admit)
    : e_(engine),
      up_(up),
      down_(down),
      width_(width),
      merge_(merge),
      result_(std::move(result)),
      admit_(std::move(admit)),
      ring_(engine.options().max_ahead) {
  const int me = e_.pid(), p = e_.nprocs();
  parent_ = me == 0 ? -1 : (me & (me - 1));
  // Children of r in a binomial tree rooted at 0: r + 2^k for every 2^k below
  // r's lowest set bit (all k for r = 0), while < p.
  for (int bit = 1; bit < p; bit <<= 1) {
    if (me != 0 && (me & bit)) break;
    if (me + bit < p) children_.push_back(me + bit);
  }
  e_.on(up_, [this](const Engine::Incoming& in) {
    on_msg(in, false);
    return false;
  });
  e_.on(down_, [this](const Engine::Incoming& in) {
    on_msg(in, true);
    return false;
  });
}

Tree::Slot& Tree::slot(uint32_t s) { return ring_.at(s, e_.step()); }

Tree::Status Tree::status(uint32_t s) {
  Slot* sl = ring_.find(s);
  return sl ? sl->st : Status{};
}

Tree::Meta Tree::meta_so_far(uint32_t s) {
  Slot* sl = ring_.find(s);
  return sl && sl->meta.any ? sl->meta.meta : Meta{};
}

void Tree::merge(Slot& sl, const uint64_t* v, size_t n, const Meta& meta) {
  if (sl.sum.empty()) sl.sum.assign(width_, 0);
  for (size_t i = 0; i < n; ++i) sl.sum[i] += v[i];
  sl.meta.add(meta, merge_);
}

void Tree::contribute(uint32_t s, const uint64_t* v, const Meta& meta) {
  Slot& sl = slot(s);
  merge(sl, v, width_, meta);
  sl.st.joined = true;
  try_send_up(s);
}

void Tree::on_msg(const Engine::Incoming& in, bool down) {
  Meta meta;
  if (!accept_count(e_, in, admit_, &meta)) return;
  const wire::Header& h = in.h;
  const uint32_t s = h.step;
  const auto* v = reinterpret_cast<const uint64_t*>(in.buf);
  const size_t n = std::min<size_t>(h.nelems, width_);
  if (down) {
    if (n != width_ || in.len < width_ * sizeof(uint64_t)) {
      e_.raise_async(BSPK_ERR_FABRIC,
                     strprintf("tree result from pid %d has %zu entries, not %zu", h.src, n, width_));
      return;
    }
    finish(s, v, meta);  // straight from the received buffer
    return;
  }
  Slot& sl = slot(s);
  size_t c = 0;
  while (c < children_.size() && children_[c] != h.src) ++c;
  if (c == children_.size() || (sl.st.child_mask & (1u << c))) {
    e_.raise_async(BSPK_ERR_FABRIC, strprintf("tree contribution for superstep %u from pid %d, %s", s, h.src,
                                              c == children_.size() ? "which is not a child of this process"
                                                                    : "which already sent its own"));
    return;
  }
  sl.st.child_mask |= 1u << c;
  merge(sl, v, std::min(n, in.len / sizeof(uint64_t)), meta);
  sl.st.children_got++;
  try_send_up(s);
}

void Tree::try_send_up(uint32_t s) {
  Slot& sl = slot(s);
  if (!sl.st.joined || sl.st.sent_up || sl.st.children_got < static_cast<int>(children_.size())) return;
  sl.st.sent_up = true;
  if (parent_ < 0) {
    finish(s, sl.sum.data(), sl.meta.meta);
    return;
  }
  e_.send_ctrl(parent_, up_, s, sl.meta.meta.data(), sl.sum.data(), sl.sum.size(), true);
}

void Tree::finish(uint32_t s, const uint64_t* total, const Meta& meta) {
  for (int c : children_) e_.send_ctrl(c, down_, s, meta.data(), total, width_, true);
  result_(s, total, meta);
}

}  // namespace bspk::sync
