// base/config.h -- every BSPK_* setting through one table (base/config_defs.h).
//
// Read a setting with the accessor of its type, e.g.
//   config::get_int(config::Var::MAX_AHEAD)              // 16 unless set; [1, 4095]
//   config::get_size(config::Var::FRAME_SIZE, 64 << 10)  // context-dependent default
//   config::get_bool(config::Var::STATS)
// A malformed or out-of-range value throws bspk::Error (BSPK_ERR_ARG) naming the
// variable and what is allowed (base/env.h does the parsing). Asking for a
// setting through the accessor of another type, or without a default for a row
// whose default depends on the job (kNoDefault), is a programming error: it
// throws std::logic_error ("bspk internal error: ...").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace bspk::config {

// One enumerator per row of base/config_defs.h, in table order.
enum class Var : int {
#define BSPK_CONFIG_VAR(ID, ...) ID,
#include "base/config_defs.h"
#undef BSPK_CONFIG_VAR
};

inline constexpr size_t kNumVars = 0
#define BSPK_CONFIG_VAR(ID, ...) +1
#include "base/config_defs.h"
#undef BSPK_CONFIG_VAR
    ;

enum class Type {
  Int,           // decimal integer within [lo, hi]
  Size,          // bytes, optional K/M/G suffix (powers of 1024)
  Seconds,       // decimal number > 0
  SecondsOrOff,  // decimal number > 0, or "0" / "off" (read as 0: never)
  Bool,          // 1/0, yes/no, true/false, on/off
  String,        // any non-empty text
  Enum,          // one of the row's choices
};

enum class Category {
  User,      // a user setting (the README's Environment table)
  Launcher,  // set by bspkrun for the processes it starts
  Test,      // test hook
};

// A row's fixed default, typed; none (kNoDefault) when it depends on the job.
struct Default {
  enum class Kind { None, Int, Real, Bool, Str };
  Kind kind = Kind::None;
  int64_t i = 0;
  double d = 0;
  bool b = false;
  const char* s = nullptr;

  constexpr Default() = default;
  template <class T>
  constexpr Default(T v) {  // NOLINT: implicit, so the table reads naturally
    if constexpr (std::is_same_v<T, bool>) kind = Kind::Bool, b = v;
    else if constexpr (std::is_integral_v<T>) kind = Kind::Int, i = static_cast<int64_t>(v);
    else if constexpr (std::is_floating_point_v<T>) kind = Kind::Real, d = static_cast<double>(v);
    else kind = Kind::Str, s = v;  // const char*
  }
  constexpr bool has_value() const { return kind != Kind::None; }
};
inline constexpr Default kNoDefault{};

struct Row {
  Var var;
  const char* name;          // "BSPK_MAX_AHEAD"
  Type type;
  Category category;
  Default def;               // fixed default, or none (the reader passes one)
  int64_t lo, hi;            // Int rows: allowed range
  const char* choices;       // Enum rows: "a|b|c"; else nullptr
  const char* default_text;  // documented default; nullptr: printed from def
  const char* help;          // one line, Markdown
};

// ---- the table ----
const Row& row(Var v);
const char* name(Var v);                       // row(v).name
std::span<const Row> rows();                   // every row, in table order
std::optional<Var> find(std::string_view name);  // by variable name
const char* type_name(Type t);                 // "int", "size", ...
const char* category_name(Category c);         // "user", "launcher", "test"

// ---- reading (each checks the row's type) ----
// The value as set (non-empty), unparsed; any type.
std::optional<std::string> raw(Var v);
bool is_set(Var v);

// Int rows. runtime_default: for kNoDefault rows, or a default that depends on
// the job (BSPK_SPIN_US). lo/hi: a range known only at run time, within the row's
// (BSPK_RANK < BSPK_NPROCS); the error names it.
int64_t get_int(Var v);
int64_t get_int(Var v, int64_t runtime_default);
int64_t get_int(Var v, int64_t runtime_default, int64_t lo, int64_t hi);
// Size rows.
uint64_t get_size(Var v);
uint64_t get_size(Var v, uint64_t runtime_default);
// Seconds and SecondsOrOff rows (the latter give 0 for "0" / "off").
double get_seconds(Var v);
double get_seconds(Var v, double runtime_default);
// Bool rows.
bool get_bool(Var v);
// String rows: nullopt when unset or empty.
std::optional<std::string> get_string(Var v);
// Enum rows: one of the row's choices.
std::string get_enum(Var v);
std::string get_enum(Var v, const std::string& runtime_default);

// ---- the environment checked ----
// A BSPK_* environment variable that is no setting: neither a row of the
// table nor one read elsewhere (the collectives' BSPK_COLL_SHORT and
// BSPK_COLL_HEADER, BSPK_BSPKRUN, the Slurm example's BSPK_APP, the tests'
// BSPK_TEST_*), e.g. the typo
// BSPK_SYNC_TIMOUT, which would be ignored without a word. closest: the
// user setting within 2 edits of it and a third of its length after BSPK_
// ("" if none).
struct Unknown {
  std::string name, closest;
};
std::vector<Unknown> unknown_settings();
// "BSPK_SYNC_TIMOUT is not a BSPk setting (did you mean BSPK_SYNC_TIMEOUT?); it is ignored (...)"
std::string unknown_text(const Unknown& u);

// ---- documentation ----
std::string default_text(Var v);        // "16", "64K on shm, 256K on tcp/verbs", "none"
std::string allowed_text(Var v);        // "integer in [1, 4095]", "one of auto, core, none", ...
std::string current_text(Var v);        // the value if set, else "(default: ...)"
std::optional<std::string> problem(Var v);  // why the value set is rejected; nullopt if fine or unset
// The first user setting whose value is rejected (problem()), checked at
// bspk_init so that a setting read only in some jobs (BSPK_FAILURE_TIMEOUT:
// Slurm's hub) is refused everywhere, not ignored; nullopt if none.
std::optional<std::string> first_user_problem();
std::string markdown_table();           // README "Environment" table: | variable | default | meaning |
std::string info_text();                // `bspkrun --info`: every row by category, value, default, help

}  // namespace bspk::config
