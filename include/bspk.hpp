/*
 * bspk.hpp -- the typed C++ API of BSPk: header-only, over the C API of
 * bspk.h and nothing else (no runtime internals; tests/check_layering.sh).
 *
 * C++17 or later (-std=c++17; g++ 11 and later default to it), and C++20.
 * Rules cite the BSPk paper ("Communicable Memory and Lazy Barriers for Bulk
 * Synchronous Parallelism in BSPk") as [BSPk §n]; bspk.h states every call's
 * semantics, cost and errors, and this header adds only what it says here.
 *
 *   bspk::runtime rt(argc, argv);                  bspk_init; bspk_finalize at scope end
 *   bspk::region<double> r(rt, n);                 bspk_malloc, bspk_free at scope end
 *   bspk::region<double> g(rt, "grid", pid, n);    a named region [BSPk §6.2]
 *   r[i] = 1.0;                                    bspk_elemP(bspk_incr(r, i))
 *   for (bspk::span<double> f : r.frames()) ...    bspk_span, frame by frame
 *   rt.send(dest, r.slice(off, n));                bspk_send (zero copy)
 *   auto nb = bspk::lookup<double>(rt, "grid", q); bspk_lookup
 *   bspk::copy(nb + 5, r.slice(0, 3), 3);          bspk_copy: a store
 *   rt.sync(bspk::expect{2});                      bspk_expect + bspk_sync [BSPk §5]
 *   for (bspk::message<double>& m : rt.messages<double>()) ... m.sender(), m[i]
 *
 * Zero overhead. Every operation is an inline call of the bspk.h function(s)
 * named next to it, plus a test of the result. Nothing is copied that the C
 * call does not copy (bytes_copied is the same), no address is cached (an
 * element's address is valid only until the next bspk_sync: frame flips,
 * bspk.h "Distributed shared memory"), and r[i] is the C API's own O(1)
 * index-array lookup, bspk_elemP(bspk_incr(p, i)).
 *
 * Errors. Every failing C call throws bspk::error (a std::runtime_error)
 * carrying its BSPK_ERR_* code, the C call's name, the pid, the superstep and
 * the C API's message (bspk_error_string()); the C layer has printed it
 * already unless BSPK_ERRORS=quiet, and BSPK_ERRORS=abort ends the job at the
 * call, before anything is thrown. Errors found by this header itself (a
 * message whose element size does not fit T, a slice out of range, a
 * will_send vector of the wrong length) are reported the same way, with the
 * C++ operation as the call. What state an error leaves ([call], [step],
 * [over]) is as bspk.h's "Return codes" say for the code.
 * bspk.h gives no error code for calls that return a pointer (BSPK_NULL:
 * bspk_malloc, bspk_lookup, bspk_incr, bspk_elemP, bspk_recv); for those the
 * code is inferred, with public calls, from the cases bspk.h documents (see
 * detail::malloc_code, throw_incr, throw_elem). It is exact but for two
 * cases bspk.h gives no way to tell apart: BSPK_ERR_FABRIC from
 * bspk_malloc_contiguous (a registration refused) is reported as
 * BSPK_ERR_NOMEM, and r[i] one past the end of a region freed behind the
 * object's back (release() + bspk_free) as BSPK_ERR_RANGE, not _PTR.
 *
 * Element types. T must be trivially copyable (static_assert): its bytes
 * travel over the fabric and move between frames at superstep boundaries,
 * and no constructor or destructor ever runs on a region's elements.
 *
 * bspk::span<T> is std::span<T> when the standard library has it (C++20:
 * __cpp_lib_span), else a minimal span of this header with data(), size(),
 * size_bytes(), empty(), begin()/end(), operator[], front(), back(),
 * first(), last() and subspan(). A program whose translation units mix C++17
 * and C++20 therefore sees two different types under this name: do not pass
 * one across such a boundary.
 *
 * Not thread-safe, like bspk.h ("Threads"): one thread at a time. A call
 * while another thread of the process is inside one is refused by the C API
 * below (BSPK_ERR_STATE, thrown as bspk::error like any other).
 */
#ifndef BSPK_HPP
#define BSPK_HPP

#if !defined(__cplusplus) || __cplusplus < 201703L
#error "bspk.hpp needs C++17 or later: compile with -std=c++17 (or -std=c++20)"
#endif

#include <bspk.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iterator>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>
#if __has_include(<version>)
#include <version>
#endif
#if defined(__cpp_lib_span) && __cpp_lib_span >= 202002L
#include <span>
#define BSPK_HPP_STD_SPAN 1
#else
#define BSPK_HPP_STD_SPAN 0
#endif

#if defined(__GNUC__)
#define BSPK_HPP_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define BSPK_HPP_COLD __attribute__((noinline, cold))
#else
#define BSPK_HPP_UNLIKELY(x) (x)
#define BSPK_HPP_COLD
#endif

namespace bspk {

// ---- span ----------------------------------------------------------------------

#if BSPK_HPP_STD_SPAN
/* One frame's run of elements (or any contiguous run): std::span in C++20. */
template <class T>
using span = std::span<T>;
#else
/* One frame's run of elements (or any contiguous run): a minimal std::span
 * for C++17, with the same names and meaning (dynamic extent only). */
template <class T>
class span {
 public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using pointer = T*;
  using reference = T&;
  using iterator = T*;

  constexpr span() noexcept = default;
  constexpr span(T* data, std::size_t size) noexcept : data_(data), size_(size) {}
  /* span<T> -> span<const T>. */
  template <class U, class = std::enable_if_t<std::is_convertible<U (*)[], T (*)[]>::value>>
  constexpr span(const span<U>& s) noexcept : data_(s.data()), size_(s.size()) {}
  /* From a contiguous container (std::vector, std::array, ...). */
  template <class C, class = std::enable_if_t<!std::is_same<std::remove_cv_t<C>, span>::value &&
                                              std::is_convertible<decltype(std::declval<C&>().data()), T*>::value>>
  constexpr span(C& c) noexcept : data_(c.data()), size_(c.size()) {}

