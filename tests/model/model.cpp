// tests/model/model.cpp -- the reference model (see model.h). Every rule below
// cites the part of include/bspk.h it comes from.
#include "model.h"

#include <bspk.h>
#include <bspk_coll.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace model {

namespace {
bool overlap(uint64_t a, uint64_t b, uint64_t c, uint64_t d) { return a < d && c < b && a < b && c < d; }
}  // namespace

Model::Model(const Program& pr) : pr_(pr), p_(pr.p) {
  inbox_.resize(p_);
  slots_.resize(p_);
  used_.resize(p_);
  resolved_.resize(p_);
  cnt_.assign(p_, 0);
  will_.assign(p_, std::vector<int>(p_, 0));
}

const MRegion* Model::region(int rid) const {
  auto it = regions_.find(rid);
  return it == regions_.end() ? nullptr : &it->second;
}

std::vector<int> Model::live_owned(int pid) const {
  std::vector<int> v;
  for (auto& [rid, r] : regions_)
    if (r.live && r.owner == pid) v.push_back(rid);
  return v;
}

int Model::freed_at(const std::string& pair) const {
  auto it = freed_at_.find(pair);
  return it == freed_at_.end() ? -100 : it->second;
}

bool Model::used_pair(int pid, const std::string& pair) const { return used_[pid].count(pair) != 0; }

bool Model::region_busy(int rid) const {
  auto it = rs_.find(rid);
  return it != rs_.end() && (it->second.used || it->second.freed);
}

bool Model::own_target(int rid, uint64_t a, uint64_t b, int pid) const {
  auto it = rs_.find(rid);
  if (it == rs_.end()) return false;
  for (auto& t : it->second.tgt)
    if (t.issuer == pid && overlap(a, b, t.a, t.b)) return true;
  return false;
}

std::vector<std::pair<uint64_t, int>> Model::whole_ptrs(int rid) const {
  std::vector<std::pair<uint64_t, int>> out;
  const MRegion* r = region(rid);
  if (!r) return out;
  const auto& t = r->d.tag;
  for (uint64_t i = 0; i + kPtrBytes <= t.size(); ++i) {
    if (t[i] == 0 || tag_byte(t[i]) != 0) continue;
    int s = tag_sym(t[i]);
    bool whole = true;
    for (uint64_t k = 1; k < kPtrBytes && whole; ++k) whole = t[i + k] == make_tag(s, k);
    if (whole) out.push_back({i, s});
  }
  return out;
}

void Model::fill(Bytes* d, uint64_t at, uint64_t nbytes, uint64_t pat) {
  for (uint64_t k = 0; k < nbytes; ++k) {
    d->b[at + k] = pat_byte(pat, k);
    d->tag[at + k] = 0;
  }
}

Bytes Model::slice(const Bytes& d, uint64_t at, uint64_t nbytes) {
  Bytes s;
  s.b.assign(d.b.begin() + at, d.b.begin() + at + nbytes);
  s.tag.assign(d.tag.begin() + at, d.tag.begin() + at + nbytes);
  return s;
}

void Model::paste(Bytes* d, uint64_t at, const Bytes& s) {
  std::copy(s.b.begin(), s.b.end(), d->b.begin() + at);
  std::copy(s.tag.begin(), s.tag.end(), d->tag.begin() + at);
}

// ---------------------------------------------------------------- supersteps

void Model::begin_step(const Step* whole) {
  ++step_;
  rs_.clear();
  sends_.clear();
  pend_.clear();
  lookups_.clear();
  cnt_.assign(p_, 0);
  will_.assign(p_, std::vector<int>(p_, 0));
  nonlocal_.assign(p_, 0);
  coll_.assign(p_, Op{});
  if (!whole) return;
  // bspk_lookup: "the pair may be registered in this very superstep" -- by any
  // process, so announce this step's named regions before anyone's operations.
  for (int q = 0; q < p_; ++q)
    for (const Op& op : whole->ops[q]) {
      if (op.k != K::Malloc || op.name.empty()) continue;
      std::string pr = pair(op.name, op.idx);
      if (regions_.count(op.rid) || reg_.count(pr)) continue;  // exec() reports it
      MRegion r;
      r.rid = op.rid, r.owner = q, r.name = op.name, r.idx = op.idx, r.n = op.n, r.es = op.es, r.contig = op.contig;
      r.made_step = step_;
      regions_[op.rid] = r;
      reg_[pr] = op.rid;
    }
}

bool Model::usable(int rid, std::string* why) const {
  const MRegion* r = region(rid);
  if (!r) return *why = "region r" + std::to_string(rid) + " does not exist", false;
  if (r->created && !r->live) return *why = "region r" + std::to_string(rid) + " was freed", false;
  auto it = rs_.find(rid);
  if (it != rs_.end() && it->second.freed) return *why = "region r" + std::to_string(rid) + " is freed in this superstep", false;
  return true;
}

