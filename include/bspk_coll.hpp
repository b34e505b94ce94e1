/*
 * bspk_coll.hpp -- the collectives of bspk_coll.h for the C++ API of
 * bspk.hpp: header-only, over the C calls of bspk_coll.h and nothing else.
 * C++17 or later. Semantics, supersteps, costs and the detection of
 * mismatched calls are those of bspk_coll.h, call by call; this header adds
 * only what it says here.
 *
 *   bspk::broadcast(rt, r, root);                  bspk_broadcast (r: region<T> or slice<T>)
 *   bspk::reduce(rt, r, std::plus<>{}, root);      bspk_reduce
 *   bspk::allreduce(rt, r, bspk::max{});           bspk_allreduce
 *   bspk::scan(rt, r, op);  bspk::exscan(rt, r, op);
 *   bspk::gather(rt, dst, src, root);              bspk_gather   (n = src.size())
 *   bspk::allgather(rt, dst, src);                 bspk_allgather (n = src.size())
 *   bspk::alltoall(rt, dst, src);                  bspk_alltoall (n = src.size() / p)
 *   bspk::alltoallv(rt, dst, recvcounts, rdispls, src, sendcounts, sdispls);   bspk_alltoallv
 *   double s = bspk::allreduce(rt, x, std::plus<>{});   value forms, one element
 *   std::vector<int> all = bspk::allgather(rt, x);
 *
 * Every collective ends the caller's superstep, like rt.sync() (bspk_coll.h
 * Conventions): call it with no message sent, no copy issued and no
 * declaration made in the current superstep.
 *
 * Operations. op is any associative callable taking two T and returning
 * something convertible to T. These are the built-in C operations when T is
 * one of the C list's types (int32_t, int64_t, uint32_t, uint64_t -- any
 * integral type of 4 or 8 bytes but bool -- float, double):
 *   std::plus<>/<T> BSPK_SUM, std::multiplies BSPK_PROD, bspk::min BSPK_MIN,
 *   bspk::max BSPK_MAX, std::logical_and BSPK_LAND, std::logical_or BSPK_LOR,
 *   std::bit_and BSPK_BAND, std::bit_or BSPK_BOR, std::bit_xor BSPK_BXOR.
 * Anything else (a lambda, another type) is a user operation: registered
 * with bspk_op_create(.., sizeof(T), non-commutative) for the call and freed
 * after it. Since bspk_combine_fn has no context argument, the callable is
 * reached through a thread_local pointer per (T, Op) type set for the
 * duration of the call (restored afterwards, so nested or recursive use on
 * one thread is fine; a callable must not itself start a collective with the
 * same (T, Op) types). It is applied as acc = op(acc, next) with acc the
 * lower pids' combination, in pid order (bspk_coll.h).
 *
 * Errors throw bspk::error (code, call, pid, superstep) with the message of
 * bspk_coll_error_string(), which the C layer printed (unless
 * BSPK_ERRORS=quiet); superstep() is the one the collective started in, as
 * in the message. Errors found here (a message of bytes read as a wider T;
 * alltoall's src not a multiple of p elements; alltoallv's vectors not p
 * long) are reported like bspk.hpp's own, after the C collective ran with
 * an argument it refuses, so that every process leaves it with an error
 * (the others: "pid i passed invalid arguments") and none waits.
 */
#ifndef BSPK_COLL_HPP
#define BSPK_COLL_HPP

#include <bspk.hpp>
#include <bspk_coll.h>

#include <cstddef>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

