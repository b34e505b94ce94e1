// tests/model/gen.cpp -- random BSP programs from a seed.
//
// A program is built superstep by superstep against the reference model: each
// process first claims (some of) its messages, then the processes take turns
// drawing operations; an operation the model finds outside the contract (see
// Model::check) is redrawn or dropped, so every program kept has exactly one
// correct outcome. Region sizes and offsets are drawn around frame boundaries
// of the run's frame size; element sizes come from a small per-program palette
// (so that copies between regions of equal element size are common).
#include <bspk.h>

#include <cstdio>
#include <cstdlib>
#include <set>

#include "model.h"

namespace model {

namespace {

struct Gen {
  Program& pr;
  const Features& f;
  Rng rng;
  Model m;
  int p;
  uint64_t frame;
  std::vector<uint64_t> palette;
  int next_rid = 0;
  std::vector<int> next_slot;
  std::vector<std::string> names;
  Step* st = nullptr;
  std::set<std::pair<int, int>> prov_tgt;  // (pid, rid): a copy through a provisional pointer went there this superstep

  Gen(Program& pr_, uint64_t seed)
      : pr(pr_), f(pr_.feat), rng(mix64(seed) ^ (static_cast<uint64_t>(pr_.p) << 40) ^ pr_.frame), m(pr_), p(pr_.p),
        frame(pr_.frame) {
    next_slot.assign(p, 0);
  }

  uint64_t es_draw() { return rng.pick(palette); }

  // Elements of a region: around 0..3 frames, often just off a frame boundary.
  uint64_t n_draw(uint64_t es) {
    uint64_t per = frame / es;
    uint64_t n;
    switch (rng.below(10)) {
      case 0: n = 0; break;
      case 1: case 2: case 3: n = 1 + rng.below(24); break;
      default: {
        static const std::vector<uint64_t> ks = {0, 1, 1, 1, 2, 2, 3};
        uint64_t k = rng.pick(ks);
        int64_t d;
        switch (rng.below(4)) {
          case 0: d = -1; break;
          case 1: d = 0; break;
          case 2: d = 1; break;
          default: d = static_cast<int64_t>(rng.below(per));
        }
        int64_t v = static_cast<int64_t>(k * per) + d;
        n = v < 1 ? 1 : static_cast<uint64_t>(v);
      }
    }
    uint64_t cap = std::min<uint64_t>(4 * frame, 256 * 1024) / es;
    return std::min(n, cap);
  }

  // An element range [off, off + len) of a region of n elements: starts and
  // ends often on or next to a frame boundary; sometimes empty.
  void range_draw(uint64_t n, uint64_t es, uint64_t* off, uint64_t* len) {
    uint64_t per = std::max<uint64_t>(1, frame / es);
    auto near = [&](uint64_t lim) {
      uint64_t k = rng.below(lim / per + 1);
      int64_t v = static_cast<int64_t>(k * per) + static_cast<int64_t>(rng.below(3)) - 1;
      return std::min<uint64_t>(lim, v < 0 ? 0 : static_cast<uint64_t>(v));
    };
    switch (rng.below(5)) {
      case 0: *off = 0; break;
      case 1: case 2: *off = near(n); break;
      default: *off = rng.below(n + 1);
    }
    uint64_t rest = n - *off;
    switch (rng.below(10)) {
      case 0: *len = 0; break;
      case 1: case 2: *len = rest; break;
      case 3: case 4: case 5: *len = near(n) > *off ? near(n) - *off : rng.below(rest + 1); break;
      default: *len = rng.below(rest + 1);
    }
    if (*len > rest) *len = rest;
  }

  std::vector<int> own(int q) {
    std::vector<int> v;
    for (int rid : m.live_owned(q))
      if (!m.region_busy(rid) || rng.chance(70)) v.push_back(rid);
    return v;
  }