  constexpr T* data() const noexcept { return data_; }
  constexpr std::size_t size() const noexcept { return size_; }
  constexpr std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  constexpr bool empty() const noexcept { return size_ == 0; }
  constexpr T* begin() const noexcept { return data_; }
  constexpr T* end() const noexcept { return data_ + size_; }
  constexpr T& operator[](std::size_t i) const noexcept { return data_[i]; }
  constexpr T& front() const noexcept { return data_[0]; }
  constexpr T& back() const noexcept { return data_[size_ - 1]; }
  constexpr span first(std::size_t n) const noexcept { return span(data_, n); }
  constexpr span last(std::size_t n) const noexcept { return span(data_ + size_ - n, n); }
  constexpr span subspan(std::size_t off, std::size_t n = std::size_t(-1)) const noexcept {
    return span(data_ + off, n == std::size_t(-1) ? size_ - off : n);
  }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};
#endif

// ---- errors ------------------------------------------------------------------

/* "BSPK_ERR_PID" for BSPK_ERR_PID, ...; "BSPK_OK" for 0; "unknown" otherwise. */
inline const char* code_name(int code) noexcept {
  switch (code) {
    case BSPK_OK: return "BSPK_OK";
    case BSPK_ERR_ARG: return "BSPK_ERR_ARG";
    case BSPK_ERR_PID: return "BSPK_ERR_PID";
    case BSPK_ERR_PTR: return "BSPK_ERR_PTR";
    case BSPK_ERR_RANGE: return "BSPK_ERR_RANGE";
    case BSPK_ERR_NOMEM: return "BSPK_ERR_NOMEM";
    case BSPK_ERR_STATE: return "BSPK_ERR_STATE";
    case BSPK_ERR_MODE: return "BSPK_ERR_MODE";
    case BSPK_ERR_COUNT: return "BSPK_ERR_COUNT";
    case BSPK_ERR_TIMEOUT: return "BSPK_ERR_TIMEOUT";
    case BSPK_ERR_FABRIC: return "BSPK_ERR_FABRIC";
    case BSPK_ERR_BOOT: return "BSPK_ERR_BOOT";
    case BSPK_ERR_PEER: return "BSPK_ERR_PEER";
    case BSPK_ERR_UNSUPPORTED: return "BSPK_ERR_UNSUPPORTED";
    case BSPK_ERR_NAME: return "BSPK_ERR_NAME";
    case BSPK_ERR_CONFLICT: return "BSPK_ERR_CONFLICT";
    case BSPK_ERR_INTERNAL: return "BSPK_ERR_INTERNAL";
    default: return "unknown";
  }
}

/* A failed BSPk operation. what() is the C API's message text,
 * "CALL (pid P, superstep S): what happened" (bspk_error_string()), or a
 * message of the same form for an error found by this header.
 *   code()      the BSPK_ERR_* code (negative), as the C call returned it;
 *   call()      the C call that failed ("bspk_send"), or the C++ operation
 *               for errors found here ("bspk::runtime::messages<T>");
 *   pid()       this process's pid, -1 before bspk_init / after finalize;
 *   superstep() the superstep the error happened in (numbered from 0 per
 *               process [BSPk §3]), -1 when no runtime is running. */
class error : public std::runtime_error {
 public:
  error(int code, std::string call, int pid, std::int64_t superstep, const std::string& message)
      : std::runtime_error(message), code_(code), pid_(pid), superstep_(superstep), call_(std::move(call)) {}
  int code() const noexcept { return code_; }
  const char* code_name() const noexcept { return bspk::code_name(code_); }
  const std::string& call() const noexcept { return call_; }
  int pid() const noexcept { return pid_; }
  std::int64_t superstep() const noexcept { return superstep_; }

 private:
  int code_;
  int pid_;
  std::int64_t superstep_;
  std::string call_;
};

namespace detail {

/* The current superstep (supersteps completed on this process, bspk_superstep),
 * -1 without a running runtime. */
inline std::int64_t superstep_now() noexcept {
  if (bspk_nprocs() <= 0) return -1;
  return static_cast<std::int64_t>(bspk_superstep());
}

/* Throw the error a C call just reported (its message is bspk_error_string()). */
[[noreturn]] BSPK_HPP_COLD inline void throw_c(int code, const char* call) {
  std::string msg = bspk_error_string();
  if (msg.empty()) msg = std::string(call) + ": failed with " + code_name(code);
  throw error(code, call, bspk_pid(), superstep_now(), msg);
}

/* An error found by this header in superstep `step`: reported as bspk.h's
 * Conventions say for errors (printed to stderr unless BSPK_ERRORS=quiet;
 * BSPK_ERRORS=abort ends the job here), then thrown. */
[[noreturn]] BSPK_HPP_COLD inline void fail_at(int code, const char* call, const std::string& what, std::int64_t step) {
  const int pid = bspk_pid();
  std::string msg = std::string(call);
  if (pid >= 0)
    msg += " (pid " + std::to_string(pid) + ", superstep " + std::to_string(step) + ")";
  else
    msg += " (no runtime)";
  msg += ": " + what;
  const char* policy = std::getenv("BSPK_ERRORS");
  if (policy && std::strcmp(policy, "abort") == 0) bspk_abort_text(("bspk: error (BSPK_ERRORS=abort): " + msg).c_str());
  if (!policy || std::strcmp(policy, "quiet") != 0) {
    std::fflush(stdout);
    std::fprintf(stderr, "bspk: error: %s\n", msg.c_str());
  }
  throw error(code, call, pid, step, msg);
}
/* The same, in the current superstep. */
[[noreturn]] BSPK_HPP_COLD inline void fail(int code, const char* call, const std::string& what) {
  fail_at(code, call, what, superstep_now());
}

inline void check(int rc, const char* call) {
  if (BSPK_HPP_UNLIKELY(rc != BSPK_OK)) throw_c(rc, call);
}

/* The code of a failed bspk_malloc / bspk_malloc_contiguous, from the cases
 * bspk.h documents (it returns BSPK_NULL without a code): STATE without a
 * runtime; ARG for an element size of 0 or above the frame size, or a name
 * over 63 bytes; NAME when (name, idx) is registered on this process
 * (bspk_lookup answers that at once; for a pair this process does not own it
 * asks the pair's home: one control message, on this error path only); else
 * NOMEM (which is also what a provider's refusal to register a contiguous
 * run, FABRIC, is reported as: bspk.h offers no way to tell the two apart).
 * Runs only after the failure, so a successful allocation costs nothing. */
BSPK_HPP_COLD inline int malloc_code(const char* name, int idx, std::size_t elem_size) {
  if (bspk_nprocs() <= 0) return BSPK_ERR_STATE;
  if (name && std::strlen(name) > 63) return BSPK_ERR_ARG;
  bspk_stats s;
  if (bspk_get_stats_sized(&s, sizeof s) == BSPK_OK && (elem_size == 0 || elem_size > s.frame_size))
    return BSPK_ERR_ARG;
  if (name && *name) {
    bspk_ptr q = bspk_lookup(name, idx);
    if (q.region != 0 && bspk_owner(q) == bspk_pid()) return BSPK_ERR_NAME;
  }
  return BSPK_ERR_NOMEM;
}

[[noreturn]] BSPK_HPP_COLD inline void throw_malloc(const char* call, const char* name, int idx, std::size_t es) {
  std::string msg = bspk_error_string();  // before malloc_code's calls
  const int code = malloc_code(name, idx, es);
  if (msg.empty()) msg = std::string(call) + ": failed with " + code_name(code);
  throw error(code, call, bspk_pid(), superstep_now(), msg);
}

/* bspk_incr(p, k) failed (returned BSPK_NULL): PTR for a NULL p, else RANGE. */
[[noreturn]] BSPK_HPP_COLD inline void throw_incr(const bspk_ptr& p) {
  std::string msg = bspk_error_string();
  throw error(p.region == 0 ? BSPK_ERR_PTR : BSPK_ERR_RANGE, "bspk_incr", bspk_pid(), superstep_now(), msg);
}

/* bspk_elemP(q) or bspk_span(q) failed (returned NULL / 0): STATE without a
 * runtime, PTR for a NULL, remote or freed pointer, RANGE for one past the end. */
[[noreturn]] BSPK_HPP_COLD inline void throw_elem(const bspk_ptr& q, const char* call = "bspk_elemP") {
  std::string msg = bspk_error_string();
  int code = BSPK_ERR_PTR;
  if (bspk_nprocs() <= 0)
    code = BSPK_ERR_STATE;
  else if (q.region != 0 && bspk_owner(q) == bspk_pid() && bspk_nelems(q) == 0)
    code = BSPK_ERR_RANGE;
  throw error(code, call, bspk_pid(), superstep_now(), msg);
}

inline bspk_ptr incr(const bspk_ptr& p, std::size_t k) {
  if (k == 0) return p;
  const bspk_ptr q = bspk_incr(p, static_cast<std::ptrdiff_t>(k));
  if (BSPK_HPP_UNLIKELY(q.region == 0)) throw_incr(p);
  return q;
}

/* Address of element k from p: bspk_elemP(bspk_incr(p, k)), O(1) (the
 * region's index array). Valid until the next bspk_sync. */
inline void* elem(const bspk_ptr& p, std::size_t k) {
  const bspk_ptr q = bspk_incr(p, static_cast<std::ptrdiff_t>(k));
  if (BSPK_HPP_UNLIKELY(q.region == 0)) throw_incr(p);
  void* a = bspk_elemP(q);
  if (BSPK_HPP_UNLIKELY(a == nullptr)) throw_elem(q);
  return a;
}

template <class T>
constexpr void check_type() {
  static_assert(std::is_trivially_copyable<T>::value,
                "bspk: the element type T of bspk::region<T> (slice<T>, remote<T>, message<T>, lookup<T>, "
                "send_buf, put) must be trivially copyable: its bytes travel over the fabric and move between "
                "frames at superstep boundaries, and no constructor or destructor runs on them");
  static_assert(!std::is_const<T>::value && !std::is_volatile<T>::value,
                "bspk: the element type T must not be const or volatile");
}

struct adopt_t {};
struct access;

}  // namespace detail

// ---- declarations and tags -----------------------------------------------------

class runtime;
template <class T> class region;
template <class T> class slice;
template <class T> class remote;
template <class T> class message;
template <class T> class message_range;

/* Tag: a contiguous region (bspk_malloc_contiguous: elements back to back in
 * memory, so region::data() gives one T* for all of it). */
struct contiguous_t {
  explicit contiguous_t() = default;
};
inline constexpr contiguous_t contiguous{};

/* rt.sync(bspk::expect{m}): bspk_expect(m), then bspk_sync. m messages will
 * arrive at this process in this superstep (from all processes, itself
 * included; copies count at their target, bspk.h DSM rule 5): the barrier
 * then costs nothing [BSPk §5, Table 1]. */
struct expect {
  template <class I, class = std::enable_if_t<std::is_integral<I>::value>>
  constexpr expect(I nmsgs) noexcept : n(static_cast<long long>(nmsgs)) {
    if constexpr (std::is_unsigned<I>::value && sizeof(I) >= sizeof(long long)) {
      if (nmsgs > static_cast<unsigned long long>(LLONG_MAX)) n = LLONG_MAX;  // reported as out of range
    }
  }
  long long n;
};

/* rt.sync(bspk::will_send{v}): bspk_will_send(v), then bspk_sync. v has
 * bspk_nprocs() entries: v[j] = messages (and copies, DSM rule 5) this
 * process sends to process j in this superstep [BSPk §5]. Holds a pointer to
 * v: use it in the call that makes it. */
class will_send {
 public:
  will_send(const std::vector<int>& v) noexcept : data_(v.data()), size_(v.size()) {}
  will_send(span<const int> v) noexcept : data_(v.data()), size_(v.size()) {}
  will_send(const int* v, std::size_t n) noexcept : data_(v), size_(n) {}
  const int* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

