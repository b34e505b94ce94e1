// dsm/directory.cpp -- named regions: registration with the pair's home,
// lookups and their handles, and the home's answers (see dsm.h).
#include <bspk.h>

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "dsm/dsm.h"

namespace bspk::dsm {

using wire::Header;

int Dsm::home(const std::string& name, int idx) const {
  uint64_t x = 1469598103934665603ull;  // FNV-1a over the name and the index
  for (unsigned char c : name) x = (x ^ c) * 1099511628211ull;
  for (int b = 0; b < 4; ++b) x = (x ^ ((static_cast<uint32_t>(idx) >> (8 * b)) & 0xff)) * 1099511628211ull;
  return static_cast<int>(x % static_cast<uint64_t>(nprocs_));
}

std::string Dsm::pair_text(const std::string& name, int idx) const {
  return strprintf("(\"%s\", %d)", name.c_str(), idx);
}

void Dsm::send_dir(int dest, const DirRec& r) { engine_.send_control(dest, kDir, &r, sizeof r); }

void Dsm::registered(const bspk_ptr& p, const char* name, int idx) {
  DirRec r = dir_rec(DirOp::Register, name);
  r.idx = idx;
  r.owner = pid_;
  r.region = p.region;
  r.region_gen = p.gen;
  r.nelems = p.nelems;
  r.elem_size = p.elem_size;
  r.step = engine_.step();
  int h = home(name, idx);
  regs_sent_[static_cast<size_t>(h)]++;
  acks_waiting_++;
  send_dir(h, r);
}

void Dsm::freeing(uint32_t region, uint32_t gen) {
  const auto* nm = comem_.name_of(region);
  if (!nm) return;
  DirRec r = dir_rec(DirOp::Unregister, nm->first);
  r.idx = nm->second;
  r.owner = pid_;
  r.region = region;
  r.region_gen = gen;
  r.step = engine_.step();  // freed in this superstep: unregistered from the next one
  freed_at_[{nm->first, nm->second}] = Freed{region, gen, engine_.step()};
  // At once, so that the home learns of the free before most lookups made
  // after it; but never ahead of this process's own Register of the pair
  // (nothing orders two messages): with registrations unacknowledged, at the
  // sync once they are.
  const int h = home(nm->first, nm->second);
  if (acks_waiting_ == 0 && h == pid_) on_dir(pid_, r);  // this process is the home: now, not after queued lookups
  else if (acks_waiting_ == 0) send_dir(h, r);
  else unregisters_.push_back(r);
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
    if (h.state == Handle::Found) return resolve(handle_ptr(id));
    if (h.state == Handle::Pending) return handle_ptr(id);
  } else {
    id = static_cast<uint32_t>(handles_.size());
    handles_.push_back(Handle{});
    handles_[id].name = nm;
    handles_[id].idx = idx;
    handle_of_[{nm, idx}] = id;
  }
  ask(id);  // again, if the home said "unknown" in an earlier superstep
  return handle_ptr(id);
}

// Ask the pair's home to resolve handle `id` for the current superstep (or,
// for a handle standing for another process's, that process).
void Dsm::ask(uint32_t id) {
  Handle& h = handles_[id];
  h.state = Handle::Pending;
  h.asked = engine_.step();
  lookups_waiting_++;
  if (h.maker >= 0) {
    DirRec q = dir_rec(DirOp::HandleQuery, "");
    q.handle = id;
    q.count = h.maker_handle;
    q.region_gen = h.maker_salt;  // checked by the maker
    q.step = h.asked;
    send_dir(h.maker, q);
    return;
  }
  DirRec r = dir_rec(DirOp::Lookup, h.name);
  r.idx = h.idx;
  r.handle = id;
  r.step = h.asked;
  send_dir(home(h.name, h.idx), r);
}

bspk_ptr Dsm::resolve(const bspk_ptr& p) const {
  if (!is_handle(p)) return p;
  uint32_t id = p.region;
  if (p.sender != pid_) {
    auto it = foreign_of_.find({p.sender, p.region, p.gen});
    if (it == foreign_of_.end()) return p;
    id = it->second;
  } else if (!own_handle(p)) {
    return p;
  }
  if (id >= handles_.size()) return p;
  const Handle& h = handles_[id];
  if (h.state != Handle::Found) return p;
  return bspk_ptr{p.offset, h.nelems, h.region, h.owner, h.elem_size, h.owner, h.gen};
}