  // Pointers q may use: own regions and slots naming live regions.
  std::vector<Ref> refs(int q) {
    std::vector<Ref> v;
    for (int rid : m.live_owned(q)) v.push_back({'r', rid, 0});
    for (auto& [id, sl] : m.slots(q)) {
      const MRegion* r = m.region(sl.rid);
      if (!r || (r->created && !r->live)) continue;
      if (!f("anon-remote") && r->name.empty() && r->owner != q) continue;
      v.push_back({'s', id, 0});
    }
    return v;
  }
  const MRegion* reg_of(int q, const Ref& r, uint64_t* base) {
    if (r.kind == 'r') return *base = 0, m.region(r.id);
    const Slot& sl = m.slots(q).at(r.id);
    *base = sl.off;
    return m.region(sl.rid);
  }

  // Provisional for the model, or possibly so in the runtime: with
  // lookup-resolved off, any lookup pointer to another process's region.
  bool provisional(int q, const Ref& r) {
    if (r.kind != 's') return false;
    const Slot& sl = m.slots(q).at(r.id);
    return sl.provisional || (!f("lookup-resolved") && sl.from_lookup && m.region(sl.rid)->owner != q);
  }

  bool add(int q, const Op& op, int want_code = BSPK_OK) {
    // overlap-provisional off: no second copy into the same elements through a provisional pointer.
    // (soak: fetches too, seed 35 p=7 shm: the provisional pointer was the source.)
    bool prov_op = (op.k == K::Copy || op.k == K::Put) && (provisional(q, op.dst) || provisional(q, op.src));
    int drid = -1;
    if ((op.k == K::Copy || op.k == K::Put) && op.n && !f("overlap-provisional")) {
      uint64_t base;
      const MRegion* r = op.dst.kind ? reg_of(q, op.dst, &base) : nullptr;
      if (r) {
        drid = r->rid;
        if ((prov_op || prov_tgt.count({q, r->rid})) && m.own_target(r->rid, base + op.dst.off, base + op.dst.off + op.n, q))
          return false;
      }
    }
    int code;
    std::string why;
    if (!m.check(q, op, &code, &why) || code != want_code) return false;
    m.exec(q, op);
    st->ops[q].push_back(op);
    if (prov_op && drid >= 0) prov_tgt.insert({q, drid});
    return true;
  }

  bool gen_malloc(int q) {
    if (m.live_owned(q).size() >= 6) return false;
    Op op;
    op.k = K::Malloc;
    op.rid = next_rid;
    op.es = es_draw();
    op.n = n_draw(op.es);
    op.pat = rng.next();
    op.contig = f("contig") && rng.chance(20);
    if (rng.chance(55)) {
      op.name = rng.pick(names);
      op.idx = static_cast<int>(rng.below(3));
    }
    if (!add(q, op)) return false;
    ++next_rid;
    return true;
  }

  bool gen_free(int q) {
    auto v = m.live_owned(q);
    if (v.empty()) return false;
    Op op;
    op.k = K::Free;
    op.rid = rng.pick(v);
    const MRegion* r = m.region(op.rid);
    if (!f("free-looked-up") && !r->name.empty())
      for (int o = 0; o < p; ++o)
        if (o != q && m.used_pair(o, r->name + "#" + std::to_string(r->idx))) return false;
    return add(q, op);
  }

  bool gen_write(int q) {
    auto v = own(q);
    if (v.empty()) return false;
    Op op;
    op.k = K::Write;
    op.rid = rng.pick(v);
    const MRegion* r = m.region(op.rid);
    range_draw(r->n, r->es, &op.off, &op.n);
    op.pat = rng.next();
    return add(q, op);
  }