 private:
  const int* data_;
  std::size_t size_;
};

// ---- frames ------------------------------------------------------------------

/* The frames of a run of elements, in order: each a bspk::span<V> of the
 * elements that lie contiguously in one frame (bspk_span) [BSPk §4]; a
 * contiguous region is one span. Range-for only (input iterators). The spans'
 * addresses are valid until the next bspk_sync. Cost O(1) per frame.
 * Errors: as bspk_span and bspk_incr (a remote or freed region throws). */
template <class V>
class frame_range {
 public:
  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = span<V>;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = span<V>;

    iterator() = default;
    span<V> operator*() const noexcept { return span<V>(base_, len_); }
    iterator& operator++() {
      left_ -= len_;
      if (left_) p_ = detail::incr(p_, len_ * scale_);
      load();
      return *this;
    }
    iterator operator++(int) {
      iterator before = *this;
      ++*this;
      return before;
    }
    friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.left_ == b.left_; }
    friend bool operator!=(const iterator& a, const iterator& b) noexcept { return a.left_ != b.left_; }

   private:
    friend class frame_range;
    iterator(const bspk_ptr& p, std::size_t n, std::size_t scale) : p_(p), left_(n), scale_(scale) { load(); }
    void load() {
      if (left_ == 0) {
        base_ = nullptr;
        len_ = 0;
        return;
      }
      void* b = nullptr;
      std::size_t k = bspk_span(p_, &b) / scale_;
      if (BSPK_HPP_UNLIKELY(k == 0)) detail::throw_elem(p_, "bspk_span");
      base_ = static_cast<V*>(b);
      len_ = k < left_ ? k : left_;
    }
    bspk_ptr p_{};
    std::size_t left_ = 0, scale_ = 1;
    V* base_ = nullptr;
    std::size_t len_ = 0;
  };

  frame_range(const bspk_ptr& p, std::size_t n, std::size_t scale) noexcept : p_(p), n_(n), scale_(scale) {}
  iterator begin() const { return iterator(p_, n_, scale_); }
  iterator end() const noexcept { return iterator(); }

 private:
  bspk_ptr p_;
  std::size_t n_, scale_;
};

namespace detail {
/* Copy n elements between ordinary memory and a run of comem elements, frame
 * by frame (the program's own copy: not counted in bytes_copied). */
template <class T>
void copy_out(const bspk_ptr& p, std::size_t n, std::size_t scale, T* dst) {
  for (span<const T> f : frame_range<const T>(p, n, scale)) {
    if (!f.empty()) std::memcpy(dst, f.data(), f.size() * sizeof(T));
    dst += f.size();
  }
}
template <class T>
void copy_in(const bspk_ptr& p, std::size_t n, std::size_t scale, const T* src) {
  for (span<T> f : frame_range<T>(p, n, scale)) {
    if (!f.empty()) std::memcpy(f.data(), src, f.size() * sizeof(T));
    src += f.size();
  }
}
}  // namespace detail

// ---- remote<T>: a typed comem pointer ------------------------------------------

/* A typed comem pointer [BSPk §4, Fig. 2]: one element of T in a region on
 * any process (this one included), named by (owner, region, offset) and no
 * local address, so it means the same on every process: it may be stored in
 * a region and sent (remote<T> is trivially copyable, the size of bspk_ptr).
 * Use it as the target or source of bspk::copy and bspk::put. From
 * bspk::lookup<T>, region<T>::ptr(k), or explicitly from a bspk_ptr (whose
 * element type the caller vouches for). Default: the NULL pointer. */
template <class T>
class remote {
 public:
  using element_type = T;
  constexpr remote() noexcept : p_() {}
  explicit constexpr remote(const bspk_ptr& p) noexcept : p_(p) {}