bspk_ptr Dsm::adopt(const bspk_ptr& p) {
  if (!is_handle(p) || p.sender == pid_) return p;
  if (p.sender < 0 || p.sender >= nprocs_)
    fail(BSPK_ERR_PTR,
         "a provisional bspk_lookup pointer made on pid %d, outside [0, %d): not a pointer returned by bspk_lookup "
         "(corrupt, or from another job)",
         p.sender, nprocs_);
  auto [it, fresh] = foreign_of_.try_emplace({p.sender, p.region, p.gen}, 0);
  if (fresh) {
    it->second = static_cast<uint32_t>(handles_.size());
    handles_.push_back(Handle{});
    handles_.back().maker = p.sender;
    handles_.back().maker_handle = p.region;
    handles_.back().maker_salt = p.gen;
    ask(it->second);
  }
  return handle_ptr(it->second, p.offset);
}

void Dsm::answer_handle(int asker, uint32_t their, uint32_t k, uint32_t salt) {
  DirRec r{};
  r.op = static_cast<uint32_t>(DirOp::LookupReply);
  r.handle = their;
  if (k == 0 || k >= handles_.size() || handles_[k].maker >= 0 || salt != handle_salt_) {
    r.status = 2;  // never given out by this process
  } else {
    const Handle& h = handles_[k];
    if (h.state == Handle::Pending) {
      handle_waiters_[k].emplace_back(asker, their);  // answered when k is resolved
      return;
    }
    r = dir_rec(DirOp::LookupReply, h.name);
    r.handle = their;
    r.idx = h.idx;
    r.status = h.state == Handle::Found ? 0 : 1;
    r.owner = h.owner;
    r.region = h.region;
    r.region_gen = h.gen;
    r.nelems = h.nelems;
    r.elem_size = h.elem_size;
  }
  send_dir(asker, r);
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
    r.region_gen = e->gen;
    r.nelems = e->nelems;
    r.elem_size = e->elem_size;
  }
  send_dir(u.asker, r);
}

Dsm::Entry* Dsm::entry_at(const std::pair<std::string, int>& key, uint32_t s) {
  auto it = dir_.find(key);
  if (it == dir_.end()) return nullptr;
  for (size_t i = it->second.size(); i-- > 0;)
    if (!wire::step_after(it->second[i].reg_step, s)) return &it->second[i];
  return nullptr;
}

Dsm::Entry* Dsm::entry_of(const std::pair<std::string, int>& key, int owner, uint32_t region, uint32_t gen) {
  auto it = dir_.find(key);
  if (it == dir_.end()) return nullptr;
  for (Entry& e : it->second)
    if (e.owner == owner && e.region == region && e.gen == gen) return &e;
  return nullptr;
}

bool Dsm::held_registration(const std::pair<std::string, int>& key, uint32_t s) const {
  auto c = contested_.find(key);
  if (c == contested_.end()) return false;
  for (const DirRec& reg : c->second.regs)
    if (!wire::step_after(reg.step, s)) return true;
  return false;
}

void Dsm::ask_holder(const std::pair<std::string, int>& key, const Entry& e, uint32_t step) {
  DirRec q = dir_rec(DirOp::OwnerQuery, key.first);
  q.idx = key.second;
  q.step = step;
  q.region = e.region;
  q.region_gen = e.gen;
  // One question per (pair, superstep) at a time; what waits on it is kept
  // in contested_[key] and decided again when any answer about the pair comes.
  if (asked_.insert({key.first, key.second, step}).second) send_dir(e.owner, q);
}

// The home's answer to a lookup made in superstep u.step. An entry is given
// out only once its owner has confirmed the region live in that superstep:
// a free before it may not have reached the home yet, and a registration of
// the pair by another process in an earlier superstep then must win (issue
// 12, defect 5). A pair not registered waits for the progress round of
// u.step (see home_try_resolve).
void Dsm::home_lookup(const Unresolved& u) {
  auto key = std::make_pair(u.name, u.idx);
  Entry* e = entry_at(key, u.step);
  int live = e ? e->live_in(u.step) : 0;
  if (live > 0) {
    answer_lookup(u, e);
    return;
  }
  if (live < 0) {
    ask_holder(key, *e, u.step);
    contested_[key].lookups.push_back(u);
    return;
  }
  if (held_registration(key, u.step)) {
    // A registration of the pair made by u.step waits for its former
    // holder's answer: it may be the one that names the pair in u.step.
    contested_[key].lookups.push_back(u);
    return;
  }
  unresolved_.push_back(u);
  // A progress round for exactly this superstep: one for a later superstep
  // would need the asker to enter that superstep's sync, while it waits for
  // this answer in the sync ending u.step (issue 12, defect 4); one for an
  // earlier superstep says nothing about u.step.
  if (!rounds_.count(u.step)) {
    Round& rd = rounds_[u.step];
    rd.announced.assign(static_cast<size_t>(nprocs_), -1);
    DirRec q = dir_rec(DirOp::ProgQuery, "");
    q.step = u.step;
    for (int d = 0; d < nprocs_; ++d) send_dir(d, q);
  }
}

