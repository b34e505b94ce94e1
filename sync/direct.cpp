#include "sync/direct.h"

#include <bspk.h>

#include <algorithm>
#include <cstring>

#include "base/error.h"

namespace bspk::sync {

Direct::Direct(Engine& engine, wire::Kind kind, MergeMeta merge, Result result, Admit admit)
    : e_(engine),
      kind_(kind),
      merge_(merge),
      result_(std::move(result)),
      admit_(std::move(admit)),
      ring_(engine.options().max_ahead) {
  e_.on(kind_, [this](const Engine::Incoming& in) {
    on_msg(in);
    return false;
  });
}

Direct::Slot& Direct::slot(uint32_t s) {
  Slot& sl = ring_.at(s, e_.step());
  if (sl.from.empty()) sl.from.assign(static_cast<size_t>(e_.nprocs()), 0);
  return sl;
}

Direct::Status Direct::status(uint32_t s) {
  Slot* sl = ring_.find(s);
  return sl ? sl->st : Status{};
}

bool Direct::has(uint32_t s, int j) {
  Slot* sl = ring_.find(s);
  return sl && !sl->from.empty() && sl->from[static_cast<size_t>(j)];
}

void Direct::merge(Slot& sl, uint64_t v, const Meta& meta) {
  sl.sum += v;
  sl.meta.add(meta, merge_);
}

void Direct::contribute(uint32_t s, const uint64_t* v, const Meta& meta) {
  const int me = e_.pid(), p = e_.nprocs();
  // Peers after this pid first, so that at every p the first messages of a
  // round go to different processes.
  for (int k = 1; k < p; ++k) {
    int j = (me + k) % p;
    e_.send_ctrl(j, kind_, s, meta.data(), &v[j], 1, true);
  }
  Slot& sl = slot(s);
  merge(sl, v[me], meta);
  sl.st.joined = true;
  try_finish(s, sl);
}

void Direct::on_msg(const Engine::Incoming& in) {
  e_.note_progress();
  const wire::Header& h = in.h;
  const uint32_t s = h.step;
  Meta meta;
  std::memcpy(meta.data(), h.u32, sizeof meta);
  if (admit_ && !admit_(s, h.src, meta)) return;
  if (h.nelems != 1 || in.len < sizeof(uint64_t)) {
    e_.raise_async(BSPK_ERR_FABRIC,
                   strprintf("count message from pid %d for superstep %u has %llu entries, not 1", h.src, s,
                             (unsigned long long)h.nelems));
    return;
  }
  Slot& sl = slot(s);
  uint8_t& seen = sl.from[static_cast<size_t>(h.src)];
  if (seen) {
    e_.raise_async(BSPK_ERR_FABRIC,
                   strprintf("two count messages from pid %d for superstep %u", h.src, s));
    return;
  }
  seen = 1;
  uint64_t v;
  std::memcpy(&v, reinterpret_cast<const void*>(in.buf), sizeof v);
  merge(sl, v, meta);
  sl.st.got++;
  try_finish(s, sl);
}

void Direct::try_finish(uint32_t s, Slot& sl) {
  if (sl.done || !sl.st.joined || sl.st.got < e_.nprocs() - 1) return;
  sl.done = true;
  result_(s, sl.sum, sl.meta.meta);
}

}  // namespace bspk::sync