  /* The pointer k elements further (bspk_incr; may be negative; one past the
   * end allowed). Usable at once on a provisional bspk_lookup pointer.
   * Errors: BSPK_ERR_PTR (NULL), BSPK_ERR_RANGE (outside the region). */
  remote operator+(std::ptrdiff_t k) const {
    const bspk_ptr q = bspk_incr(p_, k);
    if (BSPK_HPP_UNLIKELY(q.region == 0)) detail::throw_incr(p_);
    return remote(q);
  }
  remote operator-(std::ptrdiff_t k) const { return *this + (-k); }
  remote& operator+=(std::ptrdiff_t k) { return *this = *this + k; }
  remote& operator-=(std::ptrdiff_t k) { return *this = *this + (-k); }

  /* The n elements from this one, as a slice (for bspk::copy, rt.send, or
   * element access when local). */
  ::bspk::slice<T> slice(std::size_t n) const;

  /* Owning pid (bspk_owner: -1 for NULL and for a bspk_lookup pointer not
   * resolved yet). */
  int owner() const noexcept { return bspk_owner(p_); }
  /* Elements from here to the end of the region (bspk_nelems: 0 for NULL and
   * an unresolved lookup pointer). */
  std::size_t size() const noexcept { return bspk_nelems(p_); }
  bool is_null() const noexcept { return p_.region == 0; }
  explicit operator bool() const noexcept { return p_.region != 0; }
  /* The C pointer, for the C API. */
  const bspk_ptr& c_ptr() const noexcept { return p_; }

 private:
  bspk_ptr p_;
};

// ---- slice<T> ----------------------------------------------------------------

/* n consecutive elements of a region, from element `first` on: a view (owns
 * nothing; valid while its region lives). The source of rt.send, the target
 * or source of bspk::copy; when local, element access and frames like the
 * region's. The slice's bounds are checked (BSPK_ERR_RANGE), the region's
 * by the runtime. */
template <class T>
class slice {
 public:
  using value_type = T;
  slice() noexcept : p_(), n_(0), scale_(1) {}

  std::size_t size() const noexcept { return n_; }
  bool empty() const noexcept { return n_ == 0; }
  /* Element i (i < size()), as region<T>::operator[]. */
  T& operator[](std::size_t i) const {
    if (BSPK_HPP_UNLIKELY(i >= n_)) range_error("bspk::slice::operator[]", i, 1);
    return *static_cast<T*>(detail::elem(p_, i * scale_));
  }
  frame_range<T> frames() const noexcept { return frame_range<T>(p_, n_, scale_); }
  /* The sub-slice [off, off + n) (n elements, or to the end; like
   * std::span::subspan). */
  slice subslice(std::size_t off, std::size_t n = std::size_t(-1)) const {
    if (n == std::size_t(-1)) n = off <= n_ ? n_ - off : 0;
    if (BSPK_HPP_UNLIKELY(off > n_ || n > n_ - off)) range_error("bspk::slice::subslice", off, n);
    return ::bspk::slice<T>(detail::incr(p_, off * scale_), n, scale_);
  }
  /* Copy the size() elements from / to ordinary memory, frame by frame (a
   * local copy by the program, not counted in bytes_copied). */
  void copy_from(const T* src) const { detail::copy_in(p_, n_, scale_, src); }
  void copy_to(T* dst) const { detail::copy_out(p_, n_, scale_, dst); }
  /* A typed pointer to the first element. */
  remote<T> ptr() const noexcept { return remote<T>(p_); }
  const bspk_ptr& c_ptr() const noexcept { return p_; }

 private:
  friend struct detail::access;
  template <class U> friend class region;
  template <class U> friend class remote;
  slice(const bspk_ptr& p, std::size_t n, std::size_t scale) noexcept : p_(p), n_(n), scale_(scale) {}
  [[noreturn]] BSPK_HPP_COLD void range_error(const char* call, std::size_t off, std::size_t n) const {
    detail::fail(BSPK_ERR_RANGE, call,
                 "elements [" + std::to_string(off) + ", " + std::to_string(off) + " + " + std::to_string(n) +
                     ") are outside the slice of " + std::to_string(n_) + " elements");
  }
  bspk_ptr p_;
  std::size_t n_;
  std::size_t scale_;  // C elements per T: 1, or sizeof(T) for a message of bytes (bspk_send_buf)
};

template <class T>
::bspk::slice<T> remote<T>::slice(std::size_t n) const {
  return ::bspk::slice<T>(p_, n, 1);
}

// ---- region<T> ---------------------------------------------------------------

/* A communicable-memory region of n elements of T [BSPk §4], owned: it is
 * freed (bspk_free) when the object is destroyed, and moves but does not
 * copy. Made of frames plus an index array, so element i is found in O(1)
 * whatever the number of frames, but elements are contiguous only within a
 * frame (frames(), or a contiguous region and data()).
 *
 * Lifetime [BSPk §6 rule 2; bspk.h DSM rule 3]: a region sent with rt.send
 * or used as a bspk::copy source must live until the next rt.sync returns,
 * and one a fetch or local copy writes into, until the sync that applies it
 * (bspk.h: the runtime holds the frames of sends and stores in flight, but
 * not those of a local copy's source).
 *
 * Errors (thrown as bspk::error): as bspk_malloc / bspk_malloc_contiguous
 * (BSPK_ERR_ARG: sizeof(T) above the frame size, name over 63 bytes;
 * BSPK_ERR_NAME; BSPK_ERR_NOMEM; BSPK_ERR_STATE). */
template <class T>
class region {
 public:
  using value_type = T;
  using size_type = std::size_t;

  /* No region (size 0); assign one to it. */
  region() noexcept : p_(), n_(0), scale_(1) { detail::check_type<T>(); }
  /* An anonymous region of n elements (bspk_malloc("", 0, n, sizeof(T))).
   * Cost O(F), F = frames. */
  region(runtime&, std::size_t n) : region(nullptr, 0, n, false) {}
  /* The same, contiguous in memory (bspk_malloc_contiguous). */
  region(runtime&, std::size_t n, contiguous_t) : region(nullptr, 0, n, true) {}
  /* A region registered job-wide under (name, idx) for bspk::lookup
   * [BSPk §6.2, Fig. 5]; the pair must be unique in the job (a clash with
   * another process is reported by the next rt.sync, BSPK_ERR_NAME). */
  region(runtime&, const std::string& name, int idx, std::size_t n) : region(name.c_str(), idx, n, false) {}
  region(runtime&, const std::string& name, int idx, std::size_t n, contiguous_t)
      : region(name.c_str(), idx, n, true) {}