  bool gen_send(int q, int rid = -1) {
    Op op;
    op.to = static_cast<int>(rng.below(p));
    if (rid < 0 && rng.chance(20)) {
      op.k = K::SendBuf;
      uint64_t per = frame;
      static const std::vector<int> ds = {-1, 0, 1};
      op.n = rng.chance(50) ? rng.below(200) : rng.below(3) * per + rng.pick(ds) + 1;
      op.n = std::min<uint64_t>(op.n, 200000);
      op.pat = rng.next();
      return add(q, op);
    }
    op.k = K::Send;
    if (rid < 0) {
      auto v = own(q);
      if (v.empty()) return false;
      rid = rng.pick(v);
    }
    op.rid = rid;
    const MRegion* r = m.region(rid);
    range_draw(r->n, r->es, &op.off, &op.n);
    if (f("tags") && rng.chance(35)) op.extra = rng.chance(50) ? rng.next() : 1 + rng.below(1000);
    return add(q, op);
  }

  // store (remote dst), fetch (remote src) or local copy, or a put.
  bool gen_copy(int q, bool put) {
    auto v = refs(q);
    if (v.empty()) return false;
    Op op;
    op.k = put ? K::Put : K::Copy;
    Ref d = rng.pick(v);
    uint64_t dbase;
    const MRegion* dr = reg_of(q, d, &dbase);
    if (!dr) return false;
    if (put) {
      range_draw(dr->n - dbase, dr->es, &d.off, &op.n);
      op.dst = d;
      op.pat = rng.next();
      return add(q, op);
    }
    std::vector<Ref> cands;
    for (auto& s : v) {
      uint64_t b;
      const MRegion* sr = reg_of(q, s, &b);
      if (!sr || sr->es != dr->es) continue;
      if (dr->owner != q && sr->owner != q) continue;  // both remote: an error case, drawn elsewhere
      if (sr->owner != q && !f("fetch")) continue;
      cands.push_back(s);
    }
    if (cands.empty()) return false;
    Ref s = rng.pick(cands);
    uint64_t sbase;
    const MRegion* sr = reg_of(q, s, &sbase);
    uint64_t dn = dr->n - dbase, sn = sr->n - sbase;
    uint64_t len;
    range_draw(dn, dr->es, &d.off, &len);
    uint64_t soff, slen;
    range_draw(sn, sr->es, &soff, &slen);
    s.off = soff;
    op.n = std::min(len, sn - soff);
    if (rng.chance(30)) op.n = std::min(op.n, slen);
    op.dst = d, op.src = s;
    if (op.n == 0 && !f("copy0-provisional") && (provisional(q, d) || provisional(q, s))) return false;
    return add(q, op);
  }

  bool gen_lookup(int q) {
    if (!f("lookup-lazy") && st->mode == Mode::Expect) return false;
    std::vector<std::string> cands;
    for (auto& [pair, rid] : m.registered())
      if (pair.rfind(pr.prefix, 0) == 0) cands.push_back(pair);
    if (cands.empty()) return false;
    std::string pair = rng.pick(cands);
    auto h = pair.rfind('#');
    Op op;
    op.k = K::Lookup;
    op.name = pair.substr(0, h);
    op.idx = std::atoi(pair.c_str() + h + 1);
    op.slot = next_slot[q];
    if (!add(q, op)) return false;
    ++next_slot[q];
    return true;
  }

