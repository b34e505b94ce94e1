/* bsplib/mcbsp-templates.hpp -- MulticoreBSP for C's C++ templates over
 * BSPk's BSPlib layer: the communication calls with offsets and sizes in
 * ELEMENTS of the typed pointer's type instead of bytes, so that C++ programs
 * written for MulticoreBSP (which include mcbsp-templates.hpp next to
 * mcbsp.hpp) build unchanged with bspcxx.
 *
 * With this header, a call whose registered / destination / source pointer
 * is typed (T *, T not void) takes element counts:
 *
 *   bsp_push_reg(T *a, n = 1)                    registers n * sizeof(T) bytes
 *   bsp_put(pid, const void *src, T *dst, off = 0, n = 1)    dst[off .. off+n)
 *   bsp_hpput(pid, const void *src, T *dst, off = 0, n = 1)
 *   bsp_get(pid, const T *src, off, void *dst, n = 1)        src[off .. off+n)
 *   bsp_hpget(pid, const T *src, off, void *dst, n)
 *   bsp_direct_get(pid, const T *src, off, void *dst, n = 1)
 *   bsp_send(pid, const void *tag, const T *payload, n = 1)
 *   bsp_hpsend(pid, const void *tag, const T *payload, n = 1)
 *   bsp_move(T *payload, n = 1)                  copies at most n elements
 *   bsp_set_tagsize<T>() / bsp_set_tagsize(const T &tag)
 *                                                tag size sizeof(T); returns
 *                                                the size requested before
 *
 * as in MulticoreBSP: including the header changes the meaning of such calls
 * (bsp_put(pid, &x, arr, 2, 1) puts one element at arr[2]); calls whose
 * pointer is void * (or NULL) keep BSPlib's bytes, and bsp_set_tagsize(&n) of
 * an integer stays the standard call (bsp.h). Everything else is bsp.h's:
 * semantics, checks and errors. A count that is negative or whose bytes do
 * not fit the BSPlib size type (int, bsp.h) ends the job with a message
 * naming the call, the process and the superstep. There is no templated
 * bsp_hpmove (nor in MulticoreBSP). C++98 and later. */
#ifndef BSPK_MCBSP_TEMPLATES_HPP
#define BSPK_MCBSP_TEMPLATES_HPP

#include <climits>
#include <cstddef>
#include <limits>

#include "mcbsp.hpp"

/* Implementation details (names kept out of a program's way). */
namespace bspk_mcbsp_ {

/* Bytes per element: sizeof, 1 for void (byte counts, as in C). */
template <class bspk_e_>
struct unit {
  static const size_t bytes = sizeof(bspk_e_);
};
template <>
struct unit<void> {
  static const size_t bytes = 1;
};
template <>
struct unit<const void> {
  static const size_t bytes = 1;
};
template <>
struct unit<volatile void> {
  static const size_t bytes = 1;
};
template <>
struct unit<const volatile void> {
  static const size_t bytes = 1;
};

/* The result type R when bspk_i_ is an integer type (else no overload). */
template <bool bspk_ok_, class bspk_r_>
struct if_ {};
template <class bspk_r_>
struct if_<true, bspk_r_> {
  typedef bspk_r_ type;
};
template <class bspk_i_, class bspk_r_ = void>
struct count : if_<std::numeric_limits<bspk_i_>::is_integer, bspk_r_> {};
template <class bspk_i_, class bspk_j_, class bspk_r_ = void>
struct counts
    : if_<std::numeric_limits<bspk_i_>::is_integer && std::numeric_limits<bspk_j_>::is_integer, bspk_r_> {};

/* A type that is not a pointer (bsp_set_tagsize(const T &)). */
template <class bspk_t_, class bspk_r_>
struct not_pointer {
  typedef bspk_r_ type;
};
template <class bspk_t_, class bspk_r_>
struct not_pointer<bspk_t_ *, bspk_r_> {};

/* n elements of bspk_e_ in bytes, as bsp.h's size type. */
template <class bspk_e_, class bspk_i_>
inline bsp_size_t bytes(const bspk_i_ n, const char *fn) {
  const size_t u = unit<bspk_e_>::bytes;
  if (n > 0) {
    const unsigned long m = static_cast<unsigned long>(n);
    if (m > static_cast<unsigned long>(INT_MAX) / u) bspk_bsp_elements_error(fn, 0, m, u);
    return static_cast<bsp_size_t>(m * u);
  }
  if (n == 0) return 0;
  bspk_bsp_elements_error(fn, 1, 0UL - static_cast<unsigned long>(n), u);
}

}  // namespace bspk_mcbsp_

