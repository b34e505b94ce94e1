// tests/model/program.cpp -- feature switches and the text form of a program.
#include "program.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace model {

const std::vector<std::pair<std::string, std::string>>& Features::list() {
  static const std::vector<std::pair<std::string, std::string>> l = {
      {"lookup-ptr-same-step",
       "write a bspk_lookup pointer into a region in the superstep of the lookup (possibly provisional), "
       "for another process to follow (issue 12 defect 1)"},
      {"rereg",
       "register a freed (name, idx) again, one or more supersteps after the free, on any process "
       "(issue 12 defect 5; soak: fails on another process and on the same one)"},
      {"free-looked-up",
       "free a named region that another process has looked up (the lookup may still be on its way: "
       "soak finding, regress/open/lookup-unanswered.prog)"},
      {"overlap-provisional",
       "one process's overlapping copies / puts into the same elements, one of them through a provisional "
       "bspk_lookup pointer (destination or source) (rule 4: the last issued wins; soak finding, regress/open/put-order-provisional.prog)"},
      {"lookup-lazy",
       "bspk_lookup in bspk_expect supersteps, where the pair's home may run supersteps ahead (soak: some "
       "lookups are never answered and the sync times out, regress/open/lookup-unanswered.prog)"},
      {"lookup-resolved",
       "a bspk_lookup pointer is resolved by the end of its superstep: check its accessors then "
       "(\"afterwards the values of the region it names\"), and that a later lookup of the pair on that process "
       "is exact at once"},
      {"copy0-provisional",
       "bspk_copy of n = 0 elements through a provisional bspk_lookup pointer (\"n == 0 does nothing\")"},
      {"anon-remote", "follow pointers to anonymous regions of other processes (stores into / fetches from them)"},
      {"contig", "bspk_malloc_contiguous regions"},
      {"errors", "calls the header says must fail ([call] errors: PID, RANGE, ARG, PTR), checked for their code"},
      {"fetch", "fetches (bspk_copy with a remote source)"},
      {"delays", "random per-process sleeps and busy work (processes supersteps apart)"},
      {"move",
       "bspk_move of a region's elements (mostly a received message's) into another own region at once, often "
       "frame-aligned (frame flips), with stores, copies and sends around it in the superstep"},
      {"recv-contig",
       "bspk_recv_contiguous for some messages (mixed with bspk_recv in one queue); contiguous regions checked to stay "
       "in one piece (bspk_span from element 0 spans all) after copies, moves and collectives"},
      {"tags", "bspk_send_tag with random 64-bit tags (bspk_tag checked on every message and on every region)"},
      {"coll",
       "supersteps ended by a collective of bspk_coll.h (broadcast, reduce, allreduce, scan, exscan, gather, "
       "allgather, alltoall; built-in integer ops and a non-commutative user op) on existing or fresh regions, "
       "after local work and claimed or unclaimed messages; off: the programs of the seeds as before it"},
      {"sync-allgather",
       "some of those supersteps end in bspk_sync_allgather (blocks of 0-16384 bytes, alike or different per process, "
       "with sizes or without: then BSPK_ERR_ARG naming the first differing pid) or bspk_sync_allgatherv (the block in "
       "pieces, empty ones NULL; read called once per process in pid order); off: the programs of the seeds as before it"},
  };
  return l;
}

Features::Features() {
  for (auto& [name, what] : list()) on[name] = true;
}

bool Features::operator()(const std::string& name) const {
  auto it = on.find(name);
  if (it == on.end()) {
    std::fprintf(stderr, "bspk_model: internal: unknown feature %s\n", name.c_str());
    std::abort();
  }
  return it->second;
}

bool Features::set(const std::string& spec) {
  std::string name = spec;
  bool v = true;
  if (auto eq = spec.find('='); eq != std::string::npos) {
    name = spec.substr(0, eq);
    std::string val = spec.substr(eq + 1);
    if (val == "on" || val == "1") v = true;
    else if (val == "off" || val == "0") v = false;
    else return false;
  } else if (spec.rfind("no-", 0) == 0) {
    name = spec.substr(3);
    v = false;
  }
  if (name == "rereg-next-step" || name == "rereg-other") name = "rereg";  // earlier names (soak logs)
  if (!on.count(name)) return false;
  on[name] = v;
  return true;
}

