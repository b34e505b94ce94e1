// fuzz_env -- libFuzzer target for the BSPK_* environment parsers:
// base/env.h (get_int, get_size with K/M/G suffixes, get_seconds,
// get_seconds_or_off, get_bool, get_choice) and, through base/config.h, every
// row of the settings table (typed accessor, problem(), current_text()).
//
// The value is the input's tail (a NUL-terminated copy, as setenv stores it);
// the integer range, the choices list and the table row come from its head.
// Properties, beyond "no crash and no undefined behaviour" (each parser either
// returns or throws bspk::Error with BSPK_ERR_ARG):
//  * get_size: an accepted value equals what the string denotes -- decimal
//    digits times the suffix's power of 1024, re-parsed here independently in
//    128-bit arithmetic -- so a value whose digits * multiplier reaches 2^64,
//    or a negative one, is rejected; and a canonical size ("<digits><suffix>",
//    in range) is never rejected;
//  * get_int: an accepted value equals the decimal string and lies in [lo, hi];
//    a canonical in-range integer is never rejected;
//  * get_seconds: an accepted value is a number > 0 that fits steady_clock's
//    nanoseconds (< 9.2e9 s; strtod also reads "inf" and "1e300"), see
//    kMaxSeconds; get_seconds_or_off also gives 0 for "0" / "off" and nothing else;
//  * get_bool: accepted exactly for 1/0, yes/no, true/false, on/off in any case;
//  * get_choice: accepted exactly for one of the words, which it returns;
//  * config: an accessor fails exactly when problem() names a problem, and
//    size/int rows agree with the env parsers.
#include <bspk.h>
#include <fuzzer/FuzzedDataProvider.h>
#include <strings.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/config.h"
#include "base/env.h"
#include "base/error.h"

#define FUZZ_TARGET "fuzz_env"
#include "fuzz_util.h"