bool Model::resolve(int pid, const Ref& ref, Resolved* out, bool* provisional, std::string* why) const {
  *provisional = false;
  if (ref.kind == 'r') {
    const MRegion* r = region(ref.id);
    if (!r || r->owner != pid || !r->created) return *why = "r" + std::to_string(ref.id) + " is not an own region", false;
    out->rid = ref.id, out->owner = pid, out->off = ref.off;
  } else if (ref.kind == 's') {
    auto it = slots_[pid].find(ref.id);
    if (it == slots_[pid].end()) return *why = "no slot s" + std::to_string(ref.id), false;
    const MRegion* r = region(it->second.rid);
    if (!r) return *why = "slot names no region", false;
    out->rid = it->second.rid, out->owner = r->owner, out->off = it->second.off + ref.off;
    *provisional = it->second.provisional;
  } else {
    return *why = "NULL pointer", false;
  }
  if (out->off > region(out->rid)->n) return *why = "bspk_incr past the end", false;
  return true;
}

// A copy writing elements [a, b) of region rid at the boundary. Rule 3: no
// zero-copy source of this superstep may be written (extra_src: the source
// of the copy being checked). Rule 4: another issuer's (or another kind of)
// copy into the same elements leaves the outcome open. Rule 2: stores may hit
// a fetch source (the fetch sees them), fetch targets may too (a fetch does
// not see other fetches' results); a local copy into a fetch source may not
// (the header does not order them).
bool Model::target_ok(int rid, uint64_t a, uint64_t b, int cls, int issuer, const Iv* extra_src, std::string* why) {
  RStep& st = rs_[rid];
  for (auto& z : st.zsrc)
    if (overlap(a, b, z.a, z.b)) return *why = "writes elements a zero-copy source of this superstep (rule 3)", false;
  if (extra_src && overlap(a, b, extra_src->a, extra_src->b)) return *why = "source and destination overlap", false;
  for (auto& t : st.tgt)
    if (overlap(a, b, t.a, t.b) && (t.issuer != issuer || t.cls != cls))
      return *why = "overlaps another issuer's or kind's copy into the same elements (rule 4)", false;
  if (cls == 2)
    for (auto& f : st.fsrc)
      if (overlap(a, b, f.a, f.b)) return *why = "local copy into a fetch source (order not given by rule 2)", false;
  return true;
}

bool Model::zsrc_ok(int rid, uint64_t a, uint64_t b, std::string* why) {
  for (auto& t : rs_[rid].tgt)
    if (overlap(a, b, t.a, t.b)) return *why = "zero-copy source is also a copy target in this superstep (rule 3)", false;
  return true;
}

bool Model::fsrc_ok(int rid, uint64_t a, uint64_t b, std::string* why) {
  for (auto& t : rs_[rid].tgt)
    if (t.cls == 2 && overlap(a, b, t.a, t.b)) return *why = "fetch source is a local copy target (rule 2)", false;
  return true;
}