  bool gen_writeptr(int q) {
    std::vector<int> into;
    for (int rid : own(q))
      if (m.region(rid)->n * m.region(rid)->es >= kPtrBytes) into.push_back(rid);
    auto v = refs(q);
    if (into.empty() || v.empty()) return false;
    Ref s = rng.pick(v);
    uint64_t base;
    const MRegion* sr = reg_of(q, s, &base);
    if (!sr) return false;
    if (provisional(q, s) && !f("lookup-ptr-same-step")) return false;
    if (!f("anon-remote") && sr->name.empty()) return false;
    s.off = rng.below(sr->n - base + 1);
    Op op;
    op.k = K::WritePtr;
    op.rid = rng.pick(into);
    const MRegion* r = m.region(op.rid);
    uint64_t bytes = r->n * r->es;
    op.off = rng.chance(50) ? rng.below(bytes - kPtrBytes + 1) : (rng.below(bytes - kPtrBytes + 1) / r->es) * r->es;
    op.src = s;
    if (!add(q, op)) return false;
    // Mostly pass it on at once: send the elements holding it to someone.
    if (rng.chance(70)) {
      Op sd;
      sd.k = K::Send;
      sd.to = static_cast<int>(rng.below(p));
      sd.rid = op.rid;
      uint64_t a = op.off / r->es, b = (op.off + kPtrBytes + r->es - 1) / r->es;
      sd.off = rng.chance(50) ? a : rng.below(a + 1);
      sd.n = b - sd.off + (rng.chance(50) ? rng.below(r->n - b + 1) : 0);
      add(q, sd);
    }
    return true;
  }

  bool gen_loadptr(int q) {
    std::vector<std::pair<int, uint64_t>> cands;
    for (int rid : m.live_owned(q))
      for (auto& [off, sym] : m.whole_ptrs(rid)) {
        const Sym& sy = m.syms()[sym];
        const MRegion* t = m.region(sy.rid);
        if (!t || !t->live) continue;
        cands.push_back({rid, off});
      }
    if (cands.empty()) return false;
    auto c = rng.pick(cands);
    Op op;
    op.k = K::LoadPtr;
    op.rid = c.first;
    op.off = c.second;
    op.slot = next_slot[q];
    if (!add(q, op)) return false;
    ++next_slot[q];
    return true;
  }

  // Calls that must fail with a given code and have no effect ([call]).
  bool gen_error(int q) {
    Op op;
    auto v = m.live_owned(q);
    switch (rng.below(7)) {
      case 0:  // send to pid p
        if (v.empty()) return false;
        op.k = K::Send, op.to = p, op.rid = rng.pick(v), op.n = 0;
        return add(q, op, BSPK_ERR_PID);
      case 1: {  // send past the end
        if (v.empty()) return false;
        op.k = K::Send, op.to = static_cast<int>(rng.below(p)), op.rid = rng.pick(v);
        uint64_t n = m.region(op.rid)->n;
        op.off = rng.below(n + 1), op.n = n - op.off + 1 + rng.below(3);
        return add(q, op, BSPK_ERR_RANGE);
      }
      case 2:  // free(BSPK_NULL)
        op.k = K::Free, op.rid = -1;
        return add(q, op, BSPK_ERR_PTR);
      case 3: {  // free or copy from a freed own region (stale pointer)
        std::vector<int> dead;
        for (int rid = 0; rid < next_rid; ++rid) {
          const MRegion* r = m.region(rid);
          if (r && r->owner == q && r->created && !r->live) dead.push_back(rid);
        }
        if (dead.empty()) return false;
        int rid = rng.pick(dead);
        if (rng.chance(50) || v.empty()) {
          op.k = K::Free, op.rid = rid;
          return add(q, op, BSPK_ERR_PTR);
        }
        op.k = K::Copy, op.dst = {'r', rng.pick(v), 0}, op.src = {'r', rid, 0};
        op.n = 1;
        return add(q, op, BSPK_ERR_PTR);
      }
      case 4: {  // local copy between element sizes that differ
        if (v.size() < 2) return false;
        op.k = K::Copy, op.dst = {'r', rng.pick(v), 0}, op.src = {'r', rng.pick(v), 0}, op.n = 1;
        return add(q, op, BSPK_ERR_ARG);
      }
      case 5: {  // put of bytes that are not a multiple of the element size
        if (v.empty()) return false;
        int rid = rng.pick(v);
        const MRegion* r = m.region(rid);
        if (r->es < 2 || r->n == 0) return false;
        op.k = K::Put, op.dst = {'r', rid, 0}, op.n = rng.below(r->n), op.extra = 1 + rng.below(r->es - 1), op.pat = 1;
        return add(q, op, BSPK_ERR_ARG);
      }
      default:  // sendbuf to pid -1
        op.k = K::SendBuf, op.to = -1, op.n = 3, op.pat = 2;
        return add(q, op, BSPK_ERR_PID);
    }
  }

