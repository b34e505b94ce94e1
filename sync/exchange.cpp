#include "sync/exchange.h"

#include <bspk.h>

#include <algorithm>
#include <cstring>

#include "base/error.h"

namespace bspk::sync {

ExchangePlan ExchangePlan::direct(int me, int p) {
  ExchangePlan pl;
  // Peers after this pid first, so that at every p the first messages of a
  // round go to different processes.
  for (int k = 1; k < p; ++k) {
    int j = (me + k) % p;
    pl.sends.push_back({j, 0, {static_cast<uint32_t>(j)}});
    pl.sources.push_back(j);
    pl.source_elems.push_back({static_cast<uint32_t>(me)});
  }
  return pl;
}

ExchangePlan ExchangePlan::halving(int me, int p) {
  ExchangePlan pl;
  int p2 = 1;
  while (p2 * 2 <= p) p2 *= 2;
  // Entries owned by pids [start, start + n) of the power-of-two group: their
  // own, and those of the process above p2 each one stands in for.
  auto block = [&](int start, int n) {
    std::vector<uint32_t> e;
    for (int o = start; o < start + n; ++o) e.push_back(static_cast<uint32_t>(o));
    for (int o = start; o < start + n; ++o)
      if (o + p2 < p) e.push_back(static_cast<uint32_t>(o + p2));
    return e;
  };
  if (me >= p2) {  // hand everything to me - p2, get the total back from it
    pl.sends.push_back({me - p2, 0, block(0, p2)});
    pl.sources.push_back(me - p2);
    pl.source_elems.push_back({static_cast<uint32_t>(me)});
    return pl;
  }
  if (me + p2 < p) {
    pl.sources.push_back(me + p2);
    pl.source_elems.push_back(block(0, p2));
  }
  for (int mask = p2 / 2; mask >= 1; mask /= 2) {
    const int partner = me ^ mask;
    pl.sends.push_back({partner, pl.sources.size(), block(partner & ~(mask - 1), mask)});
    pl.sources.push_back(partner);
    pl.source_elems.push_back(block(me & ~(mask - 1), mask));
  }
  if (me + p2 < p) pl.sends.push_back({me + p2, pl.sources.size(), {static_cast<uint32_t>(me + p2)}});
  return pl;
}

Exchange::Exchange(Engine& engine, wire::Kind kind, ExchangePlan plan, MergeMeta merge, Result result, Admit admit)
    : e_(engine),
      kind_(kind),
      plan_(std::move(plan)),
      source_of_(static_cast<size_t>(engine.nprocs()), -1),
      merge_(merge),
      result_(std::move(result)),
      admit_(std::move(admit)),
      ring_(engine.options().max_ahead) {
  for (size_t i = 0; i < plan_.sources.size(); ++i) source_of_[static_cast<size_t>(plan_.sources[i])] = int(i);
  e_.on(kind_, [this](const Engine::Incoming& in) {
    on_msg(in);
    return false;
  });
}

Exchange::Slot& Exchange::slot(uint32_t s) {
  Slot& sl = ring_.at(s, e_.step());
  if (sl.from.empty()) {
    sl.from.assign(plan_.sources.size(), 0);
    sl.acc.assign(static_cast<size_t>(e_.nprocs()), 0);
  }
  return sl;
}

Exchange::Status Exchange::status(uint32_t s) {
  Slot* sl = ring_.find(s);
  return sl ? sl->st : Status{};
}

Exchange::Meta Exchange::meta_so_far(uint32_t s) {
  Slot* sl = ring_.find(s);
  return sl && sl->meta.any ? sl->meta.meta : Meta{};
}

bool Exchange::has(uint32_t s, int j) {
  Slot* sl = ring_.find(s);
  int i = source_of_[static_cast<size_t>(j)];
  return sl && i >= 0 && !sl->from.empty() && sl->from[static_cast<size_t>(i)];
}

void Exchange::contribute(uint32_t s, const uint64_t* v, const Meta& meta, const std::vector<uint8_t>& carried) {
  Slot& sl = slot(s);
  for (size_t j = 0; j < sl.acc.size(); ++j) sl.acc[j] += v[j];
  sl.carried = carried;
  sl.meta.add(meta, merge_);
  sl.st.joined = true;
  advance(s, sl);
}

void Exchange::on_msg(const Engine::Incoming& in) {
  Meta meta;
  if (!accept_count(e_, in, admit_, &meta)) return;
  const wire::Header& h = in.h;
  const uint32_t s = h.step;
  const int i = h.src >= 0 && h.src < e_.nprocs() ? source_of_[static_cast<size_t>(h.src)] : -1;
  if (i < 0) {
    e_.raise_async(BSPK_ERR_FABRIC,
                   strprintf("count message from pid %d for superstep %u, which this process does not wait for",
                             h.src, s));
    return;
  }
  const auto& elems = plan_.source_elems[static_cast<size_t>(i)];
  const bool one = elems.size() == 1;  // then the entry is the header's nelems, no payload
  if (one ? in.len != 0 : (h.nelems != elems.size() || in.len < elems.size() * sizeof(uint64_t))) {
    e_.raise_async(BSPK_ERR_FABRIC,
                   strprintf("count message from pid %d for superstep %u has %zu payload bytes and %llu "
                             "entries; %zu expected%s",
                             h.src, s, in.len, (unsigned long long)h.nelems, elems.size(),
                             one ? " in the header" : ""));
    return;
  }
  Slot& sl = slot(s);
  uint8_t& seen = sl.from[static_cast<size_t>(i)];
  if (seen) {
    e_.raise_async(BSPK_ERR_FABRIC, strprintf("two count messages from pid %d for superstep %u", h.src, s));
    return;
  }
  seen = 1;
  if (one) {
    sl.acc[elems[0]] += h.nelems;
  } else {
    for (size_t k = 0; k < elems.size(); ++k) {
      uint64_t x;
      std::memcpy(&x, reinterpret_cast<const char*>(in.buf) + k * sizeof x, sizeof x);
      sl.acc[elems[k]] += x;
    }
  }
  sl.meta.add(meta, merge_);
  sl.st.got++;
  advance(s, sl);
}

// Send what the arrivals so far allow, then report the total once every
// source has arrived and every send is out.
void Exchange::advance(uint32_t s, Slot& sl) {
  if (sl.done || !sl.st.joined) return;
  size_t prefix = 0;
  while (prefix < sl.from.size() && sl.from[prefix]) ++prefix;
  while (sl.sent < plan_.sends.size() && plan_.sends[sl.sent].needs <= prefix) {
    const ExchangePlan::Send& snd = plan_.sends[sl.sent++];
    out_.resize(snd.elems.size());
    for (size_t k = 0; k < snd.elems.size(); ++k) {
      out_[k] = sl.acc[snd.elems[k]];
      sl.acc[snd.elems[k]] = 0;  // passed on: no longer this process's to count
    }
    if (out_.size() == 1 && !sl.carried.empty() && sl.carried[static_cast<size_t>(snd.dest)] &&
        snd.elems[0] == static_cast<uint32_t>(snd.dest))
      continue;  // went with the last data message to dest (wire::kFlagCount)
    if (out_.size() == 1)  // the header alone, the entry in its nelems field
      e_.send_ctrl(snd.dest, kind_, s, sl.meta.meta.data(), nullptr, 0, true, out_[0]);
    else
      e_.send_ctrl(snd.dest, kind_, s, sl.meta.meta.data(), out_.data(), out_.size(), true);
  }
  if (sl.sent < plan_.sends.size() || static_cast<size_t>(sl.st.got) < plan_.sources.size()) return;
  sl.done = true;
  result_(s, sl.acc[static_cast<size_t>(e_.pid())], sl.meta.meta);
}

}  // namespace bspk::sync