bool Model::check(int pid, const Op& op, int* code, std::string* why) {
  *code = BSPK_OK;
  why->clear();
  if (coll_[pid].k == K::Coll) return *why = "operation after the superstep's collective", false;
  switch (op.k) {
    case K::Coll:
      return coll_ok(pid, op, why);

    case K::Move: {
      if (op.dst.kind != 'r' || op.src.kind != 'r') return *why = "move between pointers other than own regions", false;
      const MRegion *d = region(op.dst.id), *sr = region(op.src.id);
      if (!d || !sr || d->owner != pid || sr->owner != pid || !d->created || !sr->created)
        return *why = "move between regions not owned", false;
      std::vector<int> errs;
      if (!d->live || !sr->live) errs.push_back(BSPK_ERR_PTR);
      if (op.dst.id == op.src.id || d->es != sr->es) errs.push_back(BSPK_ERR_ARG);
      if (op.dst.off > d->n || op.src.off > sr->n) return *why = "bspk_incr past the end", false;
      if (op.dst.off + op.n > d->n || op.src.off + op.n > sr->n) errs.push_back(BSPK_ERR_RANGE);
      if (errs.size() > 1) return *why = "two errors at once", false;
      if (errs.size() == 1) return *code = errs[0], true;
      if (!usable(op.dst.id, why) || !usable(op.src.id, why)) return false;
      // src is freed: as bspk_free, not while used in this superstep (rule 3).
      if (rs_.count(op.src.id) && rs_[op.src.id].used) return *why = "move from a region used in this superstep", false;
      // dst is written at once: as a local write, not into a zero-copy source.
      for (auto& z : rs_[op.dst.id].zsrc)
        if (overlap(op.dst.off, op.dst.off + op.n, z.a, z.b)) return *why = "move into a zero-copy source (rule 3)", false;
      return true;
    }

    case K::Delay:
      return true;

    case K::Malloc: {
      // bspk_malloc: elem_size <= frame size; the pair unique in the job; n == 0 allowed.
      if (op.es == 0 || op.es > pr_.frame) return *why = "element size 0 or above the frame size", false;
      if (op.name.size() > 63) return *why = "name too long", false;
      const MRegion* r = region(op.rid);
      if (!op.name.empty()) {
        std::string pr = pair(op.name, op.idx);
        auto it = reg_.find(pr);
        bool announced = r && !r->created && it != reg_.end() && it->second == op.rid && r->owner == pid;
        if (it != reg_.end() && !announced) return *why = "pair " + pr + " is registered", false;
        if (r && !announced) return *why = "rid reused", false;
        // Freed pairs are unregistered at the sync after the free; registering
        // again one superstep later is issue 12 defect 5 (feature switch).
        int fa = freed_at(pr);
        if (fa >= step_) return *why = "pair freed in this superstep", false;
        if (fa >= 0 && !pr_.feat("rereg")) return *why = "re-registration of a freed pair (rereg off)", false;
      } else if (r) {
        return *why = "rid reused", false;
      }
      return true;
    }

    case K::Free: {
      if (op.rid < 0) return *code = BSPK_ERR_PTR, true;  // bspk_free(BSPK_NULL)
      const MRegion* r = region(op.rid);
      if (!r || r->owner != pid || !r->created) return *why = "free of a region not owned", false;
      if (!r->live) return *code = BSPK_ERR_PTR, true;  // stale
      if (rs_.count(op.rid) && rs_[op.rid].used) return *why = "region used in this superstep (rule 3 / bspk_free)", false;
      return true;
    }

    case K::Write: {
      const MRegion* r = region(op.rid);
      if (!r || r->owner != pid || !r->live) return *why = "write to a region not owned and live", false;
      if (op.off + op.n > r->n) return *why = "write past the end", false;
      for (auto& z : rs_[op.rid].zsrc)
        if (overlap(op.off, op.off + op.n, z.a, z.b)) return *why = "write to a zero-copy source after the call (rule 3)", false;
      return true;
    }

    case K::Send: {
      const MRegion* r = region(op.rid);
      if (!r || r->owner != pid || !r->live) return *why = "send from a region not owned and live", false;
      if (op.off > r->n) return *why = "bspk_incr past the end", false;
      bool bad_pid = op.to < 0 || op.to >= p_, bad_range = op.off + op.n > r->n;
      if (bad_pid && bad_range) return *why = "two errors at once", false;
      if (bad_pid) return *code = BSPK_ERR_PID, true;
      if (bad_range) return *code = BSPK_ERR_RANGE, true;
      if (!usable(op.rid, why)) return false;
      return zsrc_ok(op.rid, op.off, op.off + op.n, why);
    }

    case K::SendBuf:
      if (op.to < 0 || op.to >= p_) return *code = BSPK_ERR_PID, true;
      return true;

    case K::Copy:
    case K::Put: {
      Resolved d{}, s{};
      bool dprov = false, sprov = false;
      if (!resolve(pid, op.dst, &d, &dprov, why)) return false;
      const MRegion* dr = region(d.rid);
      bool is_put = op.k == K::Put;
      const MRegion* sr = nullptr;
      if (!is_put) {
        if (!resolve(pid, op.src, &s, &sprov, why)) return false;
        sr = region(s.rid);
      }
      // Errors the header names, each only where the call can see it at once
      // (not through a provisional pointer, whose checks run at the sync).
      std::vector<int> errs;
      bool dstale = op.dst.kind == 'r' && !dr->live;
      bool sstale = !is_put && op.src.kind == 'r' && !sr->live;
      bool range_remote = false;
      if (dstale || sstale) errs.push_back(BSPK_ERR_PTR);
      if (!is_put) {
        if (d.owner != pid && s.owner != pid) errs.push_back(BSPK_ERR_ARG);
        else if (dr->es != sr->es) errs.push_back(BSPK_ERR_ARG);
        bool dover = d.off + op.n > dr->n, sover = s.off + op.n > sr->n;
        if (dover || sover) errs.push_back(BSPK_ERR_RANGE);
        range_remote = (dover && d.owner != pid) || (sover && s.owner != pid);
      } else {
        if (op.extra) errs.push_back(BSPK_ERR_ARG);
        if (d.off + op.n > dr->n) errs.push_back(BSPK_ERR_RANGE);
        range_remote = d.owner != pid;
      }
      if (errs.size() > 1) return *why = "two errors at once", false;
      if (errs.size() == 1) {
        int e = errs[0];
        if (dprov || sprov) return *why = "error through a provisional pointer (reported at the sync)", false;
        if (e == BSPK_ERR_RANGE && range_remote) return *why = "range error on a remote region", false;
        if (!dstale && !usable(d.rid, why)) return false;
        if (!is_put && !sstale && !usable(s.rid, why)) return false;
        *code = e;
        return true;
      }
      if (!usable(d.rid, why)) return false;
      if (!is_put && !usable(s.rid, why)) return false;
      if (op.n == 0) return true;  // does nothing, not counted
      int cls = d.owner != pid ? 0 : (!is_put && s.owner != pid ? 1 : 2);
      Iv src{s.off, s.off + op.n};
      if (!is_put) {
        if (cls == 1) {
          if (!fsrc_ok(s.rid, src.a, src.b, why)) return false;
        } else if (!zsrc_ok(s.rid, src.a, src.b, why)) {
          return false;
        }
      }
      return target_ok(d.rid, d.off, d.off + op.n, cls, pid, (!is_put && s.rid == d.rid) ? &src : nullptr, why);
    }

    case K::Recv: {
      if (op.rid >= 0 && regions_.count(op.rid)) return *why = "rid reused", false;
      if (op.rid >= 0 && inbox_[pid].empty()) return *why = "keep with no message", false;
      return true;
    }

    case K::RecvEnd:
      if (!inbox_[pid].empty()) return *why = "messages left", false;
      return true;

    case K::Lookup: {
      std::string pr = pair(op.name, op.idx);
      auto it = reg_.find(pr);
      if (it == reg_.end()) return *why = "pair " + pr + " not registered", false;
      if (!usable(it->second, why)) return false;
      // "Pairs are cached: after a named region is freed and registered again,
      // look it up on a process that has not used it."
      auto u = used_[pid].find(pr);
      if (u != used_[pid].end() && u->second != it->second) return *why = "stale cached pair", false;
      if (slots_[pid].count(op.slot)) return *why = "slot reused", false;
      return true;
    }

    case K::WritePtr: {
      const MRegion* r = region(op.rid);
      if (!r || r->owner != pid || !r->live) return *why = "writeptr into a region not owned and live", false;
      if (op.off + kPtrBytes > r->n * r->es) return *why = "pointer past the end", false;
      uint64_t a = op.off / r->es, b = (op.off + kPtrBytes + r->es - 1) / r->es;
      for (auto& z : rs_[op.rid].zsrc)
        if (overlap(a, b, z.a, z.b)) return *why = "write to a zero-copy source after the call (rule 3)", false;
      Resolved s{};
      bool prov;
      if (!resolve(pid, op.src, &s, &prov, why)) return false;
      if (!usable(s.rid, why)) return false;
      return true;
    }

    case K::LoadPtr: {
      const MRegion* r = region(op.rid);
      if (!r || r->owner != pid || !r->live) return *why = "loadptr from a region not owned and live", false;
      if (op.off + kPtrBytes > r->n * r->es) return *why = "pointer past the end", false;
      if (slots_[pid].count(op.slot)) return *why = "slot reused", false;
      uint32_t t0 = r->d.tag[op.off];
      if (!t0 || tag_byte(t0) != 0) return *why = "no pointer at that offset", false;
      for (uint64_t k = 1; k < kPtrBytes; ++k)
        if (r->d.tag[op.off + k] != make_tag(tag_sym(t0), k)) return *why = "no whole pointer at that offset", false;
      return true;
    }
  }
  return false;
}