  void delay(int q, bool long_one) {
    Op op;
    op.k = K::Delay;
    op.us = static_cast<int>(long_one ? 2000 + rng.below(15000) : 20 + rng.below(1500));
    op.busy = rng.chance(30);
    add(q, op);
  }

  // bspk_move: mostly a received message into a longer-lived region, often
  // frame-aligned on both sides (so that frames flip).
  bool gen_move(int q) {
    std::vector<int> msgs, anon, all;
    for (int rid : m.live_owned(q)) {
      const MRegion* r = m.region(rid);
      all.push_back(rid);
      if (r->name.empty()) (r->sender >= 0 ? msgs : anon).push_back(rid);
    }
    if (all.size() < 2 || (msgs.empty() && anon.empty())) return false;
    int src = !msgs.empty() && (anon.empty() || rng.chance(75)) ? rng.pick(msgs) : rng.pick(anon);
    const MRegion* s = m.region(src);
    std::vector<int> dsts;
    for (int rid : all)
      if (rid != src && m.region(rid)->es == s->es) dsts.push_back(rid);
    if (dsts.empty()) return false;
    Op op;
    op.k = K::Move;
    op.src = {'r', src, 0};
    op.dst = {'r', rng.pick(dsts), 0};
    const MRegion* d = m.region(op.dst.id);
    const uint64_t per = std::max<uint64_t>(1, frame / s->es);
    auto aligned = [&](uint64_t lim) { return std::min(lim, rng.below(lim / per + 1) * per); };
    op.src.off = rng.chance(60) ? 0 : rng.chance(50) ? aligned(s->n) : rng.below(s->n + 1);
    op.dst.off = rng.chance(40) ? 0 : rng.chance(60) ? aligned(d->n) : rng.below(d->n + 1);
    uint64_t room = std::min(s->n - op.src.off, d->n - op.dst.off);
    op.n = rng.chance(60) ? room : rng.below(room + 1);
    return add(q, op);
  }

  void gen_op(int q) {
    // (Feature move off: no draw here, so the seeds make the programs they made before it.)
    if (f("move") && rng.chance(6) && gen_move(q)) return;
    for (int attempt = 0; attempt < 6; ++attempt) {
      uint64_t w = rng.below(100);
      bool ok;
      if (w < 11) ok = gen_malloc(q);
      else if (w < 16) ok = gen_free(q);
      else if (w < 25) ok = gen_write(q);
      else if (w < 40) ok = gen_send(q);
      else if (w < 58) ok = gen_copy(q, false);
      else if (w < 64) ok = gen_copy(q, true);
      else if (w < 72) ok = gen_lookup(q);
      else if (w < 80) ok = gen_writeptr(q);
      else if (w < 90) ok = gen_loadptr(q);
      else if (w < 94) ok = f("errors") && gen_error(q);
      else ok = f("delays") && (delay(q, false), true);
      if (ok) return;
    }
  }