std::string Features::str() const {
  std::string s;
  for (auto& [name, v] : on) s += (s.empty() ? "" : ",") + name + (v ? "=on" : "=off");
  return s;
}

std::string Features::cli() const {
  std::string s;
  Features def;
  for (auto& [name, v] : on)
    if (def.on[name] != v) s += std::string(s.empty() ? "" : " ") + "--feature " + name + (v ? "=on" : "=off");
  return s;
}

const char* kname(K k) {
  switch (k) {
    case K::Malloc: return "malloc";
    case K::Free: return "free";
    case K::Write: return "write";
    case K::Send: return "send";
    case K::SendBuf: return "sendbuf";
    case K::Copy: return "copy";
    case K::Put: return "put";
    case K::Recv: return "recv";
    case K::RecvEnd: return "recvend";
    case K::Lookup: return "lookup";
    case K::WritePtr: return "writeptr";
    case K::LoadPtr: return "loadptr";
    case K::Delay: return "delay";
    case K::Move: return "move";
    case K::Coll: return "coll";
  }
  return "?";
}

const char* coll_name(int kind) {
  static const char* const n[] = {"broadcast", "reduce",    "allreduce", "scan",           "exscan",
                                  "gather",    "allgather", "alltoall",  "alltoallv",      "sync_allgather",
                                  "sync_allgatherv"};
  static_assert(sizeof n / sizeof n[0] == kNumCollAll, "a name per collective");
  return kind >= 0 && kind < kNumCollAll ? n[kind] : "?";
}

bool coll_rooted(int kind) { return kind == kBroadcast || kind == kReduce || kind == kGather; }

const char* mname(Mode m) {
  switch (m) {
    case Mode::Expect: return "expect";
    case Mode::WillSend: return "will_send";
    case Mode::Counted: return "counted";
  }
  return "?";
}

size_t Program::nops() const {
  size_t n = 0;
  for (auto& st : steps)
    for (auto& v : st.ops) n += v.size();
  return n;
}

static std::string ref_str(const Ref& r) {
  if (!r.kind) return "null";
  return std::string(1, r.kind) + std::to_string(r.id) + "+" + std::to_string(r.off);
}

static std::string list_str(const std::vector<uint64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s.empty() ? "-" : s;
}

// "a,b,c" (or "-": empty); the other way round of list_str.
static std::vector<uint64_t> parse_list(const std::string& s) {
  std::vector<uint64_t> v;
  size_t pos = 0;
  while (!s.empty() && s != "-" && pos <= s.size()) {
    size_t c = s.find(',', pos);
    if (c == std::string::npos) c = s.size();
    v.push_back(std::strtoull(s.substr(pos, c - pos).c_str(), nullptr, 10));
    pos = c + 1;
  }
  return v;
}

