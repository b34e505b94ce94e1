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
  // `over`: the error leaves the job unable to go on consistently (bspk.h,
  // Return codes, [over]) whatever its code and whichever call reports it:
  // set for errors found while progressing (sync/engine.h, raise_async;
  // all but the pool limit's wait for frames), which the next call that
  // looks delivers, a bspk_expect as well as a bspk_sync, and for mixed
  // synchronisation kinds, whichever call finds them (fail_over).
  Error(int code, const std::string& msg, bool over = false)
      : std::runtime_error(msg), code_(code), over_(over) {}
  int code() const noexcept { return code_; }
  bool over() const noexcept { return over_; }

 private:
  int code_;
  bool over_;
};

// printf-style formatting into a std::string.
std::string strprintf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string vstrprintf(const char* fmt, va_list ap);

// Throw bspk::Error with a printf-formatted message.
[[noreturn]] void fail(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// The same, marked over: the job cannot go on whichever call reports it
// (mixed synchronisation kinds, from bspk_expect as from bspk_sync).
[[noreturn]] void fail_over(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace bspk