OpResult Model::exec(int pid, const Op& op) {
  OpResult res;
  std::string why;
  if (!err_.empty()) return res;
  if (!check(pid, op, &res.code, &why)) {
    err_ = "superstep " + std::to_string(step_) + " pid " + std::to_string(pid) + " `" + op_str(op) + "`: " + why;
    return res;
  }
  // Communication (or an attempt at it: a failed call too) rules out a
  // collective later in the superstep (bspk_coll.h: BSPK_ERR_STATE).
  switch (op.k) {
    case K::Send: case K::SendBuf: case K::Copy: case K::Put: case K::Lookup: case K::Free: nonlocal_[pid] = 1; break;
    case K::Malloc: if (!op.name.empty()) nonlocal_[pid] = 1; break;
    case K::Move: if (!regions_[op.src.id].name.empty()) nonlocal_[pid] = 1; break;  // a named src is unregistered
    default: break;
  }
  if (res.code != BSPK_OK) {  // an error return: [call], no effect
    return res;
  }
  switch (op.k) {
    case K::Delay:
      break;

    case K::Move: {
      MRegion &d = regions_[op.dst.id], &sr = regions_[op.src.id];
      paste(&d.d, op.dst.off * d.es, slice(sr.d, op.src.off * sr.es, op.n * sr.es));
      sr.live = false;
      rs_[op.src.id].freed = true;
      sr.d = Bytes{};
      break;
    }

    case K::Coll:
      coll_[pid] = op;
      if (coll_sync(op.idx)) break;  // plain memory: no region
      rs_[op.rid].used = true;
      if (op.dst.kind == 'r') rs_[op.dst.id].used = true;
      break;

    case K::Malloc: {
      MRegion& r = regions_[op.rid];
      r.rid = op.rid, r.owner = pid, r.name = op.name, r.idx = op.idx, r.n = op.n, r.es = op.es, r.contig = op.contig;
      r.created = r.live = true;
      r.made_step = step_;
      r.d.b.assign(op.n * op.es, 0);
      r.d.tag.assign(op.n * op.es, 0);
      fill(&r.d, 0, op.n * op.es, op.pat);
      if (!op.name.empty()) {
        reg_[pair(op.name, op.idx)] = op.rid;
        used_[pid][pair(op.name, op.idx)] = op.rid;
      }
      break;
    }

    case K::Free: {
      MRegion& r = regions_[op.rid];
      r.live = false;
      rs_[op.rid].freed = true;
      r.d = Bytes{};
      break;
    }

    case K::Write:
      fill(&regions_[op.rid].d, op.off * regions_[op.rid].es, op.n * regions_[op.rid].es, op.pat);
      break;

    case K::Send: {
      MRegion& r = regions_[op.rid];
      rs_[op.rid].used = true;
      rs_[op.rid].zsrc.push_back({op.off, op.off + op.n});
      Msg m;
      m.from = pid, m.es = r.es, m.n = op.n, m.tag = op.extra;
      m.d = slice(r.d, op.off * r.es, op.n * r.es);
      sends_.push_back({op.to, m});
      ++cnt_[op.to];
      ++will_[pid][op.to];
      break;
    }

    case K::SendBuf: {
      Msg m;
      m.from = pid, m.es = 1, m.n = op.n;
      m.d.b.resize(op.n), m.d.tag.assign(op.n, 0);
      fill(&m.d, 0, op.n, op.pat);
      sends_.push_back({op.to, m});
      ++cnt_[op.to];
      ++will_[pid][op.to];
      break;
    }

    case K::Copy:
    case K::Put: {
      Resolved d{}, s{};
      bool prov;
      resolve(pid, op.dst, &d, &prov, &why);
      bool is_put = op.k == K::Put;
      if (!is_put) resolve(pid, op.src, &s, &prov, &why);
      rs_[d.rid].used = true;
      if (!is_put) rs_[s.rid].used = true;
      const MRegion& dr = regions_[d.rid];
      if (!dr.name.empty()) used_[pid][pair(dr.name, dr.idx)] = d.rid;
      if (!is_put && !regions_[s.rid].name.empty()) used_[pid][pair(regions_[s.rid].name, regions_[s.rid].idx)] = s.rid;
      if (op.n == 0) break;
      int cls = d.owner != pid ? 0 : (!is_put && s.owner != pid ? 1 : 2);
      Pending pc{pid, cls, d.rid, d.off, op.n, is_put ? -1 : s.rid, s.off, {}};
      if (is_put) {
        pc.data.b.resize(op.n * dr.es), pc.data.tag.assign(op.n * dr.es, 0);
        fill(&pc.data, 0, op.n * dr.es, op.pat);
      } else if (cls != 1) {
        const MRegion& sr = regions_[s.rid];
        pc.data = slice(sr.d, s.off * sr.es, op.n * sr.es);
        rs_[s.rid].zsrc.push_back({s.off, s.off + op.n});
      } else {
        rs_[s.rid].fsrc.push_back({s.off, s.off + op.n});
      }
      rs_[d.rid].tgt.push_back({d.off, d.off + op.n, cls, pid});
      pend_.push_back(std::move(pc));
      // Rule 5: one message at the target: dst's owner for a store, src's
      // owner for a fetch, the issuer for a local copy.
      int target = cls == 0 ? d.owner : (cls == 1 ? s.owner : pid);
      ++cnt_[target];
      ++will_[pid][target];
      break;
    }

    case K::Recv: {
      if (inbox_[pid].empty()) break;  // BSPK_NULL
      res.has_msg = true;
      res.msg = inbox_[pid].front();
      inbox_[pid].pop_front();
      if (op.rid >= 0) {
        MRegion& r = regions_[op.rid];
        r.rid = op.rid, r.owner = pid, r.n = res.msg.n, r.es = res.msg.es, r.sender = res.msg.from, r.tag = res.msg.tag;
        r.contig = op.contig;
        r.created = r.live = true;
        r.made_step = step_;
        r.d = res.msg.d;
      }
      break;
    }

    case K::RecvEnd:
      break;

    case K::Lookup: {
      std::string pr = pair(op.name, op.idx);
      int rid = reg_[pr];
      const MRegion* r = region(rid);
      auto rv = resolved_[pid].find(pr);
      // "If this process owns it or has resolved the pair before, the pointer is exact at once."
      res.exact = r->owner == pid || (rv != resolved_[pid].end() && rv->second == rid);
      Slot sl;
      sl.rid = rid, sl.off = 0, sl.provisional = !res.exact, sl.from_lookup = true, sl.step = step_;
      slots_[pid][op.slot] = sl;
      used_[pid][pr] = rid;
      rs_[rid].used = true;
      lookups_.push_back({pid, pr});
      break;
    }

    case K::WritePtr: {
      Resolved s{};
      bool prov;
      resolve(pid, op.src, &s, &prov, &why);
      rs_[s.rid].used = true;
      syms_.push_back({s.rid, s.off, prov, pid});
      res.sym = static_cast<int>(syms_.size()) - 1;
      MRegion& r = regions_[op.rid];
      for (uint64_t k = 0; k < kPtrBytes; ++k) {
        r.d.b[op.off + k] = 0;  // unknown to the model; never compared
        r.d.tag[op.off + k] = make_tag(res.sym, k);
      }
      break;
    }

    case K::LoadPtr: {
      const MRegion& r = regions_[op.rid];
      res.sym = tag_sym(r.d.tag[op.off]);
      const Sym& sy = syms_[res.sym];
      Slot sl;
      sl.rid = sy.rid, sl.off = sy.off, sl.provisional = sy.provisional, sl.step = step_;
      slots_[pid][op.slot] = sl;
      break;
    }
  }
  return res;
}