namespace bspk {

/* The smaller / larger of two values (with <), as function objects: on the
 * C list's types they are BSPK_MIN and BSPK_MAX. */
struct min {
  template <class T>
  constexpr T operator()(const T& a, const T& b) const {
    return b < a ? b : a;
  }
};
struct max {
  template <class T>
  constexpr T operator()(const T& a, const T& b) const {
    return a < b ? b : a;
  }
};

namespace detail {

template <class T>
constexpr int coll_type() {
  if constexpr (std::is_same<T, float>::value) {
    return BSPK_FLOAT;
  } else if constexpr (std::is_same<T, double>::value) {
    return BSPK_DOUBLE;
  } else if constexpr (std::is_integral<T>::value && !std::is_same<T, bool>::value && sizeof(T) == 4) {
    return std::is_signed<T>::value ? BSPK_INT32 : BSPK_UINT32;
  } else if constexpr (std::is_integral<T>::value && !std::is_same<T, bool>::value && sizeof(T) == 8) {
    return std::is_signed<T>::value ? BSPK_INT64 : BSPK_UINT64;
  } else {
    return 0;
  }
}

template <class Op, template <class> class F, class T>
constexpr bool is_fn() {
  return std::is_same<Op, F<void>>::value || std::is_same<Op, F<T>>::value;
}

template <class T, class Op>
constexpr int coll_oper() {
  using O = std::remove_cv_t<std::remove_reference_t<Op>>;
  if constexpr (is_fn<O, std::plus, T>()) return BSPK_SUM;
  else if constexpr (is_fn<O, std::multiplies, T>()) return BSPK_PROD;
  else if constexpr (std::is_same<O, ::bspk::min>::value) return BSPK_MIN;
  else if constexpr (std::is_same<O, ::bspk::max>::value) return BSPK_MAX;
  else if constexpr (is_fn<O, std::logical_and, T>()) return BSPK_LAND;
  else if constexpr (is_fn<O, std::logical_or, T>()) return BSPK_LOR;
  else if constexpr (std::is_integral<T>::value && is_fn<O, std::bit_and, T>()) return BSPK_BAND;
  else if constexpr (std::is_integral<T>::value && is_fn<O, std::bit_or, T>()) return BSPK_BOR;
  else if constexpr (std::is_integral<T>::value && is_fn<O, std::bit_xor, T>()) return BSPK_BXOR;
  else return 0;
}

/* The built-in C op for (T, Op), or 0: a user op. */
template <class T, class Op>
constexpr bspk_op builtin_op() {
  constexpr int t = coll_type<T>(), o = coll_oper<T, Op>();
  return (t != 0 && o != 0) ? (o | t) : 0;
}

/* The C trampoline of a user op: bspk_combine_fn has no context argument. */
template <class T, class Op>
struct coll_trampoline {
  static inline thread_local const Op* current = nullptr;
  static void fn(void* acc, const void* next, std::size_t n) {
    T* a = static_cast<T*>(acc);
    const T* b = static_cast<const T*>(next);
    const Op& op = *current;
    for (std::size_t i = 0; i < n; i++) a[i] = static_cast<T>(op(a[i], b[i]));
  }
};

/* An argument error this header found on this process, before the C call:
 * the C collective is still called (with a BSPK_NULL pointer, which it
 * refuses), so that every process leaves it with an error after the header
 * superstep, as for the C layer's own argument checks (bspk_coll.h), instead
 * of the others waiting in a collective this process never entered. Then
 * check_coll throws this text. Empty: none. */
inline std::string& local_arg_error() {
  static thread_local std::string text;
  return text;
}

/* The start of a C++ collective: no argument error yet; the superstep it
 * starts in. */
inline std::int64_t coll_begin() {
  local_arg_error().clear();
  return superstep_now();
}

/* The error a collective started in superstep `step` just returned (its
 * message: bspk_coll_error_string(), which names that superstep). */
[[noreturn]] BSPK_HPP_COLD inline void throw_coll(int code, const char* call, std::int64_t step) {
  std::string msg = bspk_coll_error_string();
  if (msg.empty()) msg = std::string(call) + ": failed with " + code_name(code);
  throw error(code, call, bspk_pid(), step, msg);
}
[[noreturn]] BSPK_HPP_COLD inline void throw_local_arg(const char* cxx_call, std::int64_t step) {
  std::string what;
  what.swap(local_arg_error());
  fail_at(BSPK_ERR_ARG, cxx_call, what + " (every process left the collective with an error)", step);
}
/* rc of a C collective called in superstep `step` (superstep_now() before
 * the call): thrown if not BSPK_OK, with this header's own text when it
 * found the arguments wrong (local_arg_error). */
inline void check_coll(int rc, const char* call, std::int64_t step, const char* cxx_call = nullptr) {
  if (BSPK_HPP_UNLIKELY(!local_arg_error().empty())) throw_local_arg(cxx_call ? cxx_call : call, step);
  if (BSPK_HPP_UNLIKELY(rc != BSPK_OK)) throw_coll(rc, call, step);
}

/* The C op of one call: a built-in code, or a user op registered for it. */
template <class T, class Op>
class coll_op {
 public:
  explicit coll_op(const Op& op) {
    if constexpr (builtin_op<T, Op>() != 0) {
      code_ = builtin_op<T, Op>();
    } else {
      prev_ = coll_trampoline<T, Op>::current;
      coll_trampoline<T, Op>::current = &op;
      code_ = bspk_op_create(&coll_trampoline<T, Op>::fn, sizeof(T), 0);
      if (BSPK_HPP_UNLIKELY(code_ < 0)) {
        coll_trampoline<T, Op>::current = prev_;
        throw_coll(code_, "bspk_op_create", superstep_now());
      }
    }
  }
  coll_op(const coll_op&) = delete;
  coll_op& operator=(const coll_op&) = delete;
  ~coll_op() {
    if constexpr (builtin_op<T, Op>() == 0) {
      (void)bspk_op_free(code_);
      coll_trampoline<T, Op>::current = prev_;
    }
  }
  bspk_op code() const noexcept { return code_; }