  // ---- A superstep ended by a collective (feature coll) ----
  // Elements per process (per block for alltoall): 0, a few, around the
  // collectives' size thresholds (bspk_coll.h "Cost": the short limit 4032 B,
  // the board and rounds limits 2-16 KiB) or around frame multiples; bytes
  // per process at most max(4 frames, 20 KiB), 256 KiB.
  uint64_t coll_n(uint64_t es, uint64_t blocks) {
    const uint64_t cap = std::min<uint64_t>(std::max<uint64_t>(4 * frame, 20480), 262144) / es / blocks;
    static const std::vector<uint64_t> lims = {2048, 4032, 4096, 8192, 16384};
    int64_t v;
    switch (rng.below(20)) {
      case 0: v = 0; break;
      case 1: case 2: case 3: case 4: case 5: case 6: v = 1 + static_cast<int64_t>(rng.below(16)); break;
      case 7: case 8: case 9: case 10: case 11:
        v = static_cast<int64_t>(rng.pick(lims) / es / blocks) + static_cast<int64_t>(rng.below(3)) - 1;
        break;
      case 12: case 13: case 14: case 15: case 16:
        v = static_cast<int64_t>((1 + rng.below(3)) * frame / es / blocks) + static_cast<int64_t>(rng.below(3)) - 1;
        break;
      default: v = static_cast<int64_t>(rng.below(cap + 1));
    }
    return std::min<uint64_t>(v < 0 ? 0 : static_cast<uint64_t>(v), cap);
  }

  // A region of q for n elements of es bytes (from element off): an own live
  // region that fits, or a fresh anonymous one (sometimes contiguous).
  bool coll_region(int q, uint64_t es, uint64_t n, int avoid, bool fresh, int* rid, uint64_t* off) {
    std::vector<int> fit;
    for (int r : m.live_owned(q)) {
      const MRegion* mr = m.region(r);
      if (r != avoid && mr->es == es && mr->n >= n) fit.push_back(r);
    }
    if (!fresh && !fit.empty() && rng.chance(60)) {
      *rid = rng.pick(fit);
      *off = rng.below(m.region(*rid)->n - n + 1);
      if (rng.chance(50)) *off = 0;
      return true;
    }
    Op op;
    op.k = K::Malloc;
    op.rid = next_rid;
    op.es = es;
    op.n = n + (rng.chance(50) ? 0 : rng.below(frame / es + 2));
    op.pat = rng.next();
    op.contig = f("contig") && rng.chance(15);
    if (!add(q, op)) return false;
    ++next_rid;
    *rid = op.rid;
    *off = rng.chance(60) ? 0 : rng.below(op.n - n + 1);
    return true;
  }