void Model::end_step() {
  if (!err_.empty()) return;
  // A collective: on every process alike (then no copy is pending).
  for (int q = 0; q < p_; ++q) {
    const Op &a = coll_[q], &b = coll_[0];
    bool counts = true;  // alltoallv: what q receives from j is what j sends to q
    if (a.k == K::Coll && a.idx == kAlltoallv && b.idx == kAlltoallv)
      for (int j = 0; j < p_; ++j)
        if (coll_[j].k != K::Coll || coll_[j].sc.size() != static_cast<size_t>(p_) ||
            a.rc.at(static_cast<size_t>(j)) != coll_[j].sc[static_cast<size_t>(q)])
          counts = false;
    if ((a.k == K::Coll) != (b.k == K::Coll) || !counts ||
        (a.k == K::Coll && (a.idx != b.idx || (!coll_sync(a.idx) && (a.n != b.n || a.pat != b.pat || a.es != b.es ||
                                                                       a.to != b.to))))) {
      err_ = "superstep " + std::to_string(step_) + ": the collective is not called alike (pid 0 `" + op_str(b) + "`, pid " +
             std::to_string(q) + " `" + op_str(a) + "`)";
      return;
    }
  }
  auto target = [&](int rid) -> MRegion* {
    auto it = regions_.find(rid);
    return it == regions_.end() || !it->second.live ? nullptr : &it->second;
  };
  // Rules 1 and 2: stores from other processes first (disjoint between
  // issuers; one issuer's in issue order: the last wins).
  for (auto& pc : pend_)
    if (pc.cls == 0)
      if (MRegion* d = target(pc.drid)) paste(&d->d, pc.doff * d->es, pc.data);
  // Fetches read their sources as the owners leave the superstep: their
  // writes and the stores above, no other fetch's result.
  for (auto& pc : pend_)
    if (pc.cls == 1) {
      const MRegion& s = regions_[pc.srid];
      pc.data = slice(s.d, pc.soff * s.es, pc.n * s.es);
    }
  for (auto& pc : pend_)
    if (pc.cls == 1)
      if (MRegion* d = target(pc.drid)) paste(&d->d, pc.doff * d->es, pc.data);
  // "Copies between two regions of one process are applied after the stores
  // from other processes, in the order issued."
  for (auto& pc : pend_)
    if (pc.cls == 2)
      if (MRegion* d = target(pc.drid)) paste(&d->d, pc.doff * d->es, pc.data);
  // bspk_recv order: sender pid, then send order; unclaimed messages of this
  // superstep are destroyed.
  for (auto& q : inbox_) q.clear();
  std::stable_sort(sends_.begin(), sends_.end(),
                   [](const std::pair<int, Msg>& a, const std::pair<int, Msg>& b) { return a.second.from < b.second.from; });
  for (auto& [to, m] : sends_) inbox_[to].push_back(std::move(m));
  sends_.clear();
  // A named region freed in this superstep is unregistered at this sync.
  for (auto& [rid, st] : rs_)
    if (st.freed && !regions_[rid].name.empty()) {
      std::string pr = pair(regions_[rid].name, regions_[rid].idx);
      if (reg_.count(pr) && reg_[pr] == rid) reg_.erase(pr);
      freed_at_[pr] = step_;
      freed_by_[pr] = regions_[rid].owner;
    }
  if (coll_[0].k == K::Coll && !coll_sync(coll_[0].idx)) apply_coll();  // (sync-allgather: the runner checks it)
  // Lookups of this superstep are resolved by its end.
  for (auto& [pid, pr] : lookups_)
    if (reg_.count(pr)) resolved_[pid][pr] = reg_[pr];
  for (auto& sl : slots_)
    for (auto& [k, s] : sl)
      if (s.from_lookup && s.step == step_) (void)s;  // the value stays what it was (provisional or not)
}