// The home's decision on a registration (reg.owner: the registering pid).
// A pair held by another process may have been freed there without the home
// knowing yet (its Unregister travels at that process's next sync, and
// nothing orders it with this Register): ask the holder whether its region
// was still live in the registration's superstep, and hold the registration
// until it answers (issue 12, defect 5). The pair's registrations are kept
// in superstep order, so that lookups made before this one still get the
// region that was registered then.
void Dsm::home_register(const DirRec& reg) {
  std::string name(reg.text, strnlen(reg.text, sizeof reg.text));
  auto key = std::make_pair(name, reg.idx);
  Entry* cur = entry_at(key, reg.step);
  int live = !cur || cur->owner == reg.owner ? 0 : cur->live_in(reg.step);
  if (live < 0) {  // not known live then: ask
    ask_holder(key, *cur, reg.step);
    contested_[key].regs.push_back(reg);
    return;
  }
  if (live > 0) {
    // The holder's region was live in reg.step: a real duplicate. Keep the
    // first owner; both are told.
    DirRec ack = dir_rec(DirOp::RegAck, name);
    ack.idx = reg.idx;
    ack.status = 1;
    ack.owner = cur->owner;
    ack.region = cur->region;
    ack.step = reg.step;
    send_dir(reg.owner, ack);
    DirRec n = dir_rec(DirOp::DupNotice,
                       strprintf("the region %s registered by this process is also registered by pid %d "
                                 "(bspk_malloc in its superstep %u): names must be unique in the whole job",
                                 pair_text(name, reg.idx).c_str(), reg.owner, reg.step));
    send_dir(cur->owner, n);
    return;
  }
  // New, or the same owner registering the pair again after freeing it (its
  // old registration ends where this one starts, if its Unregister is late).
  if (cur && !cur->freed && cur->owner == reg.owner) {
    cur->freed = true;
    cur->freed_at = reg.step - 1;
  }
  std::vector<Entry>& hist = dir_[key];
  Entry fresh{reg.owner, reg.region, reg.region_gen, reg.nelems, reg.elem_size, reg.step};
  fresh.reg_step = reg.step;
  size_t at = hist.size();
  while (at > 0 && wire::step_after(hist[at - 1].reg_step, reg.step)) --at;  // kept in superstep order
  hist.insert(hist.begin() + static_cast<long>(at), fresh);
  if (hist.size() > kDirHistory) hist.erase(hist.begin());
  DirRec ack = dir_rec(DirOp::RegAck, name);
  ack.idx = reg.idx;
  send_dir(reg.owner, ack);
  // Lookups of the pair waiting for it, made in its superstep or later: answered now.
  for (size_t i = 0; i < unresolved_.size();) {
    const Unresolved& u = unresolved_[i];
    Entry* e = u.name == name && u.idx == reg.idx ? entry_at(key, u.step) : nullptr;
    if (e && e->live_in(u.step) > 0) {
      answer_lookup(unresolved_[i], e);
      unresolved_[i] = std::move(unresolved_.back());
      unresolved_.pop_back();
    } else {
      ++i;
    }
  }
}