  ~region() { reset(); }
  region(const region&) = delete;
  region& operator=(const region&) = delete;
  region(region&& o) noexcept : p_(o.p_), n_(o.n_), scale_(o.scale_) { o.forget(); }
  region& operator=(region&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = o.p_;
      n_ = o.n_;
      scale_ = o.scale_;
      o.forget();
    }
    return *this;
  }

  /* Number of elements of T. */
  std::size_t size() const noexcept { return n_; }
  bool empty() const noexcept { return n_ == 0; }
  /* Whether the object holds a region (false after a move from it). */
  explicit operator bool() const noexcept { return p_.region != 0; }

  /* Element i, i in [0, size()): bspk_elemP(bspk_incr(p, i)), the index-array
   * lookup of the C API, O(1). The reference is valid until the next
   * rt.sync (frame flips). Errors: BSPK_ERR_RANGE (i >= size()),
   * BSPK_ERR_PTR (no region). */
  T& operator[](std::size_t i) { return *static_cast<T*>(detail::elem(p_, i * scale_)); }
  const T& operator[](std::size_t i) const { return *static_cast<const T*>(detail::elem(p_, i * scale_)); }

  /* The frames, in order, each a bspk::span<T> (see frame_range). */
  frame_range<T> frames() noexcept { return frame_range<T>(p_, n_, scale_); }
  frame_range<const T> frames() const noexcept { return frame_range<const T>(p_, n_, scale_); }

  /* Elements [off, off + n) (n omitted: to the end), for rt.send and
   * bspk::copy. Errors: BSPK_ERR_RANGE (past the end). */
  ::bspk::slice<T> slice(std::size_t off = 0, std::size_t n = std::size_t(-1)) const {
    if (n == std::size_t(-1)) n = off <= n_ ? n_ - off : 0;
    if (BSPK_HPP_UNLIKELY(off > n_ || n > n_ - off))
      detail::fail(BSPK_ERR_RANGE, "bspk::region::slice",
                   "elements [" + std::to_string(off) + ", " + std::to_string(off) + " + " + std::to_string(n) +
                       ") are outside the region of " + std::to_string(n_) + " elements");
    return ::bspk::slice<T>(detail::incr(p_, off * scale_), n, scale_);
  }
  /* A typed pointer to element k (k == size() allowed: one past the end). */
  remote<T> ptr(std::size_t k = 0) const { return remote<T>(detail::incr(p_, k * scale_)); }

  /* Whether the region lies in one piece of memory (bspk_is_contiguous):
   * every contiguous region, and any region of at most one frame. */
  bool contiguous() const noexcept { return bspk_is_contiguous(p_) == 1; }
  /* Element 0's address, for a contiguous region: all size() elements lie
   * there back to back. Valid until bspk_free for a region made with
   * bspk::contiguous (never flipped), until the next rt.sync for a one-frame
   * ordinary region. nullptr for an empty region.
   * Errors: BSPK_ERR_ARG (the region is not contiguous). */
  T* data() { return static_cast<T*>(data_or_throw()); }
  const T* data() const { return static_cast<const T*>(data_or_throw()); }

  /* Copy the size() elements from / to ordinary memory (see slice). */
  void copy_from(const T* src) { detail::copy_in(p_, n_, scale_, src); }
  void copy_to(T* dst) const { detail::copy_out(p_, n_, scale_, dst); }

  /* The C pointer (element 0), for the C API; the region still owns it. */
  const bspk_ptr& c_ptr() const noexcept { return p_; }
  /* Give up ownership: the caller frees the returned pointer (bspk_free). */
  bspk_ptr release() noexcept {
    bspk_ptr p = p_;
    forget();
    return p;
  }
  /* Free the region now (bspk_free), leaving the object empty. Errors are
   * reported by the C layer (bspk_free prints unless BSPK_ERRORS=quiet); no
   * free is attempted after bspk_finalize, which released every region. */
  void reset() noexcept {
    if (p_.region != 0 && bspk_nprocs() > 0) (void)bspk_free(p_);
    forget();
  }

 protected:
  /* Adopt a region the caller owns (a received message): n elements of T,
   * scale C elements per T. */
  region(detail::adopt_t, const bspk_ptr& p, std::size_t n, std::size_t scale) noexcept
      : p_(p), n_(n), scale_(scale) {
    detail::check_type<T>();
  }

 private:
  friend struct detail::access;
  region(const char* name, int idx, std::size_t n, bool contig) : n_(n), scale_(1) {
    detail::check_type<T>();
    p_ = contig ? bspk_malloc_contiguous(name, idx, n, sizeof(T)) : bspk_malloc(name, idx, n, sizeof(T));
    if (BSPK_HPP_UNLIKELY(p_.region == 0))
      detail::throw_malloc(contig ? "bspk_malloc_contiguous" : "bspk_malloc", name, idx, sizeof(T));
  }
  void forget() noexcept {
    p_ = bspk_ptr();
    n_ = 0;
    scale_ = 1;
  }
  void* data_or_throw() const {
    if (n_ == 0) return nullptr;
    if (BSPK_HPP_UNLIKELY(bspk_is_contiguous(p_) != 1))
      detail::fail(BSPK_ERR_ARG, "bspk::region::data",
                   "the region of " + std::to_string(n_) +
                       " elements is not contiguous (allocate it with bspk::contiguous, or walk frames())");
    return detail::elem(p_, 0);
  }
  bspk_ptr p_;
  std::size_t n_;
  std::size_t scale_;  // C elements per T: 1, or sizeof(T) for a message of bytes (bspk_send_buf)
};

// ---- messages [BSPk §6.1, Fig. 4] -----------------------------------------------

/* A received message: a region (made of the frames it arrived in, no copy)
 * that this object owns and frees, plus its sender. Move it into a
 * region<T> to keep it past the loop that received it.
 * Element type: a message of elements of sizeof(T) bytes, or a message of
 * bytes (bspk_send_buf, rt.send_buf) whose length is a whole number of T and
 * whose frames hold whole elements; anything else is an error
 * (BSPK_ERR_ARG, naming the sender and both sizes). */
template <class T>
class message : public region<T> {
 public:
  message() noexcept = default;
  /* Pid of the process that sent it (bspk_sender_id). */
  int sender() const noexcept { return sender_; }
  /* Its tag (bspk_tag): the tag of rt.send(dest, s, tag), 0 for an untagged send. */
  std::uint64_t tag() const noexcept { return tag_; }

 private:
  friend struct detail::access;
  message(const bspk_ptr& p, std::size_t n, std::size_t scale, int sender) noexcept
      : region<T>(detail::adopt_t{}, p, n, scale), sender_(sender), tag_(bspk_tag(p)) {}
  int sender_ = -1;
  std::uint64_t tag_ = 0;
};

namespace detail {

/* Whether a message of n bytes at p can be read as elements of T in place:
 * every frame (bspk_span) holds whole elements, aligned for T. O(F). */
template <class T>
bool holds_whole(bspk_ptr p, std::size_t n) {
  while (n) {
    void* b = nullptr;
    std::size_t k = bspk_span(p, &b);
    if (k == 0) return false;
    if (k > n) k = n;
    if (reinterpret_cast<std::uintptr_t>(b) % alignof(T) != 0) return false;
    n -= k;
    if (n == 0) break;
    if (k % sizeof(T) != 0) return false;
    p = bspk_incr(p, static_cast<std::ptrdiff_t>(k));
    if (p.region == 0) return false;
  }
  return true;
}

/* Own the received region p as a message<T>, checking its element size. */
template <class T>
message<T> receive_as(const bspk_ptr& p, const char* call);

}  // namespace detail