  void coll_step() {
    for (int q = 0; q < p; ++q)  // some messages claimed; the rest the collective discards
      if (rng.chance(60)) recvs(q);
    if (f("delays") && rng.chance(50)) delay(static_cast<int>(rng.below(p)), rng.chance(50));
    for (int q = 0; q < p; ++q) {
      if (rng.chance(30)) gen_write(q);
      if (f("move") && rng.chance(30)) gen_move(q);
    }
    // (Feature sync-allgather off: no draw here, as before it.)
    if (f("sync-allgather") && rng.chance(25)) return sync_allgather_step();
    Op c;
    c.k = K::Coll;
    c.idx = static_cast<int>(rng.below(kNumColl));
    c.es = rng.chance(50) ? 4 : 8;
    c.to = coll_rooted(c.idx) ? static_cast<int>(rng.below(p)) : -1;
    const bool reducing = c.idx == kReduce || c.idx == kAllreduce || c.idx == kScan || c.idx == kExscan;
    if (reducing && rng.chance(80)) {
      static const std::vector<int> opers = {BSPK_SUM, BSPK_PROD, BSPK_MIN, BSPK_MAX, BSPK_LAND, BSPK_LOR, BSPK_BAND, BSPK_BOR, BSPK_BXOR};
      int oper = rng.pick(opers);
      const bool sgn = rng.chance(50);
      c.pat = static_cast<uint64_t>(oper | (c.es == 4 ? (sgn ? BSPK_INT32 : BSPK_UINT32) : (sgn ? BSPK_INT64 : BSPK_UINT64)));
    }  // else 0: the user op
    const uint64_t P = static_cast<uint64_t>(p);
    std::vector<std::vector<uint64_t>> cnt;  // alltoallv: cnt[j][q] elements from j to q
    if (c.idx == kAlltoallv) {
      cnt.assign(p, std::vector<uint64_t>(p, 0));
      for (auto& row : cnt)
        for (auto& x : row) x = rng.chance(25) ? 0 : coll_n(c.es, P);
    } else {
      c.n = coll_n(c.es, c.idx == kAlltoall || c.idx == kAllgather || c.idx == kGather ? P : 1);
    }
    for (int q = 0; q < p; ++q) {
      Op o = c;
      uint64_t sn = c.idx == kAlltoall ? c.n * P : c.n, dn = c.n * P;
      if (c.idx == kAlltoallv) {
        o.sc.assign(p, 0), o.sd.assign(p, 0), o.rc.assign(p, 0), o.rd.assign(p, 0);
        uint64_t at = 0;
        for (int j = 0; j < p; ++j) {  // send blocks: packed with gaps, sometimes anywhere (reads may overlap)
          o.sc[j] = cnt[q][j];
          at += rng.chance(50) ? 0 : rng.below(4);
          o.sd[j] = at;
          at += o.sc[j];
        }
        sn = at;
        for (int j = 0; j < p; ++j)
          if (rng.chance(15)) o.sd[j] = rng.below(sn - o.sc[j] + 1);
        std::vector<int> order(p);
        for (int j = 0; j < p; ++j) order[j] = j;
        for (int j = p - 1; j > 0; --j) std::swap(order[j], order[rng.below(j + 1)]);
        at = 0;
        for (int j : order) {  // receive blocks: disjoint, in a random order, with gaps
          o.rc[j] = cnt[j][q];
          at += rng.chance(50) ? 0 : rng.below(4);
          o.rd[j] = at;
          at += o.rc[j];
        }
        dn = at;
      }
      for (int attempt = 0;; ++attempt) {
        if (attempt == 4) {
          std::fprintf(stderr, "bspk_model: internal: no region for `%s` on pid %d\n", op_str(c).c_str(), q);
          std::abort();
        }
        int srid;
        uint64_t soff;
        if (!coll_region(q, c.es, sn, -1, attempt >= 2, &srid, &soff)) continue;
        o.rid = srid, o.off = soff, o.dst = Ref{};
        const bool has_dst = c.idx == kAllgather || c.idx == kAlltoall || c.idx == kAlltoallv || (c.idx == kGather && q == c.to);
        if (has_dst) {
          int drid;
          uint64_t doff;
          if (!coll_region(q, c.es, dn, srid, attempt >= 2, &drid, &doff)) continue;
          o.dst = Ref{'r', drid, doff};
        }
        if (add(q, o)) break;
      }
    }
  }

  // Bytes of a sync-allgather block: empty, one cache line of the board (48),
  // a few hundred, around a page, anything up to BSPK_SYNC_BLOCK_MAX.
  uint64_t sync_n() {
    switch (rng.below(10)) {
      case 0: return 0;
      case 1: case 2: case 3: case 4: return 1 + rng.below(48);
      case 5: case 6: return 49 + rng.below(200);
      case 7: return 4095 + rng.below(3);
      case 8: return rng.below(BSPK_SYNC_BLOCK_MAX + 1);
      default: return BSPK_SYNC_BLOCK_MAX - rng.below(3);
    }
  }

  void sync_allgather_step() {
    const int kind = rng.chance(50) ? kSyncAllgather : kSyncAllgatherv;
    const bool alike = rng.chance(60);
    const uint64_t common = sync_n();
    for (int q = 0; q < p; ++q) {
      Op o;
      o.k = K::Coll;
      o.idx = kind;
      o.n = alike ? common : sync_n();
      o.pat = rng.next();
      o.extra = kind == kSyncAllgather && rng.chance(60) ? 1 : 0;
      if (!add(q, o)) {
        std::fprintf(stderr, "bspk_model: internal: `%s` refused on pid %d\n", op_str(o).c_str(), q);
        std::abort();
      }
    }
  }

  static Op recv_end() {
    Op op;
    op.k = K::RecvEnd;
    return op;
  }