template <class bspk_t_>
inline void bsp_push_reg(bspk_t_ *const address) {
  bsp_push_reg(static_cast<const void *>(address), bspk_mcbsp_::bytes<bspk_t_>(1, "bsp_push_reg"));
}
template <class bspk_t_, class bspk_n_>
inline typename bspk_mcbsp_::count<bspk_n_>::type bsp_push_reg(bspk_t_ *const address, const bspk_n_ size) {
  bsp_push_reg(static_cast<const void *>(address), bspk_mcbsp_::bytes<bspk_t_>(size, "bsp_push_reg"));
}

/* The tag size becomes sizeof(T) at the next sync; returns the size the
 * previous call in this superstep asked for (or the one in force). */
template <class bspk_t_>
inline typename bspk_mcbsp_::not_pointer<bspk_t_, bsp_size_t>::type bsp_set_tagsize(const bspk_t_ &tag_type = bspk_t_()) {
  (void)tag_type;
  bsp_size_t size = static_cast<bsp_size_t>(sizeof(bspk_t_));
  bsp_set_tagsize(&size);
  return size;
}

template <class bspk_t_>
inline void bsp_put(const bsp_pid_t pid, const void *const source, bspk_t_ *const destination) {
  bsp_put(pid, source, const_cast<void *>(static_cast<const void *>(destination)), 0, bspk_mcbsp_::bytes<bspk_t_>(1, "bsp_put"));
}
template <class bspk_t_, class bspk_o_>
inline typename bspk_mcbsp_::count<bspk_o_>::type bsp_put(const bsp_pid_t pid, const void *const source,
                                                           bspk_t_ *const destination, const bspk_o_ offset) {
  bsp_put(pid, source, const_cast<void *>(static_cast<const void *>(destination)), bspk_mcbsp_::bytes<bspk_t_>(offset, "bsp_put"),
          bspk_mcbsp_::bytes<bspk_t_>(1, "bsp_put"));
}
template <class bspk_t_, class bspk_o_, class bspk_n_>
inline typename bspk_mcbsp_::counts<bspk_o_, bspk_n_>::type bsp_put(const bsp_pid_t pid, const void *const source,
                                                                     bspk_t_ *const destination,
                                                                     const bspk_o_ offset, const bspk_n_ size) {
  bsp_put(pid, source, const_cast<void *>(static_cast<const void *>(destination)), bspk_mcbsp_::bytes<bspk_t_>(offset, "bsp_put"),
          bspk_mcbsp_::bytes<bspk_t_>(size, "bsp_put"));
}

template <class bspk_t_>
inline void bsp_hpput(const bsp_pid_t pid, const void *const source, bspk_t_ *const destination) {
  bsp_hpput(pid, source, const_cast<void *>(static_cast<const void *>(destination)), 0,
            bspk_mcbsp_::bytes<bspk_t_>(1, "bsp_hpput"));
}
template <class bspk_t_, class bspk_o_>
inline typename bspk_mcbsp_::count<bspk_o_>::type bsp_hpput(const bsp_pid_t pid, const void *const source,
                                                             bspk_t_ *const destination, const bspk_o_ offset) {
  bsp_hpput(pid, source, const_cast<void *>(static_cast<const void *>(destination)),
            bspk_mcbsp_::bytes<bspk_t_>(offset, "bsp_hpput"), bspk_mcbsp_::bytes<bspk_t_>(1, "bsp_hpput"));
}
template <class bspk_t_, class bspk_o_, class bspk_n_>
inline typename bspk_mcbsp_::counts<bspk_o_, bspk_n_>::type bsp_hpput(const bsp_pid_t pid, const void *const source,
                                                                       bspk_t_ *const destination,
                                                                       const bspk_o_ offset, const bspk_n_ size) {
  bsp_hpput(pid, source, const_cast<void *>(static_cast<const void *>(destination)),
            bspk_mcbsp_::bytes<bspk_t_>(offset, "bsp_hpput"), bspk_mcbsp_::bytes<bspk_t_>(size, "bsp_hpput"));
}