/* The messages sent to this process in the previous superstep, in order of
 * sender pid, then send order (bspk_recv until BSPK_NULL). For range-for:
 *   for (bspk::message<double>& m : rt.messages<double>()) ...
 * Each message is freed when the loop moves on, unless moved out. A message
 * whose element size does not fit T throws (BSPK_ERR_ARG; it is freed, the
 * messages after it stay queued for the next range). Messages not received
 * by the end of the superstep are destroyed [bspk.h bspk_sync]. O(1) per
 * message (plus O(F) for a message of bytes read as a wider T). */
template <class T>
class message_range {
 public:
  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = message<T>;
    using difference_type = std::ptrdiff_t;
    using pointer = message<T>*;
    using reference = message<T>&;

    iterator() = default;
    message<T>& operator*() const noexcept { return cur_; }
    message<T>* operator->() const noexcept { return &cur_; }
    iterator& operator++() {
      cur_ = message<T>();  // free this one before receiving the next
      next();
      return *this;
    }
    void operator++(int) { ++*this; }  // an input iterator's postfix form (C++20 std::input_iterator)
    friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.done_ == b.done_; }
    friend bool operator!=(const iterator& a, const iterator& b) noexcept { return a.done_ != b.done_; }
    // The end: a copyable sentinel (the iterator holds a message, which is
    // not copyable), so that the range is a C++20 std::ranges::input_range.
    struct sentinel {};
    friend bool operator==(const iterator& a, sentinel) noexcept { return a.done_; }
    friend bool operator!=(const iterator& a, sentinel) noexcept { return !a.done_; }
    friend bool operator==(sentinel, const iterator& a) noexcept { return a.done_; }
    friend bool operator!=(sentinel, const iterator& a) noexcept { return !a.done_; }

   private:
    friend class message_range;
    explicit iterator(bool) : done_(false) { next(); }
    void next() {
      const bspk_ptr p = bspk_recv();
      if (p.region == 0) {
        if (BSPK_HPP_UNLIKELY(bspk_nprocs() <= 0)) detail::throw_c(BSPK_ERR_STATE, "bspk_recv");
        done_ = true;
        return;
      }
      cur_ = detail::receive_as<T>(p, "bspk::runtime::messages<T>");
    }
    mutable message<T> cur_;
    bool done_ = true;  // the end (a moved-out message does not end the loop)
  };

  iterator begin() { return iterator(true); }
  typename iterator::sentinel end() noexcept { return {}; }
};

// ---- runtime -----------------------------------------------------------------

/* The BSPk runtime of this process: bspk_init at construction, bspk_finalize
 * at finalize() or destruction. One per process, neither copied nor moved.
 *
 * Ending: every process must reach finalize (collective, in its final
 * superstep [bspk.h bspk_finalize]). finalize() throws bspk::error when
 * bspk_finalize fails. The destructor finalizes if finalize() was not called;
 * if that fails it prints the error (pid, code, message) on stderr and ends
 * the process with exit status 1 -- the process's exit ends the job, as
 * bspk.h says for a failed finalize (bspkrun then says how it ended).
 * Finalize errors are never swallowed. When the destructor runs because an
 * exception leaves the runtime's scope, it does not finalize (the other
 * processes are not there): it says so on stderr and lets the exception go
 * on; the process then exits without bspk_finalize, which bspkrun (or the
 * job hub) reports, ending the job. */
class runtime {
 public:
  /* bspk_init(&argc, &argv). Errors: BSPK_ERR_STATE (a runtime exists
   * already), BSPK_ERR_BOOT, BSPK_ERR_FABRIC. */
  runtime(int& argc, char**& argv) { init(&argc, &argv); }
  /* bspk_init(NULL, NULL). */
  runtime() { init(nullptr, nullptr); }
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  ~runtime() {
    if (done_) return;
    done_ = true;
    if (std::uncaught_exceptions() > uncaught_) {
      std::fflush(stdout);
      std::fprintf(stderr,
                   "bspk: bspk::runtime (pid %d) left by an exception: bspk_finalize not called; the job ends "
                   "when this process exits\n",
                   pid_);
      return;
    }
    const int rc = bspk_finalize();
    if (rc == BSPK_OK) return;
    std::fflush(stdout);
    std::fprintf(stderr, "bspk: error: bspk::runtime::~runtime (pid %d): bspk_finalize returned %s: %s; "
                 "ending the process with exit status 1\n",
                 pid_, code_name(rc), bspk_error_string());
    std::fflush(stderr);
    std::exit(EXIT_FAILURE);
  }

  /* bspk_finalize: collective, in the final superstep; messages sent in it
   * are discarded. Called at most once (later calls do nothing); regions
   * still alive are released with the runtime (their destructors then do
   * nothing). Errors: BSPK_ERR_PEER, BSPK_ERR_TIMEOUT, BSPK_ERR_STATE, an
   * earlier [over] error's code (bspk.h); the runtime is finished either way. */
  void finalize() {
    if (done_) return;
    done_ = true;
    // The error names the superstep finalize was called in, as its message
    // does (its final sync may have counted that superstep ended already).
    const int pid = bspk_pid();
    const std::int64_t step = detail::superstep_now();
    const int rc = bspk_finalize();
    if (BSPK_HPP_UNLIKELY(rc != BSPK_OK)) {
      std::string msg = bspk_error_string();
      if (msg.empty()) msg = std::string("bspk_finalize: failed with ") + code_name(rc);
      throw error(rc, "bspk_finalize", pid, step, msg);
    }
  }
  bool finalized() const noexcept { return done_; }

  /* This process's pid in [0, nprocs()), and the number of processes. O(1). */
  int pid() const noexcept { return bspk_pid(); }
  int nprocs() const noexcept { return bspk_nprocs(); }
  /* The current superstep, numbered from 0 on each process (= supersteps
   * completed, bspk_superstep). */
  std::uint64_t superstep() const noexcept { return bspk_superstep(); }
  /* Seconds (CLOCK_MONOTONIC, bspk_time). */
  double time() const noexcept { return bspk_time(); }
  /* This process's counters (bspk_get_stats). */
  bspk_stats stats() const {
    bspk_stats s;
    detail::check(bspk_get_stats_sized(&s, sizeof s), "bspk_get_stats");
    return s;
  }
  /* End the whole job with a non-zero status, printing msg once, prefixed
   * with pid and superstep (bspk_abort). */
  [[noreturn]] void abort(const std::string& msg) const { bspk_abort("%s", msg.c_str()); }

  // -- synchronisation: lazy barriers [BSPk §5] --

  /* End the superstep (bspk_sync): returns when every message and copy of
   * this superstep has arrived here and this process's sends are done; the
   * count of messages comes from the exchange of send counts (the cost of
   * an ordinary barrier, L). Copies are applied before it returns.
   * Errors: as bspk_sync (BSPK_ERR_COUNT, _MODE, _TIMEOUT, _PEER, _FABRIC
   * [over]; _NAME, _CONFLICT, _PTR, _RANGE after the superstep ended [step]). */
  void sync() { detail::check(bspk_sync(), "bspk_sync"); }
  /* bspk_expect(e) then bspk_sync: no traffic beyond the data (cost 0).
   * Every process uses the same kind in a superstep [BSPk Table 1]. */
  void sync(expect e) {
    if (BSPK_HPP_UNLIKELY(e.n < 0 || e.n > INT_MAX))
      detail::fail(BSPK_ERR_ARG, "bspk::runtime::sync(expect)",
                   "expect{" + std::to_string(e.n) + "} is outside [0, INT_MAX]");
    detail::check(bspk_expect(static_cast<int>(e.n)), "bspk_expect");
    sync();
  }
  /* bspk_will_send(v) then bspk_sync (v: nprocs() entries). Errors:
   * BSPK_ERR_ARG (v has not nprocs() entries, or a negative one),
   * BSPK_ERR_MODE, and those of sync(). */
  void sync(const will_send& w) {
    if (BSPK_HPP_UNLIKELY(w.size() != static_cast<std::size_t>(nprocs())))
      detail::fail(BSPK_ERR_ARG, "bspk::runtime::sync(will_send)",
                   "the vector has " + std::to_string(w.size()) + " entries, not one per process (" +
                       std::to_string(nprocs()) + ")");
    detail::check(bspk_will_send(w.data()), "bspk_will_send");
    sync();
  }