// The holder's side of an OwnerQuery about its pair: answered once this
// process has entered the sync ending the superstep before the registration
// (so every free it made before that superstep has happened): status 0 if its
// region was live in that superstep, 1 if it had been freed before it.
void Dsm::answer_owner_queries() {
  for (size_t i = 0; i < owner_queries_.size();) {
    const OwnerQ& q = owner_queries_[i];
    if (q.r.step != engine_.options().first_step && !has_entered(q.r.step - 1)) {
      ++i;
      continue;
    }
    std::string name(q.r.text, strnlen(q.r.text, sizeof q.r.text));
    bspk_ptr mine = comem_.find_named(name, q.r.idx);
    bool live = mine.region == q.r.region && mine.gen == q.r.region_gen;
    // Freed: when? (Known exactly for the pair's last freed region; an
    // earlier one of the pair was freed before that one was registered.)
    uint32_t freed = q.r.step - 1;
    if (!live) {
      auto f = freed_at_.find({name, q.r.idx});
      if (f != freed_at_.end() && f->second.region == q.r.region && f->second.gen == q.r.region_gen) {
        freed = f->second.step;
        live = !wire::step_before(freed, q.r.step);  // freed in or after that superstep
      }
    }
    DirRec a = dir_rec(DirOp::OwnerReply, name);
    if (!live) a.count = freed;  // the superstep it was freed in
    a.idx = q.r.idx;
    a.step = q.r.step;
    a.region = q.r.region;
    a.region_gen = q.r.region_gen;
    a.status = live ? 0 : 1;
    send_dir(q.home, a);
    owner_queries_[i] = owner_queries_.back();
    owner_queries_.pop_back();
  }
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
      if (!wire::step_after(u.step, s)) {
        auto key = std::make_pair(u.name, u.idx);
        Entry* e = entry_at(key, u.step);
        int live = e ? e->live_in(u.step) : 0;
        Unresolved v = std::move(u);
        unresolved_[i] = std::move(unresolved_.back());
        unresolved_.pop_back();
        if (live == 0 && held_registration(key, v.step)) {
          // Every registration sent by the end of v.step has arrived, but
          // one of them is held for its pair's former holder (contested_):
          // "unknown" now would be wrong when the holder says it had freed
          // the pair. Decided when that answer comes (soak finding: a pair
          // freed and registered again by another process, looked up in
          // the second registration's superstep, answered "unknown").
          contested_[key].lookups.push_back(std::move(v));
        } else if (live >= 0) {
          answer_lookup(v, live ? e : nullptr);
        } else {
          ask_holder(key, *e, v.step);
          contested_[key].lookups.push_back(std::move(v));
        }
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
    if (has_entered(s)) {
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
      DirRec reg = r;
      reg.owner = src;
      home_register(reg);
      home_try_resolve();
      break;
    }
    case DirOp::OwnerQuery:
      owner_queries_.push_back(OwnerQ{src, r});
      answer_owner_queries();
      break;
    case DirOp::OwnerReply: {
      auto key = std::make_pair(name, r.idx);
      if (Entry* e = entry_of(key, src, r.region, r.region_gen)) {
        if (r.status == 1) {  // freed in superstep r.count, before r.step
          e->freed = true;
          e->freed_at = static_cast<uint32_t>(r.count);
        } else if (wire::step_after(r.step, e->live_through)) {
          e->live_through = r.step;
        }
      }
      asked_.erase({name, r.idx, r.step});
      auto c = contested_.find(key);
      if (c == contested_.end()) break;
      Contested waiting = std::move(c->second);
      contested_.erase(c);
      // Decide again what waited on the pair (each may wait on a question still out).
      for (const DirRec& reg : waiting.regs) home_register(reg);
      for (const Unresolved& u : waiting.lookups) home_lookup(u);
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
      Entry* e = entry_of({name, r.idx}, src, r.region, r.region_gen);
      if (e && !e->freed) {
        e->freed = true;  // kept for lookups of supersteps up to r.step
        e->freed_at = r.step;
      }
      break;
    }
    case DirOp::Lookup:
      home_lookup(Unresolved{src, r.handle, r.step, name, r.idx});
      break;
    case DirOp::LookupReply: {
      if (r.handle == 0 || r.handle >= handles_.size()) break;
      Handle& h = handles_[r.handle];
      if (h.state != Handle::Pending) break;
      if (lookups_waiting_) lookups_waiting_--;
      if (r.status == 0) {
        h.state = Handle::Found;
        h.owner = r.owner;
        h.region = r.region;
        h.gen = r.region_gen;
        h.nelems = r.nelems;
        h.elem_size = r.elem_size;
      } else if (r.status == 1 && h.maker >= 0) {
        // The maker's handle names a pair not known when it asked: ask the
        // pair's home ourselves, as the maker would on using it now.
        h.name = name;
        h.idx = r.idx;
        h.maker = -1;
        ask(r.handle);
        break;
      } else {
        h.state = r.status == 2 ? Handle::Invalid : Handle::Unknown;
      }
      auto w = handle_waiters_.find(r.handle);
      if (w != handle_waiters_.end()) {
        auto waiting = std::move(w->second);
        handle_waiters_.erase(w);
        for (auto [asker, theirs] : waiting) answer_handle(asker, theirs, r.handle, handle_salt_);
      }
      break;
    }
    case DirOp::HandleQuery:
      answer_handle(src, r.handle, static_cast<uint32_t>(r.count), r.region_gen);
      break;
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
    case DirOp::ErrFlush:
      if (final_done_) answer_flush(src);
      else flush_waiting_.push_back(src);
      break;
    case DirOp::ErrCount:
      if (!cerr_told_.empty()) cerr_told_[static_cast<size_t>(src)] = static_cast<int64_t>(r.count);
      break;
    case DirOp::CopyError: {
      cerr_recv_[static_cast<size_t>(src)]++;
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

}  // namespace bspk::dsm