 private:
  bspk_op code_ = 0;
  const Op* prev_ = nullptr;
};

template <class E>
struct coll_elem {};
template <class T>
struct coll_elem<end<T>> {
  using type = T;
};

/* Record a local argument error (the first of a call): the C collective is
 * then called with BSPK_NULL and one element, which it refuses collectively. */
template <class T>
end<T> invalid_range(const std::string& what) {
  if (local_arg_error().empty()) local_arg_error() = what;
  return end<T>{BSPK_NULL, 1, 1};
}

/* A region<T> (message<T>) or slice<T> as (pointer, elements). */
template <class R>
end<typename coll_elem<typename end_type<R>::type>::type> coll_range(const R& r, const char*) {
  using T = typename coll_elem<typename end_type<R>::type>::type;
  check_type<T>();
  const end<T> e = access::of(r);
  if (BSPK_HPP_UNLIKELY(e.scale != 1))
    return invalid_range<T>(
        "a message of bytes read as a wider T cannot take part in a collective (element sizes differ): copy it "
        "into a region<T>");
  return e;
}

template <class X, class = void>
struct is_coll_range : std::false_type {};
template <class X>
struct is_coll_range<X, std::void_t<typename coll_elem<typename end_type<X>::type>::type>> : std::true_type {};

// The value forms take any X that is not a range; one that is not trivially
// copyable is refused by check_value's static_assert (not by overload
// resolution, whose "no matching function" would hide the reason).
template <class X>
using coll_value = std::enable_if_t<!is_coll_range<X>::value, X>;

template <class T>
constexpr void check_value() {
  static_assert(std::is_trivially_copyable<T>::value,
                "bspk: the value x of a one-value collective (bspk::broadcast, reduce, allreduce, scan, exscan, "
                "gather, allgather) must be trivially copyable: its bytes travel over the fabric, and no "
                "constructor or destructor runs on them. For the elements of a std::vector or std::string, put "
                "them in a bspk::region<T> and use the region form");
}

/* The reductions' common part: r's C pointer and size, op as a bspk_op for
 * r's element type (built in, or a user op for the call), then the C call
 * f(ptr, n, op), whose error is thrown. */
template <class R, class Op, class F>
void with_op(const R& r, Op op, const char* cxx_call, const char* c_call, F f) {
  const std::int64_t step = coll_begin();
  const auto e = coll_range(r, cxx_call);
  using T = typename coll_elem<std::remove_const_t<decltype(e)>>::type;
  coll_op<T, Op> o(op);
  check_coll(f(e.p, e.limit, o.code()), c_call, step, cxx_call);
}

/* A value form: x in a one-element region of this call, f(region), the
 * region's element back. */
template <class T, class F>
T through_region(runtime& rt, const T& x, F f) {
  check_value<T>();
  region<T> r(rt, 1);
  r[0] = x;
  f(r);
  return r[0];
}

}  // namespace detail

// ---- regions and slices --------------------------------------------------------

/* Root's elements into every process's r (bspk_broadcast; r.size() elements). */
template <class R, class = std::enable_if_t<detail::is_coll_range<R>::value>>
void broadcast(runtime&, const R& r, int root) {
  const std::int64_t step = detail::coll_begin();
  const auto e = detail::coll_range(r, "bspk::broadcast");
  detail::check_coll(bspk_broadcast(root, e.p, e.limit), "bspk_broadcast", step, "bspk::broadcast");
}

/* Element-wise op over the pids, in pid order, into the root's r; the other
 * processes' r unchanged (bspk_reduce). */
template <class R, class Op, class = std::enable_if_t<detail::is_coll_range<R>::value>>
void reduce(runtime&, const R& r, Op op, int root) {
  detail::with_op(r, op, "bspk::reduce", "bspk_reduce",
                  [root](bspk_ptr p, std::size_t n, bspk_op o) { return bspk_reduce(root, p, n, o); });
}

/* Element-wise op over the pids into every process's r (bspk_allreduce). */
template <class R, class Op, class = std::enable_if_t<detail::is_coll_range<R>::value>>
void allreduce(runtime&, const R& r, Op op) {
  detail::with_op(r, op, "bspk::allreduce", "bspk_allreduce", bspk_allreduce);
}

/* Inclusive scan: pid i's r becomes x_0 op ... op x_i (bspk_scan). */
template <class R, class Op, class = std::enable_if_t<detail::is_coll_range<R>::value>>
void scan(runtime&, const R& r, Op op) {
  detail::with_op(r, op, "bspk::scan", "bspk_scan", bspk_scan);
}

/* Exclusive scan: pid i's r becomes x_0 op ... op x_{i-1}; pid 0's r is
 * unchanged (bspk_exscan). */
template <class R, class Op, class = std::enable_if_t<detail::is_coll_range<R>::value>>
void exscan(runtime&, const R& r, Op op) {
  detail::with_op(r, op, "bspk::exscan", "bspk_exscan", bspk_exscan);
}

/* The root's dst[j*n ..) = pid j's src (n = src.size()); dst is read only at
 * the root (elsewhere it may be an empty region<T>()) (bspk_gather). */
template <class D, class S, class = std::enable_if_t<detail::is_coll_range<D>::value>>
void gather(runtime&, const D& dst, const S& src, int root) {
  const std::int64_t step = detail::coll_begin();
  const auto d = detail::coll_range(dst, "bspk::gather");
  const auto s = detail::coll_range(src, "bspk::gather");
  static_assert(std::is_same<decltype(d), decltype(s)>::value, "bspk::gather: dst and src must hold the same T");
  detail::check_coll(bspk_gather(root, d.p, s.p, s.limit), "bspk_gather", step, "bspk::gather");
}

/* Every process's dst[j*n ..) = pid j's src (n = src.size()) (bspk_allgather). */
template <class D, class S, class = std::enable_if_t<detail::is_coll_range<D>::value>>
void allgather(runtime&, const D& dst, const S& src) {
  const std::int64_t step = detail::coll_begin();
  const auto d = detail::coll_range(dst, "bspk::allgather");
  const auto s = detail::coll_range(src, "bspk::allgather");
  static_assert(std::is_same<decltype(d), decltype(s)>::value, "bspk::allgather: dst and src must hold the same T");
  detail::check_coll(bspk_allgather(d.p, s.p, s.limit), "bspk_allgather", step, "bspk::allgather");
}

/* Block j of src (n = src.size() / p elements) to pid j's dst block me
 * (bspk_alltoall). Errors: BSPK_ERR_ARG (src.size() not a multiple of p; on
 * the other processes: "pid i passed invalid arguments"). */
template <class D, class S, class = std::enable_if_t<detail::is_coll_range<D>::value>>
void alltoall(runtime& rt, const D& dst, const S& src) {
  const std::int64_t step = detail::coll_begin();
  const auto d = detail::coll_range(dst, "bspk::alltoall");
  auto s = detail::coll_range(src, "bspk::alltoall");
  static_assert(std::is_same<std::remove_const_t<decltype(d)>, decltype(s)>::value,
                "bspk::alltoall: dst and src must hold the same T");
  using T = typename detail::coll_elem<decltype(s)>::type;
  const std::size_t p = static_cast<std::size_t>(rt.nprocs());
  if (BSPK_HPP_UNLIKELY(p == 0 || s.limit % p != 0))
    s = detail::invalid_range<T>("src has " + std::to_string(s.limit) + " elements, not a multiple of the " +
                                 std::to_string(p) + " processes");
  detail::check_coll(bspk_alltoall(d.p, s.p, (s.limit + p - 1) / p), "bspk_alltoall", step, "bspk::alltoall");
}

/* sendcounts[j] elements from src[sdispls[j] ..) go to pid j, which stores
 * them at its dst[rdispls[me] ..); recvcounts[j] is what comes from pid j
 * (pid j's sendcounts[me]). Arguments in bspk_alltoallv's order (dst and its
 * counts first, like every collective here); each vector holds p entries, in
 * elements. Errors: BSPK_ERR_ARG (a vector of another length; counts that
 * disagree between processes, bspk_alltoallv). */
template <class D, class S, class = std::enable_if_t<detail::is_coll_range<D>::value>>
void alltoallv(runtime& rt, const D& dst, const std::vector<std::size_t>& recvcounts,
               const std::vector<std::size_t>& rdispls, const S& src, const std::vector<std::size_t>& sendcounts,
               const std::vector<std::size_t>& sdispls) {
  const std::int64_t step = detail::coll_begin();
  const auto d = detail::coll_range(dst, "bspk::alltoallv");
  const auto s = detail::coll_range(src, "bspk::alltoallv");
  static_assert(std::is_same<decltype(d), decltype(s)>::value, "bspk::alltoallv: dst and src must hold the same T");
  const std::size_t p = static_cast<std::size_t>(rt.nprocs());
  const std::vector<std::size_t>* v[4] = {&recvcounts, &rdispls, &sendcounts, &sdispls};
  const char* names[4] = {"recvcounts", "rdispls", "sendcounts", "sdispls"};
  for (int i = 0; i < 4 && detail::local_arg_error().empty(); i++)
    if (BSPK_HPP_UNLIKELY(v[i]->size() != p))
      detail::local_arg_error() = std::string(names[i]) + " has " + std::to_string(v[i]->size()) +
                                  " entries, not one per process (" + std::to_string(p) + ")";
  // Any argument error here: NULL arrays, which bspk_alltoallv refuses collectively.
  const bool bad = !detail::local_arg_error().empty();
  const std::size_t* a[4];
  for (int i = 0; i < 4; i++) a[i] = bad ? nullptr : v[i]->data();
  detail::check_coll(bspk_alltoallv(d.p, a[0], a[1], s.p, a[2], a[3]), "bspk_alltoallv", step, "bspk::alltoallv");
}

// ---- one value ------------------------------------------------------------------
// The value forms put x in a one-element region of this call (bspk_malloc)
// and return the result; their supersteps and errors are the region forms'.
// T must be trivially copyable (a static_assert says so, naming these forms).

/* The root's x, on every process. */
template <class T>
detail::coll_value<T> broadcast(runtime& rt, const T& x, int root) {
  return detail::through_region(rt, x, [&](region<T>& r) { broadcast(rt, r, root); });
}
/* x_0 op ... op x_{p-1} at the root; x elsewhere. */
template <class T, class Op>
detail::coll_value<T> reduce(runtime& rt, const T& x, Op op, int root) {
  return detail::through_region(rt, x, [&](region<T>& r) { reduce(rt, r, op, root); });
}
/* x_0 op ... op x_{p-1}, on every process. */
template <class T, class Op>
detail::coll_value<T> allreduce(runtime& rt, const T& x, Op op) {
  return detail::through_region(rt, x, [&](region<T>& r) { allreduce(rt, r, op); });
}
/* x_0 op ... op x_i on pid i. */
template <class T, class Op>
detail::coll_value<T> scan(runtime& rt, const T& x, Op op) {
  return detail::through_region(rt, x, [&](region<T>& r) { scan(rt, r, op); });
}
/* x_0 op ... op x_{i-1} on pid i >= 1; x itself on pid 0. */
template <class T, class Op>
detail::coll_value<T> exscan(runtime& rt, const T& x, Op op) {
  return detail::through_region(rt, x, [&](region<T>& r) { exscan(rt, r, op); });
}
/* Every pid's x, in pid order, at the root; an empty vector elsewhere. */
template <class T, class = detail::coll_value<T>>
std::vector<T> gather(runtime& rt, const T& x, int root) {
  detail::check_value<T>();
  region<T> s(rt, 1);
  s[0] = x;
  const bool at_root = root == rt.pid();
  region<T> d = at_root ? region<T>(rt, static_cast<std::size_t>(rt.nprocs())) : region<T>();
  gather(rt, d, s, root);
  std::vector<T> out;
  if (at_root) {
    out.resize(d.size(), x);
    d.copy_to(out.data());
  }
  return out;
}
/* Every pid's x, in pid order, on every process. */
template <class T, class = detail::coll_value<T>>
std::vector<T> allgather(runtime& rt, const T& x) {
  detail::check_value<T>();
  region<T> s(rt, 1);
  s[0] = x;
  region<T> d(rt, static_cast<std::size_t>(rt.nprocs()));
  allgather(rt, d, s);
  std::vector<T> out(d.size(), x);
  d.copy_to(out.data());
  return out;
}

}  // namespace bspk

#endif  // BSPK_COLL_HPP