std::string op_str(const Op& op) {
  std::ostringstream o;
  o << kname(op.k);
  auto kv = [&](const char* k, auto v) { o << ' ' << k << '=' << v; };
  switch (op.k) {
    case K::Malloc:
      kv("rid", op.rid), kv("n", op.n), kv("es", op.es);
      if (!op.name.empty()) kv("name", op.name), kv("idx", op.idx);
      if (op.contig) kv("contig", op.contig);
      kv("pat", op.pat);
      break;
    case K::Free: kv("rid", op.rid); break;
    case K::Write: kv("rid", op.rid), kv("off", op.off), kv("n", op.n), kv("pat", op.pat); break;
    case K::Send:
      kv("to", op.to), kv("rid", op.rid), kv("off", op.off), kv("n", op.n);
      if (op.extra) kv("tag", op.extra);
      break;
    case K::SendBuf: kv("to", op.to), kv("n", op.n), kv("pat", op.pat); break;
    case K::Copy: kv("dst", ref_str(op.dst)), kv("src", ref_str(op.src)), kv("n", op.n); break;
    case K::Put:
      kv("dst", ref_str(op.dst)), kv("n", op.n), kv("pat", op.pat);
      if (op.extra) kv("extra", op.extra);
      break;
    case K::Recv:
      kv("rid", op.rid);
      if (op.contig) kv("contig", op.contig);
      break;
    case K::RecvEnd: break;
    case K::Lookup: kv("slot", op.slot), kv("name", op.name), kv("idx", op.idx); break;
    case K::WritePtr: kv("rid", op.rid), kv("off", op.off), kv("src", ref_str(op.src)); break;
    case K::LoadPtr: kv("slot", op.slot), kv("rid", op.rid), kv("off", op.off); break;
    case K::Delay: kv("us", op.us), kv("busy", op.busy); break;
    case K::Move: kv("dst", ref_str(op.dst)), kv("src", ref_str(op.src)), kv("n", op.n); break;
    case K::Coll:
      kv("what", coll_name(op.idx));
      if (coll_sync(op.idx)) {
        kv("n", op.n), kv("pat", op.pat), kv("extra", op.extra);
        break;
      }
      if (coll_rooted(op.idx)) kv("root", op.to);
      kv("n", op.n), kv("op", op.pat), kv("es", op.es), kv("rid", op.rid), kv("off", op.off);
      if (op.dst.kind) kv("dst", ref_str(op.dst));
      if (op.idx == kAlltoallv) kv("sc", list_str(op.sc)), kv("sd", list_str(op.sd)), kv("rc", list_str(op.rc)), kv("rd", list_str(op.rd));
      break;
  }
  return o.str();
}

std::string program_str(const Program& pr) {
  std::ostringstream o;
  o << "# bspk_model program: " << pr.steps.size() << " supersteps, " << pr.nops() << " operations\n";
  o << "program seed=" << pr.seed << " p=" << pr.p << " frame=" << pr.frame << " prefix=" << pr.prefix
    << " features=" << pr.feat.str() << "\n";
  for (size_t s = 0; s < pr.steps.size(); ++s) {
    const Step& st = pr.steps[s];
    o << "step " << s << " mode=" << mname(st.mode) << " decl=";
    for (int q = 0; q < pr.p; ++q) o << (q ? "," : "") << st.decl_at[q];
    o << "\n";
    for (int q = 0; q < pr.p; ++q)
      for (auto& op : st.ops[q]) o << "  op " << q << ' ' << op_str(op) << "\n";
  }
  return o.str();
}

static bool parse_ref(const std::string& s, Ref* r) {
  if (s == "null") {
    *r = Ref{};
    return true;
  }
  if (s.size() < 4 || (s[0] != 'r' && s[0] != 's')) return false;
  auto plus = s.find('+');
  if (plus == std::string::npos) return false;
  r->kind = s[0];
  r->id = std::atoi(s.substr(1, plus - 1).c_str());
  r->off = std::strtoull(s.substr(plus + 1).c_str(), nullptr, 10);
  return true;
}

