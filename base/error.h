// base/error.h -- the runtime's error type and message formatting.
//
// Internal layers report failures by throwing bspk::Error{code, message}; the C API
// boundary (api/bspk.cpp) catches it, records the message for bspk_error_string()
// prefixed with the call, pid and superstep, and returns the code. Nothing on a
// hot path throws unless the program made an error.
#pragma once

#include <cstdarg>
#include <stdexcept>
#include <string>

namespace bspk {

class Error : public std::runtime_error {
 public:
  Error(int code, const std::string& msg) : std::runtime_error(msg), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

// printf-style formatting into a std::string.
std::string strprintf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string vstrprintf(const char* fmt, va_list ap);

// Throw bspk::Error with a printf-formatted message.
[[noreturn]] void fail(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace bspk