template <class bspk_t_, class bspk_o_>
inline typename bspk_mcbsp_::count<bspk_o_>::type bsp_get(const bsp_pid_t pid, const bspk_t_ *const source,
                                                           const bspk_o_ offset, void *const destination) {
  bsp_get(pid, static_cast<const void *>(source), bspk_mcbsp_::bytes<bspk_t_>(offset, "bsp_get"), destination,
          bspk_mcbsp_::bytes<bspk_t_>(1, "bsp_get"));
}
template <class bspk_t_, class bspk_o_, class bspk_n_>
inline typename bspk_mcbsp_::counts<bspk_o_, bspk_n_>::type bsp_get(const bsp_pid_t pid, const bspk_t_ *const source,
                                                                     const bspk_o_ offset, void *const destination,
                                                                     const bspk_n_ size) {
  bsp_get(pid, static_cast<const void *>(source), bspk_mcbsp_::bytes<bspk_t_>(offset, "bsp_get"), destination,
          bspk_mcbsp_::bytes<bspk_t_>(size, "bsp_get"));
}

template <class bspk_t_, class bspk_o_, class bspk_n_>
inline typename bspk_mcbsp_::counts<bspk_o_, bspk_n_>::type bsp_hpget(const bsp_pid_t pid, const bspk_t_ *const source,
                                                                       const bspk_o_ offset, void *const destination,
                                                                       const bspk_n_ size) {
  bsp_hpget(pid, static_cast<const void *>(source), bspk_mcbsp_::bytes<bspk_t_>(offset, "bsp_hpget"), destination,
            bspk_mcbsp_::bytes<bspk_t_>(size, "bsp_hpget"));
}

template <class bspk_t_, class bspk_o_>
inline typename bspk_mcbsp_::count<bspk_o_>::type bsp_direct_get(const bsp_pid_t pid, const bspk_t_ *const source,
                                                                  const bspk_o_ offset, void *const destination) {
  bsp_direct_get(pid, static_cast<const void *>(source), bspk_mcbsp_::bytes<bspk_t_>(offset, "bsp_direct_get"),
                 destination, bspk_mcbsp_::bytes<bspk_t_>(1, "bsp_direct_get"));
}
template <class bspk_t_, class bspk_o_, class bspk_n_>
inline typename bspk_mcbsp_::counts<bspk_o_, bspk_n_>::type bsp_direct_get(const bsp_pid_t pid,
                                                                            const bspk_t_ *const source,
                                                                            const bspk_o_ offset,
                                                                            void *const destination,
                                                                            const bspk_n_ size) {
  bsp_direct_get(pid, static_cast<const void *>(source), bspk_mcbsp_::bytes<bspk_t_>(offset, "bsp_direct_get"),
                 destination, bspk_mcbsp_::bytes<bspk_t_>(size, "bsp_direct_get"));
}

template <class bspk_t_>
inline void bsp_send(const bsp_pid_t pid, const void *const tag, const bspk_t_ *const payload) {
  bsp_send(pid, tag, static_cast<const void *>(payload), bspk_mcbsp_::bytes<bspk_t_>(1, "bsp_send"));
}
template <class bspk_t_, class bspk_n_>
inline typename bspk_mcbsp_::count<bspk_n_>::type bsp_send(const bsp_pid_t pid, const void *const tag,
                                                            const bspk_t_ *const payload, const bspk_n_ size) {
  bsp_send(pid, tag, static_cast<const void *>(payload), bspk_mcbsp_::bytes<bspk_t_>(size, "bsp_send"));
}

template <class bspk_t_>
inline void bsp_hpsend(const bsp_pid_t pid, const void *const tag, const bspk_t_ *const payload) {
  bsp_hpsend(pid, tag, static_cast<const void *>(payload), bspk_mcbsp_::bytes<bspk_t_>(1, "bsp_hpsend"));
}
template <class bspk_t_, class bspk_n_>
inline typename bspk_mcbsp_::count<bspk_n_>::type bsp_hpsend(const bsp_pid_t pid, const void *const tag,
                                                              const bspk_t_ *const payload, const bspk_n_ size) {
  bsp_hpsend(pid, tag, static_cast<const void *>(payload), bspk_mcbsp_::bytes<bspk_t_>(size, "bsp_hpsend"));
}

template <class bspk_t_>
inline void bsp_move(bspk_t_ *const payload) {
  bsp_move(const_cast<void *>(static_cast<const void *>(payload)), bspk_mcbsp_::bytes<bspk_t_>(1, "bsp_move"));
}
template <class bspk_t_, class bspk_n_>
inline typename bspk_mcbsp_::count<bspk_n_>::type bsp_move(bspk_t_ *const payload, const bspk_n_ max_copy_size) {
  bsp_move(const_cast<void *>(static_cast<const void *>(payload)), bspk_mcbsp_::bytes<bspk_t_>(max_copy_size, "bsp_move"));
}

#endif /* BSPK_MCBSP_TEMPLATES_HPP */