namespace {

using u128 = unsigned __int128;
namespace env = bspk::env;
namespace config = bspk::config;

#define CHECK(cond) FUZZ_CHECK(cond)

constexpr const char* kVar = "BSPK_FUZZ_VALUE";

// What a size string denotes, parsed independently of base/env.cpp: optional
// leading white space and '+' (strtoull's leniency; not canonical), decimal
// digits, one of the suffixes env.h documents; the value digits * 1024^k must
// be below 2^64. A '-' is never a size.
struct Parsed {
  bool ok = false;
  bool canonical = false;  // no leading white space or sign
  u128 value = 0;
};

size_t skip_lenient_prefix(const char* s, bool* canonical) {
  size_t i = 0;
  while (std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  *canonical = i == 0;
  return i;
}

// Decimal digits from s[i]; false if none or more than fit 2^64 * 2^30 (then
// saturated: such a value is out of range whatever follows).
bool digits(const char* s, size_t* i, u128* v, bool* huge) {
  size_t start = *i;
  *v = 0;
  *huge = false;
  for (; std::isdigit(static_cast<unsigned char>(s[*i])); ++*i) {
    if (*v > (u128{1} << 100)) *huge = true;
    else *v = *v * 10 + static_cast<unsigned>(s[*i] - '0');
  }
  return *i > start;
}

Parsed ref_size(const char* s) {
  Parsed p;
  size_t i = skip_lenient_prefix(s, &p.canonical);
  if (s[i] == '+') ++i, p.canonical = false;
  if (s[i] == '-') return p;
  u128 v;
  bool huge;
  if (!digits(s, &i, &v, &huge)) return p;
  const std::string suffix(s + i);
  u128 mult;
  if (suffix.empty() || suffix == "B") mult = 1;
  else if (suffix == "K" || suffix == "k" || suffix == "KiB") mult = u128{1} << 10;
  else if (suffix == "M" || suffix == "m" || suffix == "MiB") mult = u128{1} << 20;
  else if (suffix == "G" || suffix == "g" || suffix == "GiB") mult = u128{1} << 30;
  else return p;
  if (huge) return p;
  p.value = v * mult;
  p.ok = p.value < (u128{1} << 64);
  return p;
}

// A decimal integer (strtoll's leniency: leading white space, a sign), within int64.
Parsed ref_int(const char* s, bool* negative) {
  Parsed p;
  size_t i = skip_lenient_prefix(s, &p.canonical);
  *negative = false;
  if (s[i] == '+' || s[i] == '-') {
    *negative = s[i] == '-';
    if (s[i] == '+') p.canonical = false;
    ++i;
  }
  u128 v;
  bool huge;
  if (!digits(s, &i, &v, &huge) || s[i] != '\0' || huge) return p;
  p.value = v;
  p.ok = *negative ? v <= (u128{1} << 63) : v < (u128{1} << 63);
  return p;
}

int64_t as_int64(u128 v, bool negative) {
  if (!negative) return static_cast<int64_t>(v);
  return v == (u128{1} << 63) ? INT64_MIN : -static_cast<int64_t>(v);
}

template <class F>
bool rejected(F&& f) {
  try {
    f();
    return false;
  } catch (const bspk::Error& e) {
    CHECK(e.code() == BSPK_ERR_ARG);
    CHECK(std::strlen(e.what()) > 0);
    return true;
  }
}

void check_size(const char* s) {
  const Parsed want = ref_size(s);
  uint64_t got = 0;
  const bool rej = rejected([&] { got = env::get_size(kVar, 12345); });
  if (!rej) {
    if (!want.ok) {
      std::fprintf(stderr, "fuzz_env: get_size accepted '%s' as %llu; it denotes no size below 2^64\n", s,
                   (unsigned long long)got);
      FUZZ_CHECK(!"get_size accepts only a size below 2^64");
    }
    CHECK(u128{got} == want.value);
  } else {
    CHECK(!(want.ok && want.canonical));  // a valid size must not be refused
  }
}

void check_int(const char* s, int64_t lo, int64_t hi) {
  bool negative;
  const Parsed want = ref_int(s, &negative);
  int64_t got = 0;
  const bool rej = rejected([&] { got = env::get_int(kVar, 7, lo, hi); });
  if (!rej) {
    CHECK(want.ok && got == as_int64(want.value, negative));
    CHECK(lo <= got && got <= hi);
  } else if (want.ok && want.canonical) {
    const int64_t x = as_int64(want.value, negative);
    CHECK(x < lo || x > hi);
  }
}

// The runtime waits with these (std::condition_variable::wait_for, poll loops on
// steady_clock): a number of seconds must fit steady_clock's int64 nanoseconds,
// else wait_for's deadline wraps into the past and it returns at once (with
// libstdc++ 12, BSPK_START_TIMEOUT=1e10 or inf ends bspk_init immediately).
constexpr double kMaxSeconds = 9.2e9;  // < 2^63 ns

void check_seconds(const char* s) {
  double got = 0;
  if (!rejected([&] { got = env::get_seconds(kVar, 3); })) {
    CHECK(got > 0);
    if (!(got <= kMaxSeconds)) {
      std::fprintf(stderr, "fuzz_env: get_seconds accepted '%s' as %g seconds\n", s, got);
      FUZZ_CHECK(!"get_seconds accepts only a finite number of seconds that fits steady_clock");
    }
  }
  const bool off = std::strcmp(s, "0") == 0 || std::strcmp(s, "off") == 0;
  if (!rejected([&] { got = env::get_seconds_or_off(kVar, 3); })) {
    CHECK(got == 0 ? off : got > 0 && got <= kMaxSeconds && !off);
  } else {
    CHECK(!off);
  }
}

void check_bool(const char* s) {
  bool got = false;
  const bool rej = rejected([&] { got = env::get_bool(kVar, false); });
  const bool yes = !strcasecmp(s, "1") || !strcasecmp(s, "yes") || !strcasecmp(s, "true") || !strcasecmp(s, "on");
  const bool no = !strcasecmp(s, "0") || !strcasecmp(s, "no") || !strcasecmp(s, "false") || !strcasecmp(s, "off");
  CHECK(rej == !(yes || no));
  if (!rej) CHECK(got == yes);
}

void check_choice(const char* s, const std::string& choices) {
  std::string got;
  const bool rej = rejected([&] { got = env::get_choice(kVar, "default", choices.c_str()); });
  bool listed = false;
  for (size_t b = 0;;) {
    size_t e = choices.find('|', b);
    if (choices.substr(b, e == std::string::npos ? e : e - b) == s) listed = true;
    if (e == std::string::npos) break;
    b = e + 1;
  }
  CHECK(rej == !listed);
  if (!rej) CHECK(got == s);
}

void check_row(const config::Row& r, const char* s) {
  setenv(r.name, s, 1);
  const auto problem = config::problem(r.var);
  CHECK(config::is_set(r.var) && *config::raw(r.var) == s);
  bool rej = false;
  switch (r.type) {
    case config::Type::Int: {
      int64_t got = 0;
      rej = rejected([&] { got = config::get_int(r.var, r.lo); });
      if (!rej) CHECK(r.lo <= got && got <= r.hi);
      break;
    }
    case config::Type::Size: {
      uint64_t got = 0;
      rej = rejected([&] { got = config::get_size(r.var, 1); });
      if (!rej) CHECK(ref_size(s).ok && u128{got} == ref_size(s).value);
      break;
    }
    case config::Type::Seconds:
    case config::Type::SecondsOrOff:
      rej = rejected([&] { config::get_seconds(r.var, 1.0); });
      break;
    case config::Type::Bool: rej = rejected([&] { config::get_bool(r.var); }); break;
    case config::Type::String: CHECK(config::get_string(r.var) == std::string(s)); break;
    case config::Type::Enum: rej = rejected([&] { config::get_enum(r.var, "x"); }); break;
  }
  CHECK(rej == problem.has_value());
  const std::string cur = config::current_text(r.var);
  if (r.var == config::Var::JOB_KEY) CHECK(cur == "(set; not shown)");  // a secret: never printed
  unsetenv(r.name);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  int64_t lo = in.ConsumeIntegral<int64_t>(), hi = in.ConsumeIntegral<int64_t>();
  if (lo > hi) std::swap(lo, hi);
  if (in.ConsumeBool()) lo = 0, hi = in.ConsumeIntegralInRange<int64_t>(0, 1 << 20);  // typical table ranges
  const size_t row = in.ConsumeIntegral<uint8_t>() % config::rows().size();
  std::string choices = in.ConsumeBool() ? "auto|on|off" : in.ConsumeRandomLengthString(32);
  choices = choices.substr(0, choices.find('\0'));
  std::string value = in.ConsumeRemainingBytesAsString();
  value = value.substr(0, value.find('\0'));  // what setenv stores
  const char* s = value.c_str();
  fuzz::g_context = s;

  unsetenv(kVar);  // unset: the defaults
  CHECK(env::get_size(kVar, 12345) == 12345 && env::get_int(kVar, 7, lo, hi) == 7);
  setenv(kVar, s, 1);
  if (*s) {
    check_size(s);
    check_int(s, lo, hi);
    check_seconds(s);
    check_bool(s);
    check_choice(s, choices);
    check_row(config::rows()[row], s);
  } else {
    CHECK(!env::get(kVar));  // empty is unset
  }
  unsetenv(kVar);
  fuzz::g_context = nullptr;
  return 0;
}