bool parse_program(const std::string& text, Program* pr, std::string* err) {
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  *pr = Program{};
  bool have_header = false;
  auto fail = [&](const std::string& m) {
    *err = "line " + std::to_string(lineno) + ": " + m;
    return false;
  };
  while (std::getline(in, line)) {
    ++lineno;
    std::istringstream ls(line);
    std::string word;
    if (!(ls >> word) || word[0] == '#') continue;
    std::vector<std::string> toks;
    std::string t;
    while (ls >> t) toks.push_back(t);
    auto fields = [&](size_t from) {
      std::map<std::string, std::string> m;
      for (size_t i = from; i < toks.size(); ++i) {
        auto eq = toks[i].find('=');
        if (eq != std::string::npos) m[toks[i].substr(0, eq)] = toks[i].substr(eq + 1);
      }
      return m;
    };
    if (word == "program") {
      auto f = fields(0);
      pr->seed = std::strtoull(f["seed"].c_str(), nullptr, 10);
      pr->p = std::atoi(f["p"].c_str());
      pr->frame = std::strtoull(f["frame"].c_str(), nullptr, 10);
      pr->prefix = f["prefix"];
      std::string feats = f["features"];
      size_t pos = 0;
      while (pos < feats.size()) {
        size_t c = feats.find(',', pos);
        if (c == std::string::npos) c = feats.size();
        if (!pr->feat.set(feats.substr(pos, c - pos))) return fail("unknown feature " + feats.substr(pos, c - pos));
        pos = c + 1;
      }
      if (pr->p < 1 || pr->frame < 64) return fail("bad program line");
      have_header = true;
    } else if (word == "step") {
      if (!have_header) return fail("step before program line");
      auto f = fields(1);
      Step st;
      std::string m = f["mode"];
      if (m == "expect") st.mode = Mode::Expect;
      else if (m == "will_send") st.mode = Mode::WillSend;
      else if (m == "counted") st.mode = Mode::Counted;
      else return fail("bad mode " + m);
      st.ops.resize(pr->p);
      st.decl_at.assign(pr->p, 0);
      const std::vector<uint64_t> d = parse_list(f["decl"]);
      for (size_t q = 0; q < d.size() && q < st.decl_at.size(); ++q) st.decl_at[q] = static_cast<int>(d[q]);
      pr->steps.push_back(st);
    } else if (word == "op") {
      if (pr->steps.empty() || toks.size() < 2) return fail("op outside a step");
      int q = std::atoi(toks[0].c_str());
      if (q < 0 || q >= pr->p) return fail("bad pid");
      Op op;
      bool found = false;
      for (int k = 0; k <= static_cast<int>(K::Coll); ++k)
        if (toks[1] == kname(static_cast<K>(k))) op.k = static_cast<K>(k), found = true;
      if (!found) return fail("unknown op " + toks[1]);
      auto f = fields(2);
      auto num = [&](const char* k, uint64_t def = 0) {
        return f.count(k) ? std::strtoull(f[k].c_str(), nullptr, 10) : def;
      };
      auto inum = [&](const char* k, int def) { return f.count(k) ? std::atoi(f[k].c_str()) : def; };
      op.rid = inum("rid", -1);
      op.off = num("off"), op.n = num("n"), op.es = num("es"), op.pat = num("pat"), op.extra = num("extra");
      op.to = inum("to", -1), op.idx = inum("idx", 0), op.contig = inum("contig", 0);
      op.slot = inum("slot", -1), op.us = inum("us", 0), op.busy = inum("busy", 0);
      op.name = f.count("name") ? f["name"] : "";
      if (op.k == K::Send) op.extra = num("tag");
      if (op.k == K::Coll) {
        op.idx = -1;
        for (int c = 0; c < kNumCollAll; ++c)
          if (f["what"] == coll_name(c)) op.idx = c;
        if (op.idx < 0) return fail("unknown collective " + f["what"]);
        op.to = inum("root", -1), op.pat = coll_sync(op.idx) ? num("pat") : num("op");
        op.sc = parse_list(f["sc"]), op.sd = parse_list(f["sd"]), op.rc = parse_list(f["rc"]), op.rd = parse_list(f["rd"]);
      }
      if (f.count("dst") && !parse_ref(f["dst"], &op.dst)) return fail("bad dst");
      if (f.count("src") && !parse_ref(f["src"], &op.src)) return fail("bad src");
      pr->steps.back().ops[q].push_back(op);
    } else {
      return fail("unknown line " + word);
    }
  }
  if (!have_header) return fail("no program line");
  return true;
}

bool read_file(const std::string& path, std::string* out) {
  std::ifstream f(path);
  if (!f) return false;
  std::ostringstream s;
  s << f.rdbuf();
  *out = s.str();
  return true;
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  return static_cast<bool>(f);
}

}  // namespace model
