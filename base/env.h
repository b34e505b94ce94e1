// base/env.h -- reading BSPK_* settings from the environment, with validation.
// A malformed value is an error naming the variable, never silently ignored.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bspk::env {

// Value of name, or nullopt if unset or empty.
std::optional<std::string> get(const char* name);

// Integer setting (decimal), def when unset. Throws BSPK_ERR_ARG if malformed
// or outside [lo, hi].
int64_t get_int(const char* name, int64_t def, int64_t lo, int64_t hi);

// Byte size with optional K/M/G suffix (powers of 1024), def when unset.
uint64_t get_size(const char* name, uint64_t def);

// Seconds as a decimal number (e.g. "0.5"), def when unset; must be > 0.
double get_seconds(const char* name, double def);

// Seconds as get_seconds, except that "0" or "off" give 0 (= disabled).
double get_seconds_or_off(const char* name, double def);

// Boolean: 1/0, yes/no, true/false, on/off; def when unset.
bool get_bool(const char* name, bool def);

// One of the words in choices ("a|b|c"), def when unset. Throws BSPK_ERR_ARG
// naming the variable and the choices otherwise.
std::string get_choice(const char* name, const std::string& def, const char* choices);

// A name filter in libfabric's syntax (fabric(7), FI_PROVIDER): names
// separated by commas, or, after a leading '^', the names to exclude.
struct NameFilter {
  bool exclude = false;            // '^': the names are excluded
  std::vector<std::string> names;  // as given, spaces and tabs trimmed, empty entries dropped
};
NameFilter parse_name_filter(const std::string& value);

}  // namespace bspk::env