// ---------------------------------------------------------------- collectives

namespace {
// The element ranges a collective reads (src) and writes (dst) on pid `me`,
// relative to the regions' starts, in elements.
struct CollRanges {
  int srid = -1, drid = -1;
  uint64_t soff = 0, sn = 0, doff = 0, dn = 0;
};
CollRanges coll_ranges(const Op& op, int me, int p) {
  CollRanges r;
  r.srid = op.rid, r.soff = op.off;
  switch (op.idx) {
    case kGather:
      r.sn = op.n;
      if (me == op.to) r.drid = op.dst.id, r.doff = op.dst.off, r.dn = op.n * static_cast<uint64_t>(p);
      break;
    case kAllgather:
      r.sn = op.n, r.drid = op.dst.id, r.doff = op.dst.off, r.dn = op.n * static_cast<uint64_t>(p);
      break;
    case kAlltoall:
      r.sn = op.n * static_cast<uint64_t>(p), r.drid = op.dst.id, r.doff = op.dst.off, r.dn = r.sn;
      break;
    case kAlltoallv:
      r.drid = op.dst.id, r.doff = op.dst.off;
      for (size_t j = 0; j < op.sc.size() && j < op.sd.size(); ++j) r.sn = std::max(r.sn, op.sd[j] + op.sc[j]);
      for (size_t j = 0; j < op.rc.size() && j < op.rd.size(); ++j) r.dn = std::max(r.dn, op.rd[j] + op.rc[j]);
      break;
    default:  // in place
      r.sn = op.n, r.drid = op.rid, r.doff = op.off, r.dn = op.n;
  }
  return r;
}

// acc = acc op next on n elements of es bytes (little-endian bytes).
void coll_fold(int op, uint64_t es, std::vector<uint8_t>* acc, const uint8_t* next, uint64_t n) {
  const int oper = op & 0xff, type = (op >> 8) & 0xff;
  const bool sgn = type == (BSPK_INT32 >> 8) || type == (BSPK_INT64 >> 8);
  const uint64_t mask = es == 4 ? 0xffffffffull : ~0ull;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t a = 0, b = 0;
    std::memcpy(&a, acc->data() + i * es, es);
    std::memcpy(&b, next + i * es, es);
    auto sv = [&](uint64_t v) { return es == 4 ? static_cast<int64_t>(static_cast<int32_t>(v)) : static_cast<int64_t>(v); };
    uint64_t r;
    if (op == 0) {
      r = a * coll_user_k(es) + b;
    } else {
      switch (oper) {
        case BSPK_SUM: r = a + b; break;
        case BSPK_PROD: r = a * b; break;
        case BSPK_MIN: r = sgn ? (sv(b) < sv(a) ? b : a) : (b < a ? b : a); break;
        case BSPK_MAX: r = sgn ? (sv(b) > sv(a) ? b : a) : (b > a ? b : a); break;
        case BSPK_LAND: r = (a != 0 && b != 0) ? 1 : 0; break;
        case BSPK_LOR: r = (a != 0 || b != 0) ? 1 : 0; break;
        case BSPK_BAND: r = a & b; break;
        case BSPK_BOR: r = a | b; break;
        default: r = a ^ b; break;  // BXOR
      }
    }
    r &= mask;
    std::memcpy(acc->data() + i * es, &r, es);
  }
}
}  // namespace

