#include "base/config.h"

#include <bspk.h>

#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "base/env.h"
#include "base/error.h"
#include "base/version.h"  // constants the table names (kMaxAheadLimit, kWireVersion)

namespace bspk::config {

namespace {

constexpr Row kRows[] = {
#define BSPK_CONFIG_VAR(ID, NAME, TYPE, CATEGORY, DEFAULT, LO, HI, CHOICES, DEFAULT_TEXT, HELP) \
  Row{Var::ID, NAME, Type::TYPE, Category::CATEGORY, Default(DEFAULT), LO, HI, CHOICES, DEFAULT_TEXT, HELP},
#include "base/config_defs.h"
#undef BSPK_CONFIG_VAR
};
static_assert(std::size(kRows) == kNumVars);

constexpr bool same(const char* a, const char* b) {
  while (*a && *a == *b) ++a, ++b;
  return *a == *b;
}

// Is word one of "a|b|c"?
constexpr bool among(const char* word, const char* choices) {
  const char* p = choices;
  for (;;) {
    const char* w = word;
    while (*w && *p == *w) ++p, ++w;
    if (!*w && (*p == '|' || !*p)) return true;
    while (*p && *p != '|') ++p;
    if (!*p) return false;
    ++p;
  }
}

constexpr bool starts_with_bspk(const char* n) {
  return n[0] == 'B' && n[1] == 'S' && n[2] == 'P' && n[3] == 'K' && n[4] == '_';
}

// The table checked at compile time: rows in Var order, names unique, and each
// row's columns consistent with its type.
constexpr bool table_ok() {
  for (size_t k = 0; k < kNumVars; ++k) {
    const Row& r = kRows[k];
    if (static_cast<size_t>(r.var) != k || !starts_with_bspk(r.name) || !r.help || !*r.help) return false;
    for (size_t j = 0; j < k; ++j)
      if (same(kRows[j].name, r.name)) return false;
    if (!r.def.has_value() && !r.default_text) return false;  // the docs must say what happens
    if ((r.type == Type::Enum) != (r.choices != nullptr)) return false;
    using K = Default::Kind;
    switch (r.type) {
      case Type::Int:
        if (r.lo > r.hi) return false;
        if (r.def.has_value() && (r.def.kind != K::Int || r.def.i < r.lo || r.def.i > r.hi)) return false;
        break;
      case Type::Size:
        if (r.def.has_value() && (r.def.kind != K::Int || r.def.i < 0)) return false;
        break;
      case Type::Seconds:
      case Type::SecondsOrOff:
        if (r.def.has_value() && (r.def.kind != K::Real || !(r.def.d > 0))) return false;
        break;
      case Type::Bool:
        if (!r.def.has_value() || r.def.kind != K::Bool) return false;
        break;
      case Type::String:
        if (r.def.has_value()) return false;  // unset is nullopt; the reader decides
        break;
      case Type::Enum:
        if (r.def.has_value() && (r.def.kind != K::Str || !among(r.def.s, r.choices))) return false;
        break;
    }
    if (r.type != Type::Int && (r.lo != 0 || r.hi != 0)) return false;
  }
  return true;
}
static_assert(table_ok(), "base/config_defs.h: a row is inconsistent (see table_ok)");

const char* kTypeNames[] = {"int", "size", "seconds", "seconds-or-off", "bool", "string", "enum"};

[[noreturn]] void internal(const Row& r, const char* accessor, const char* why) {
  throw std::logic_error(strprintf("bspk internal error: config::%s(%s): %s", accessor, r.name, why));
}

const Row& typed(Var v, const char* accessor, Type t, Type t2) {
  const Row& r = row(v);
  if (r.type != t && r.type != t2)
    internal(r, accessor, strprintf("%s is a %s setting", r.name, kTypeNames[static_cast<int>(r.type)]).c_str());
  return r;
}
const Row& typed(Var v, const char* accessor, Type t) { return typed(v, accessor, t, t); }

const Row& with_default(const Row& r, const char* accessor) {
  if (!r.def.has_value())
    internal(r, accessor, "its default depends on the job (kNoDefault): pass the run-time default");
  return r;
}

std::string size_text(uint64_t b) {
  if (b && b % (1ull << 30) == 0) return std::to_string(b >> 30) + "G";
  if (b && b % (1ull << 20) == 0) return std::to_string(b >> 20) + "M";
  if (b && b % (1ull << 10) == 0) return std::to_string(b >> 10) + "K";
  return std::to_string(b);
}

std::string choices_text(const char* choices) {
  std::string s(choices);
  for (size_t p; (p = s.find('|')) != std::string::npos;) s.replace(p, 1, ", ");
  return s;
}

std::string strip_backticks(const std::string& s) {
  std::string out;
  for (char c : s)
    if (c != '`') out += c;
  return out;
}

std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace

// ---- the table ----

const Row& row(Var v) {
  auto k = static_cast<size_t>(v);
  if (k >= kNumVars) throw std::logic_error(strprintf("bspk internal error: config::row(%zu): no such Var", k));
  return kRows[k];
}

const char* name(Var v) { return row(v).name; }

std::span<const Row> rows() { return {kRows, kNumVars}; }

std::optional<Var> find(std::string_view n) {
  for (const Row& r : kRows)
    if (n == r.name) return r.var;
  return std::nullopt;
}

const char* type_name(Type t) { return kTypeNames[static_cast<int>(t)]; }

namespace {
// BSPK_* variables read outside this table: the collectives' (coll/coll.cpp,
// above the C API), where the BSPlib layer finds bspkrun (bsplib/spawn.h),
// the program examples/slurm/radix_sort.sbatch runs, and the test programs'
// hooks.
constexpr const char* kReadElsewhere[] = {"BSPK_COLL_SHORT", "BSPK_COLL_HEADER", "BSPK_BSPKRUN", "BSPK_APP"};
constexpr std::string_view kTestPrefix = "BSPK_TEST_";

// Edits (insert, delete, replace one character) that turn a into b.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

std::vector<Unknown> unknown_settings() {
  std::vector<Unknown> out;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    const std::string_view nm = entry.substr(0, entry.find('='));
    if (nm.substr(0, 5) != "BSPK_" || find(nm) || nm.substr(0, kTestPrefix.size()) == kTestPrefix) continue;
    bool elsewhere = false;
    for (const char* k : kReadElsewhere) elsewhere = elsewhere || nm == k;
    if (elsewhere) continue;
    Unknown u{std::string(nm), ""};
    // A suggestion within 2 edits, and within a third of the name after
    // BSPK_ (BSPK_IFCE is one of BSPK_IFACE; BSPK_FOO of nothing).
    size_t best = std::min<size_t>(3, (nm.size() - 5) / 3 + 1);
    auto consider = [&](const char* cand) {
      const size_t d = edit_distance(nm, cand);
      if (d < best) best = d, u.closest = cand;
    };
    for (const Row& r : kRows)
      if (r.category == Category::User) consider(r.name);
    consider("BSPK_COLL_SHORT");
    consider("BSPK_COLL_HEADER");
    out.push_back(std::move(u));
  }
  return out;
}

std::string unknown_text(const Unknown& u) {
  std::string t = u.name + " is not a BSPk setting";
  if (!u.closest.empty()) t += " (did you mean " + u.closest + "?)";
  return t + "; it is ignored (`bspkrun --info` lists the settings)";
}

const char* category_name(Category c) {
  switch (c) {
    case Category::User: return "user";
    case Category::Launcher: return "launcher";
    case Category::Test: return "test";
  }
  return "?";
}

// ---- reading ----

std::optional<std::string> raw(Var v) { return env::get(row(v).name); }

bool is_set(Var v) { return raw(v).has_value(); }

int64_t get_int(Var v) {
  const Row& r = with_default(typed(v, "get_int", Type::Int), "get_int");
  return env::get_int(r.name, r.def.i, r.lo, r.hi);
}

int64_t get_int(Var v, int64_t runtime_default) {
  const Row& r = typed(v, "get_int", Type::Int);
  return env::get_int(r.name, runtime_default, r.lo, r.hi);
}

int64_t get_int(Var v, int64_t runtime_default, int64_t lo, int64_t hi) {
  const Row& r = typed(v, "get_int", Type::Int);
  if (lo < r.lo || hi > r.hi)
    internal(r, "get_int", strprintf("run-time range [%" PRId64 ", %" PRId64 "] exceeds the table's [%" PRId64
                                     ", %" PRId64 "]", lo, hi, r.lo, r.hi).c_str());
  return env::get_int(r.name, runtime_default, lo, hi);
}

uint64_t get_size(Var v) {
  const Row& r = with_default(typed(v, "get_size", Type::Size), "get_size");
  return env::get_size(r.name, static_cast<uint64_t>(r.def.i));
}

uint64_t get_size(Var v, uint64_t runtime_default) {
  return env::get_size(typed(v, "get_size", Type::Size).name, runtime_default);
}

double get_seconds(Var v) {
  const Row& r = with_default(typed(v, "get_seconds", Type::Seconds, Type::SecondsOrOff), "get_seconds");
  return get_seconds(v, r.def.d);
}

double get_seconds(Var v, double runtime_default) {
  const Row& r = typed(v, "get_seconds", Type::Seconds, Type::SecondsOrOff);
  return r.type == Type::SecondsOrOff ? env::get_seconds_or_off(r.name, runtime_default)
                                      : env::get_seconds(r.name, runtime_default);
}

bool get_bool(Var v) {
  const Row& r = typed(v, "get_bool", Type::Bool);
  return env::get_bool(r.name, r.def.b);
}

std::optional<std::string> get_string(Var v) { return env::get(typed(v, "get_string", Type::String).name); }

std::string get_enum(Var v) {
  const Row& r = with_default(typed(v, "get_enum", Type::Enum), "get_enum");
  return env::get_choice(r.name, r.def.s, r.choices);
}

std::string get_enum(Var v, const std::string& runtime_default) {
  const Row& r = typed(v, "get_enum", Type::Enum);
  return env::get_choice(r.name, runtime_default, r.choices);
}

// ---- documentation ----

std::string default_text(Var v) {
  const Row& r = row(v);
  if (r.default_text) return r.default_text;
  switch (r.def.kind) {
    case Default::Kind::Int: return r.type == Type::Size ? size_text(static_cast<uint64_t>(r.def.i))
                                                         : std::to_string(r.def.i);
    case Default::Kind::Real: return strprintf("%g", r.def.d);
    case Default::Kind::Bool: return r.def.b ? "1" : "0";
    case Default::Kind::Str: return r.def.s;
    case Default::Kind::None: break;
  }
  return "none";
}

std::string allowed_text(Var v) {
  const Row& r = row(v);
  switch (r.type) {
    case Type::Int: return strprintf("integer in [%" PRId64 ", %" PRId64 "]", r.lo, r.hi);
    case Type::Size: return "bytes, optional K, M or G suffix";
    case Type::Seconds: return "seconds > 0";
    case Type::SecondsOrOff: return "seconds > 0, or 0 / off";
    case Type::Bool: return "boolean: 1/0, yes/no, true/false, on/off";
    case Type::String: return "text";
    case Type::Enum: return "one of " + choices_text(r.choices);
  }
  return "";
}

std::string current_text(Var v) {
  if (v == Var::JOB_KEY && raw(v)) return "(set; not shown)";  // a secret
  if (auto s = raw(v)) return *s;
  return "(default: " + default_text(v) + ")";
}

std::optional<std::string> problem(Var v) {
  const Row& r = row(v);
  if (!is_set(v)) return std::nullopt;
  try {
    switch (r.type) {
      case Type::Int: get_int(v, 0); break;
      case Type::Size: get_size(v, 0); break;
      case Type::Seconds:
      case Type::SecondsOrOff: get_seconds(v, 1); break;
      case Type::Bool: get_bool(v); break;
      case Type::String: break;
      case Type::Enum: get_enum(v, ""); break;
    }
  } catch (const Error& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

std::optional<std::string> first_user_problem() {
  for (const Row& r : kRows)
    if (r.category == Category::User)
      if (auto p = problem(r.var)) return p;
  return std::nullopt;
}

std::string markdown_table() {
  std::string out = "| variable | default | meaning |\n|---|---|---|\n";
  for (const Row& r : kRows)
    if (r.category == Category::User)
      out += "| `" + std::string(r.name) + "` | " + md_cell(default_text(r.var)) + " | " + md_cell(r.help) + " |\n";
  return out;
}

std::string info_text() {
  static const struct {
    Category c;
    const char* title;
  } groups[] = {{Category::User, "User settings"},
                {Category::Launcher, "Set by bspkrun for the processes it starts"},
                {Category::Test, "Test hooks"}};
  std::string out = "BSPk settings (environment variables); values as set in this environment\n";
  for (const auto& g : groups) {
    out += std::string("\n") + g.title + ":\n";
    for (const Row& r : kRows) {
      if (r.category != g.c) continue;
      // The current value (or the default), then what is allowed (and the default, if set).
      out += strprintf("  %-24s %s\n", r.name, strip_backticks(current_text(r.var)).c_str());
      out += "      " + allowed_text(r.var);
      if (is_set(r.var)) out += "; default: " + strip_backticks(default_text(r.var));
      out += "\n";
      out += "      " + strip_backticks(r.help) + "\n";
      if (auto p = problem(r.var)) out += "      REJECTED: " + *p + "\n";
    }
  }
  return out;
}

}  // namespace bspk::config
