#include "base/env.h"

#include <bspk.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <strings.h>

#include "base/error.h"

namespace bspk::env {

std::optional<std::string> get(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

int64_t get_int(const char* name, int64_t def, int64_t lo, int64_t hi) {
  auto v = get(name);
  if (!v) return def;
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(v->c_str(), &end, 10);
  if (errno || *end != '\0')
    fail(BSPK_ERR_ARG, "environment variable %s='%s' is not an integer", name, v->c_str());
  if (x < lo || x > hi)
    fail(BSPK_ERR_ARG, "environment variable %s=%lld is outside [%lld, %lld]", name, x,
         static_cast<long long>(lo), static_cast<long long>(hi));
  return x;
}

uint64_t get_size(const char* name, uint64_t def) {
  auto v = get(name);
  if (!v) return def;
  char* end = nullptr;
  errno = 0;
  // strtoull would negate a leading '-' (and skip spaces before it): only
  // digits may start a size.
  const bool digit_first = !v->empty() && (*v)[0] >= '0' && (*v)[0] <= '9';
  unsigned long long x = digit_first ? std::strtoull(v->c_str(), &end, 10) : 0;
  if (!digit_first || errno || end == v->c_str())
    fail(BSPK_ERR_ARG, "environment variable %s='%s' is not a size (e.g. 65536, 64K, 1M)", name,
         v->c_str());
  uint64_t mult = 1;
  std::string suffix(end);
  if (suffix == "" || suffix == "B") mult = 1;
  else if (suffix == "K" || suffix == "k" || suffix == "KiB") mult = 1ull << 10;
  else if (suffix == "M" || suffix == "m" || suffix == "MiB") mult = 1ull << 20;
  else if (suffix == "G" || suffix == "g" || suffix == "GiB") mult = 1ull << 30;
  else
    fail(BSPK_ERR_ARG, "environment variable %s='%s' has an unknown unit '%s' (use K, M or G)",
         name, v->c_str(), suffix.c_str());
  if (x > UINT64_MAX / mult)
    fail(BSPK_ERR_ARG, "environment variable %s='%s' is larger than 2^64 bytes", name, v->c_str());
  return x * mult;
}

namespace {
// get_seconds, and get_seconds_or_off past its 0 / off (or_off: the error
// names those too).
double seconds(const char* name, double def, bool or_off) {
  auto v = get(name);
  if (!v) return def;
  char* end = nullptr;
  errno = 0;
  double x = std::strtod(v->c_str(), &end);
  if (errno || *end != '\0' || !(x > 0))
    fail(BSPK_ERR_ARG, "environment variable %s='%s' is not a positive number of seconds%s", name, v->c_str(),
         or_off ? ", nor 0 or off (never)" : "");
  // Time-outs become std::chrono durations in nanoseconds (64 bits: 292
  // years); beyond a billion seconds (32 years) they would overflow, inf too.
  if (!(x <= 1e9))
    fail(BSPK_ERR_ARG, "environment variable %s='%s' is more than 1e9 seconds%s", name, v->c_str(),
         or_off ? " (use 0 or off for never)" : "");
  return x;
}
}  // namespace

double get_seconds(const char* name, double def) { return seconds(name, def, false); }

double get_seconds_or_off(const char* name, double def) {
  auto v = get(name);
  if (v && (*v == "0" || *v == "off")) return 0;
  return seconds(name, def, true);
}

bool get_bool(const char* name, bool def) {
  auto v = get(name);
  if (!v) return def;
  const char* s = v->c_str();
  if (!strcasecmp(s, "1") || !strcasecmp(s, "yes") || !strcasecmp(s, "true") || !strcasecmp(s, "on"))
    return true;
  if (!strcasecmp(s, "0") || !strcasecmp(s, "no") || !strcasecmp(s, "false") || !strcasecmp(s, "off"))
    return false;
  fail(BSPK_ERR_ARG, "environment variable %s='%s' is not a boolean (use 1 or 0)", name, s);
}

std::string get_choice(const char* name, const std::string& def, const char* choices) {
  auto v = get(name);
  if (!v) return def;
  std::string all(choices), listed;
  for (size_t s = 0;;) {
    size_t e = all.find('|', s);
    std::string word = all.substr(s, e == std::string::npos ? std::string::npos : e - s);
    if (word == *v) return word;
    listed += (listed.empty() ? "" : ", ") + word;
    if (e == std::string::npos) break;
    s = e + 1;
  }
  fail(BSPK_ERR_ARG, "%s='%s' is not one of %s", name, v->c_str(), listed.c_str());
}

NameFilter parse_name_filter(const std::string& v) {
  NameFilter f;
  size_t at = v.find_first_not_of(" \t");
  if (at != std::string::npos && v[at] == '^') {
    f.exclude = true;
    ++at;
  }
  while (at != std::string::npos && at < v.size()) {
    const size_t comma = v.find(',', at);
    std::string n = v.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    const size_t b = n.find_first_not_of(" \t"), e = n.find_last_not_of(" \t");
    if (b != std::string::npos) f.names.push_back(n.substr(b, e - b + 1));
    at = comma == std::string::npos ? comma : comma + 1;
  }
  return f;
}

}  // namespace bspk::env