bool Model::coll_ok(int pid, const Op& op, std::string* why) {
  if (nonlocal_[pid]) return *why = "collective after communication in its superstep (BSPK_ERR_STATE)", false;
  if (op.idx < 0 || op.idx >= kNumCollAll) return *why = "unknown collective", false;
  if (coll_sync(op.idx)) {
    if (op.rid != -1 || op.to != -1 || op.es != 0 || op.dst.kind || !op.sc.empty() || op.n > BSPK_SYNC_BLOCK_MAX ||
        (op.extra & ~1ull) || (op.idx == kSyncAllgatherv && op.extra))
      return *why = "bad sync-allgather (rid -1, no root, es 0, n <= BSPK_SYNC_BLOCK_MAX, extra: sizes bit)", false;
    return true;
  }
  if (coll_rooted(op.idx) ? (op.to < 0 || op.to >= p_) : op.to != -1) return *why = "bad root", false;
  if (op.es != 4 && op.es != 8) return *why = "element size not 4 or 8", false;
  const bool reducing = op.idx == kReduce || op.idx == kAllreduce || op.idx == kScan || op.idx == kExscan;
  if (reducing && op.pat != 0) {
    const int oper = static_cast<int>(op.pat) & 0xff, type = static_cast<int>(op.pat >> 8);
    if (op.pat >> 16 || oper < BSPK_SUM || oper > BSPK_BXOR || type < 1 || type > 4) return *why = "not an integer op", false;
    if ((type == 1 || type == 3 ? 4u : 8u) != op.es) return *why = "op type and element size differ", false;
  } else if (!reducing && op.pat != 0) {
    return *why = "op on a collective without one", false;
  }
  if (op.idx == kAlltoallv) {
    const size_t P = static_cast<size_t>(p_);
    if (op.sc.size() != P || op.sd.size() != P || op.rc.size() != P || op.rd.size() != P || op.n != 0)
      return *why = "alltoallv needs p counts and displacements each (and n = 0)", false;
    for (size_t a = 0; a < P; ++a)  // received blocks land in disjoint places
      for (size_t b = a + 1; b < P; ++b)
        if (overlap(op.rd[a], op.rd[a] + op.rc[a], op.rd[b], op.rd[b] + op.rc[b]))
          return *why = "alltoallv receive blocks overlap", false;
  } else if (!op.sc.empty() || !op.sd.empty() || !op.rc.empty() || !op.rd.empty()) {
    return *why = "counts on a collective without them", false;
  }
  const bool needs_dst = op.idx == kAllgather || op.idx == kAlltoall || op.idx == kAlltoallv || (op.idx == kGather && pid == op.to);
  if (needs_dst != (op.dst.kind == 'r') || (op.dst.kind && op.dst.kind != 'r'))
    return *why = needs_dst ? "no destination region" : "destination given where the collective takes none", false;
  const CollRanges r = coll_ranges(op, pid, p_);
  auto region_ok = [&](int rid, uint64_t off, uint64_t n, bool read) {
    const MRegion* m = region(rid);
    if (!m || m->owner != pid || !m->live) return *why = "collective on a region not owned and live", false;
    if (!usable(rid, why)) return false;
    if (m->es != op.es) return *why = "collective element size differs from its region's", false;
    if (off + n > m->n) return *why = "collective range past the end", false;
    if (read)
      for (uint64_t k = off * m->es; k < (off + n) * m->es; ++k)
        if (m->d.tag[k]) return *why = "collective over pointer bytes (unknown to the model)", false;
    return true;
  };
  if (!region_ok(r.srid, r.soff, r.sn, true)) return false;
  if (r.drid >= 0) {
    if (!region_ok(r.drid, r.doff, r.dn, false)) return false;
    if (op.idx >= kGather && r.drid == r.srid) return *why = "source and destination in one region", false;
  }
  return true;
}