  void recvs(int q) {
    size_t avail = m.inbox(q).size();
    if (avail == 0) {
      if (rng.chance(15)) add(q, recv_end());
      return;
    }
    bool all = rng.chance(70);
    size_t k = all ? avail : rng.below(avail + 1);
    for (size_t i = 0; i < k; ++i) {
      const Msg& msg = m.inbox(q).front();
      bool has_ptr = false;
      for (size_t j = 0; j + kPtrBytes <= msg.d.tag.size() && !has_ptr; ++j) has_ptr = msg.d.tag[j] && tag_byte(msg.d.tag[j]) == 0;
      Op op;
      op.k = K::Recv;
      if (msg.n > 0 && ((has_ptr && rng.chance(90)) || rng.chance(20)) && m.live_owned(q).size() < 8) op.rid = next_rid++;
      if (f("recv-contig") && rng.chance(25)) op.contig = 1;  // (off: no draw, the seeds' programs as before)
      add(q, op);
    }
    if (all && rng.chance(70)) add(q, recv_end());
  }
};

}  // namespace

Program generate(uint64_t seed, int p, uint64_t frame, const Features& f) {
  Program pr;
  pr.seed = seed, pr.p = p, pr.frame = frame, pr.feat = f;
  pr.prefix = "m" + std::to_string(seed);
  Gen g(pr, seed);
  static const std::vector<uint64_t> all_es = {1, 2, 4, 8, 12, 24, 40, 64, 100, 256, 1000};
  std::vector<uint64_t> fit;
  for (uint64_t e : all_es)
    if (e <= frame) fit.push_back(e);
  int npal = 1 + static_cast<int>(g.rng.below(3));
  for (int i = 0; i < npal; ++i) g.palette.push_back(g.rng.pick(fit));
  if (g.rng.chance(50)) g.palette.push_back(1);
  for (int i = 0; i < 2; ++i) g.names.push_back(pr.prefix + "_" + std::string(1, static_cast<char>('a' + i)));
  int nsteps = 3 + static_cast<int>(g.rng.below(6));
  for (int s = 0; s < nsteps; ++s) {
    // (Feature coll off: no draw here, so the seeds make the programs they made before it.)
    if (f("coll") && g.rng.chance(25)) {
      pr.steps.push_back(Step{});
      Step& st = pr.steps.back();
      g.st = &st;
      st.mode = Mode::Counted;
      st.ops.resize(p);
      g.m.begin_step(nullptr);
      g.prov_tgt.clear();
      g.coll_step();
      st.decl_at.resize(p);
      for (int q = 0; q < p; ++q) st.decl_at[q] = static_cast<int>(st.ops[q].size());
      g.m.end_step();
    }
    pr.steps.push_back(Step{});
    Step& st = pr.steps.back();
    g.st = &st;
    static const std::vector<Mode> modes = {Mode::Expect, Mode::Expect, Mode::WillSend, Mode::Counted};
    st.mode = g.rng.pick(modes);
    st.ops.resize(p);
    g.m.begin_step(nullptr);
    g.prov_tgt.clear();
    for (int q = 0; q < p; ++q) g.recvs(q);
    if (f("delays") && g.rng.chance(40)) g.delay(static_cast<int>(g.rng.below(p)), true);
    int rounds = 1 + static_cast<int>(g.rng.below(6));
    for (int r = 0; r < rounds; ++r)
      for (int q = 0; q < p; ++q)
        if (g.rng.chance(75)) g.gen_op(q);
    st.decl_at.resize(p);
    for (int q = 0; q < p; ++q) st.decl_at[q] = static_cast<int>(g.rng.below(st.ops[q].size() + 1));
    g.m.end_step();
  }
  if (!g.m.error().empty()) {
    std::fprintf(stderr, "bspk_model: internal: generator left the contract: %s\n", g.m.error().c_str());
    std::abort();
  }
  return pr;
}

}  // namespace model