  /* bspk_sync_allgather: end a superstep whose only communication is an
   * all-gather of one value per process; returns every process's value,
   * indexed by pid (this one's included). On one host it goes through the
   * shared-memory board: the cost of a barrier (bspk.h). T trivially
   * copyable, sizeof(T) <= BSPK_SYNC_BLOCK_MAX. Collective: every process
   * calls it with the same T in the same superstep, having sent nothing.
   * Errors: BSPK_ERR_ARG (a process passed a T of another size), _STATE,
   * _MODE and those of sync(). */
  template <class T>
  std::vector<T> sync_allgather(const T& mine) {
    static_assert(std::is_trivially_copyable<T>::value,
                  "bspk::runtime::sync_allgather<T>: T must be trivially copyable (its bytes travel as they are)");
    static_assert(sizeof(T) <= BSPK_SYNC_BLOCK_MAX, "bspk::runtime::sync_allgather<T>: T is larger than BSPK_SYNC_BLOCK_MAX");
    std::vector<T> all(static_cast<std::size_t>(nprocs()));
    detail::check(bspk_sync_allgather(&mine, sizeof(T), all.data(), nullptr), "bspk_sync_allgather");
    return all;
  }

  // -- message passing [BSPk §6.1, Fig. 4] --

  /* Send the elements of s (a local slice) to dest (itself allowed), received
   * there in the next superstep: bspk_send, zero copy, so s's region must
   * not change or be freed until the next sync returns. Cost O(F).
   * Errors: BSPK_ERR_PID, BSPK_ERR_PTR (remote or freed), BSPK_ERR_STATE. */
  template <class T>
  void send(int dest, const ::bspk::slice<T>& s);
  /* The whole region (a received message too: its frames go straight on). */
  template <class T>
  void send(int dest, const region<T>& r);
  /* The same with a 64-bit user tag (bspk_send_tag), read by the receiver as
   * message<T>::tag(); no extra bytes on the wire, still zero copy. */
  template <class T>
  void send(int dest, const ::bspk::slice<T>& s, std::uint64_t tag);
  template <class T>
  void send(int dest, const region<T>& r, std::uint64_t tag);
  /* Buffered send of n elements of ordinary memory (bspk_send_buf): copied
   * into frames at the call (counted in bytes_copied), so data may change at
   * once. The receiver gets a message of n * sizeof(T) bytes, which
   * messages<T>() reads as n elements of T.
   * Errors: BSPK_ERR_PID, BSPK_ERR_ARG, BSPK_ERR_NOMEM, BSPK_ERR_STATE. */
  template <class T>
  void send_buf(int dest, const T* data, std::size_t n) {
    detail::check_type<T>();
    detail::check(bspk_send_buf(dest, data, n * sizeof(T)), "bspk_send_buf");
  }
  /* The messages received in this superstep (see message_range). */
  template <class T>
  message_range<T> messages() {
    detail::check_type<T>();
    return message_range<T>();
  }
  /* The next message, or an empty message<T> (false) when none is left. */
  template <class T>
  message<T> recv() {
    detail::check_type<T>();
    const bspk_ptr p = bspk_recv();
    if (p.region == 0) {
      if (BSPK_HPP_UNLIKELY(bspk_nprocs() <= 0)) detail::throw_c(BSPK_ERR_STATE, "bspk_recv");
      return message<T>();
    }
    return detail::receive_as<T>(p, "bspk::runtime::recv<T>");
  }

  /* Processes bspk_init will join, read from the environment without
   * starting the runtime (bspk_launched). */
  static int launched() noexcept { return bspk_launched(); }

 private:
  void init(int* argc, char*** argv) {
    uncaught_ = std::uncaught_exceptions();
    detail::check(bspk_init(argc, argv), "bspk_init");
    pid_ = bspk_pid();
  }
  bool done_ = false;
  int pid_ = -1;
  int uncaught_ = 0;
};

// ---- detail: access to slices, regions, pointers as copy ends -------------------

namespace detail {

template <class T>
struct end {
  bspk_ptr p;
  std::size_t limit;  // elements available (SIZE_MAX: a pointer, checked by the runtime)
  std::size_t scale;
};

struct access {
  template <class T>
  static end<T> of(const region<T>& r) noexcept { return {r.p_, r.n_, r.scale_}; }
  template <class T>
  static end<T> of(const ::bspk::slice<T>& s) noexcept { return {s.p_, s.n_, s.scale_}; }
  template <class T>
  static end<T> of(const remote<T>& p) noexcept { return {p.c_ptr(), std::size_t(-1), 1}; }
  template <class T>
  static message<T> make_message(const bspk_ptr& p, std::size_t n, std::size_t scale, int from) noexcept {
    return message<T>(p, n, scale, from);
  }
};

template <class X, class = void>
struct end_type {};
template <class X>
struct end_type<X, std::void_t<decltype(access::of(std::declval<const X&>()))>> {
  using type = decltype(access::of(std::declval<const X&>()));
};

template <class T>
message<T> receive_as(const bspk_ptr& p, const char* call) {
  const std::size_t es = bspk_elem_size(p), n = bspk_nelems(p);
  const int from = bspk_sender_id(p);
  message<T> m = access::make_message<T>(p, n, 1, from);  // owned from here on: freed if the checks throw
  if (es == sizeof(T)) return m;
  if (es == 1 && n % sizeof(T) == 0 && holds_whole<T>(p, n)) {
    (void)m.release();
    return access::make_message<T>(p, n / sizeof(T), sizeof(T), from);
  }
  std::string what = "the message from pid " + std::to_string(from) + " has " + std::to_string(n) + " elements of " +
                     std::to_string(es) + (es == 1 ? " byte" : " bytes") + ", but T has " + std::to_string(sizeof(T)) +
                     " bytes";
  if (es == 1)
    what += n % sizeof(T) ? " (its " + std::to_string(n) + " bytes are not a whole number of T)"
                          : " (its frames do not hold whole, aligned elements of T)";
  what += "; the message is dropped";
  fail(BSPK_ERR_ARG, call, what);
}

}  // namespace detail