// The collective of this superstep (every process called it alike), applied
// to the regions as they are after the local work: the sequential
// definitions of bspk_coll.h, combinations in pid order.
void Model::apply_coll() {
  const Op& c = coll_[0];
  const uint64_t es = c.es, nb = c.n * es;
  std::vector<CollRanges> rg(p_);
  std::vector<std::vector<uint8_t>> in(p_);  // each process's source range, as bytes
  for (int q = 0; q < p_; ++q) {
    rg[q] = coll_ranges(coll_[q], q, p_);
    const MRegion& m = regions_.at(rg[q].srid);
    in[q].assign(m.d.b.begin() + rg[q].soff * es, m.d.b.begin() + (rg[q].soff + rg[q].sn) * es);
  }
  auto put = [&](int q, uint64_t at_elem, const uint8_t* b, uint64_t nbytes) {
    MRegion& m = regions_.at(rg[q].drid);
    uint64_t at = (rg[q].doff + at_elem) * es;
    std::copy(b, b + nbytes, m.d.b.begin() + at);
    std::fill(m.d.tag.begin() + at, m.d.tag.begin() + at + nbytes, 0u);
  };
  auto fold_upto = [&](int upto) {  // x_0 op ... op x_{upto-1}
    std::vector<uint8_t> acc = in[0];
    // "LAND / LOR give 1 or 0 (of the type)": x_0 alone too (p = 1, scan on pid 0, exscan on pid 1).
    const int oper = static_cast<int>(c.pat) & 0xff;
    if (c.pat != 0 && (oper == BSPK_LAND || oper == BSPK_LOR)) coll_fold(static_cast<int>(c.pat), es, &acc, in[0].data(), c.n);
    for (int j = 1; j < upto; ++j) coll_fold(static_cast<int>(c.pat), es, &acc, in[j].data(), c.n);
    return acc;
  };
  switch (c.idx) {
    case kBroadcast:
      for (int q = 0; q < p_; ++q)
        if (q != c.to) put(q, 0, in[c.to].data(), nb);
      break;
    case kReduce: {
      auto acc = fold_upto(p_);
      put(c.to, 0, acc.data(), nb);
      break;
    }
    case kAllreduce: {
      auto acc = fold_upto(p_);
      for (int q = 0; q < p_; ++q) put(q, 0, acc.data(), nb);
      break;
    }
    case kScan:
    case kExscan:
      for (int q = c.idx == kScan ? 0 : 1; q < p_; ++q) {
        auto acc = fold_upto(c.idx == kScan ? q + 1 : q);
        put(q, 0, acc.data(), nb);
      }
      break;
    case kGather:
      for (int j = 0; j < p_; ++j) put(c.to, j * c.n, in[j].data(), nb);
      break;
    case kAllgather:
      for (int q = 0; q < p_; ++q)
        for (int j = 0; j < p_; ++j) put(q, j * c.n, in[j].data(), nb);
      break;
    case kAlltoall:
      for (int q = 0; q < p_; ++q)
        for (int j = 0; j < p_; ++j) put(q, j * c.n, in[j].data() + q * nb, nb);
      break;
    case kAlltoallv:
      for (int q = 0; q < p_; ++q)
        for (int j = 0; j < p_; ++j) {
          const Op &rq = coll_[q], &sj = coll_[j];
          put(q, rq.rd[j], in[j].data() + sj.sd[q] * es, rq.rc[j] * es);
        }
      break;
  }
}

std::string validate(const Program& pr, Where* where) {
  Model m(pr);
  for (size_t s = 0; s < pr.steps.size(); ++s) {
    const Step& st = pr.steps[s];
    if (static_cast<int>(st.ops.size()) != pr.p) return "superstep " + std::to_string(s) + ": wrong number of processes";
    m.begin_step(&st);
    for (int q = 0; q < pr.p; ++q)
      for (size_t i = 0; i < st.ops[q].size(); ++i) {
        m.exec(q, st.ops[q][i]);
        if (!m.error().empty()) {
          if (where) *where = Where{static_cast<int>(s), q, static_cast<int>(i)};
          return m.error();
        }
      }
    m.end_step();
    if (!m.error().empty()) {
      if (where) *where = Where{static_cast<int>(s), -1, -1};
      return m.error();
    }
  }
  return "";
}

}  // namespace model