template <class T>
void runtime::send(int dest, const ::bspk::slice<T>& s) {
  const detail::end<T> e = detail::access::of(s);
  detail::check(bspk_send(dest, e.p, e.limit * e.scale), "bspk_send");
}
template <class T>
void runtime::send(int dest, const region<T>& r) {
  const detail::end<T> e = detail::access::of(r);
  detail::check(bspk_send(dest, e.p, e.limit * e.scale), "bspk_send");
}
template <class T>
void runtime::send(int dest, const ::bspk::slice<T>& s, std::uint64_t tag) {
  const detail::end<T> e = detail::access::of(s);
  detail::check(bspk_send_tag(dest, e.p, e.limit * e.scale, tag), "bspk_send_tag");
}
template <class T>
void runtime::send(int dest, const region<T>& r, std::uint64_t tag) {
  const detail::end<T> e = detail::access::of(r);
  detail::check(bspk_send_tag(dest, e.p, e.limit * e.scale, tag), "bspk_send_tag");
}

// ---- distributed shared memory [BSPk §3, §6.2, Figs. 5-6] ------------------------

/* The region registered under (name, idx) on whichever process owns it
 * (bspk_lookup), as a typed pointer to its element 0. Exact at once when this
 * process owns the pair or resolved it before; else provisional (owner() -1
 * until the end of the superstep) but usable at once in bspk::copy and +:
 * the pair may be registered in this very superstep [BSPk §6.2]. Cost O(1),
 * one round trip to the pair's home within the superstep.
 * Errors: BSPK_ERR_ARG (empty or over-long name; a resolved region whose
 * elements are not sizeof(T) bytes), BSPK_ERR_STATE. A pair unknown at the
 * end of the superstep of a copy that uses it: that sync, BSPK_ERR_NAME. */
template <class T>
remote<T> lookup(runtime&, const std::string& name, int idx) {
  detail::check_type<T>();
  const bspk_ptr p = bspk_lookup(name.c_str(), idx);
  if (BSPK_HPP_UNLIKELY(p.region == 0))
    detail::throw_c(bspk_nprocs() <= 0 ? BSPK_ERR_STATE : BSPK_ERR_ARG, "bspk_lookup");
  const std::size_t es = bspk_elem_size(p);  // 0 until resolved
  if (BSPK_HPP_UNLIKELY(es != 0 && es != sizeof(T)))
    detail::fail(BSPK_ERR_ARG, "bspk::lookup<T>",
                 "(\"" + name + "\", " + std::to_string(idx) + ") has elements of " + std::to_string(es) +
                     " bytes, but T has " + std::to_string(sizeof(T)) + " bytes");
  return remote<T>(p);
}

/* Copy n elements from src to dst (bspk_copy), taking effect at the next
 * superstep boundary [BSPk §3; bspk.h DSM rules 1-6]: a remote dst is a
 * store, a remote src a fetch, both local a local copy. dst and src: a
 * region<T> (a message<T> too), a slice<T> or a remote<T>, of the same T;
 * a slice or region must hold n elements (checked here), a remote<T> is
 * checked by the runtime. Zero copy: the source must not change or be freed
 * until the next sync returns (rule 3). Counts as one message at its target
 * (rule 5). n == 0 does nothing.
 * Errors: BSPK_ERR_RANGE (n past a slice or region), BSPK_ERR_ARG (a
 * message of bytes read as a wider T: copy needs T-sized elements), and
 * those of bspk_copy (BSPK_ERR_PTR, _ARG, _RANGE; refusals at the target
 * come from a later rt.sync). */
template <class D, class S>
void copy(const D& dst, const S& src, std::size_t n) {
  using DE = typename detail::end_type<D>::type;
  using SE = typename detail::end_type<S>::type;
  static_assert(std::is_same<DE, SE>::value,
                "bspk::copy: dst and src must have the same element type T (region<T>, slice<T>, remote<T>)");
  const DE d = detail::access::of(dst);
  const SE s = detail::access::of(src);
  if (BSPK_HPP_UNLIKELY(n > d.limit || n > s.limit))
    detail::fail(BSPK_ERR_RANGE, "bspk::copy",
                 std::to_string(n) + " elements do not fit the " + (n > d.limit ? "destination" : "source") + " (" +
                     std::to_string(n > d.limit ? d.limit : s.limit) + " elements)");
  if (BSPK_HPP_UNLIKELY(d.scale != 1 || s.scale != 1))
    detail::fail(BSPK_ERR_ARG, "bspk::copy",
                 "a message of bytes read as a wider T cannot take part in a copy (element sizes differ); "
                 "use bspk::put with its bytes");
  detail::check(bspk_copy(d.p, s.p, n), "bspk_copy");
}

/* Buffered store of n elements of ordinary memory into dst (bspk_put): copied
 * into frames at the call, so src may change at once; otherwise a bspk::copy
 * (takes effect at the boundary, one message at dst's owner).
 * Errors: BSPK_ERR_RANGE (n past a slice or region), those of bspk_put. */
template <class D, class T>
void put(const D& dst, const T* src, std::size_t n) {
  using DE = typename detail::end_type<D>::type;
  static_assert(std::is_same<DE, detail::end<T>>::value, "bspk::put: dst must hold elements of the source's type T");
  const DE d = detail::access::of(dst);
  if (BSPK_HPP_UNLIKELY(n > d.limit))
    detail::fail(BSPK_ERR_RANGE, "bspk::put",
                 std::to_string(n) + " elements do not fit the destination (" + std::to_string(d.limit) +
                     " elements)");
  if (BSPK_HPP_UNLIKELY(d.scale != 1))
    detail::fail(BSPK_ERR_ARG, "bspk::put", "the destination is a message of bytes read as a wider T");
  detail::check(bspk_put(d.p, src, n * sizeof(T)), "bspk_put");
}

/* Move the elements of src -- typically a received message -- into dst at
 * once (bspk_move): where whole frames line up (a message sent from element 0
 * of a region, moved to element 0 of one) they change hands, no copy; the rest
 * is copied. src is consumed: left empty (its region freed), as after
 * reset(). dst: a region<T> or slice<T> holding at least src.size() elements.
 * Not a communication: nothing is counted, no other process sees it.
 * Errors: BSPK_ERR_RANGE (dst too short), BSPK_ERR_ARG (a message of bytes
 * read as a wider T: element sizes differ), those of bspk_move; src is then
 * left as it was. */
template <class D, class T>
void move(const D& dst, region<T>&& src) {
  using DE = typename detail::end_type<D>::type;
  static_assert(std::is_same<DE, detail::end<T>>::value,
                "bspk::move: dst must hold elements of the source's type T (region<T>, slice<T>)");
  const DE d = detail::access::of(dst);
  const detail::end<T> s = detail::access::of(src);
  if (BSPK_HPP_UNLIKELY(s.limit > d.limit))
    detail::fail(BSPK_ERR_RANGE, "bspk::move",
                 std::to_string(s.limit) + " elements do not fit the destination (" + std::to_string(d.limit) +
                     " elements)");
  if (BSPK_HPP_UNLIKELY(d.scale != 1 || s.scale != 1))
    detail::fail(BSPK_ERR_ARG, "bspk::move",
                 "a message of bytes read as a wider T cannot be moved (element sizes differ); copy its elements");
  if (s.limit == 0 && s.p.region == 0) return;  // an empty src: nothing to move
  detail::check(bspk_move(d.p, s.p, s.limit), "bspk_move");
  (void)src.release();  // freed by bspk_move
}

}  // namespace bspk

#endif  // BSPK_HPP
#include "bspk_coll.hpp"
