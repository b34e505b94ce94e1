/*
 * bsp_level1.h -- the Oxford BSP toolset's "level 1" library (bsp_level1(3):
 * collective operations built on the BSPlib core), for programs written for
 * it that include this header next to <bsp.h>.
 *
 * Every function here is collective: all processes of the SPMD section call
 * it, in the same order, with the same pid (root) and the same nbytes; each
 * call ends the current superstep like bsp_sync (what the superstep's puts,
 * gets and messages do takes effect, and the BSMP queue afterwards holds the
 * messages sent before the call). Different nbytes, roots or operations
 * between processes are reported as an error naming both processes (the job
 * ends as on bsp_abort); when the larger nbytes needs a larger scratch
 * (below) than the smaller, the error is the core's: the processes differ
 * in their bsp_push_reg calls at that bsp_sync.
 *
 * Beyond the Oxford library, no buffer needs to be registered: src and dst
 * may be any memory (the toolset required dst, and for bsp_scatter src, to
 * be registered). The data travel through a scratch registration of the
 * library's own, pushed by the first level-1 call of the program and again
 * by a call with more bytes than any before it: such a call takes one more
 * superstep (the registration takes effect at a bsp_sync), so the BSMP
 * messages sent before it are gone when it returns, and it counts as a
 * bsp_push_reg in the registration errors of that superstep.
 *
 * A bspk_expect / bspk_will_send declaration must not be pending when a
 * level-1 function is called (its superstep is counted): an error says so.
 *
 * Costs (BSP, n = nbytes, p processes): bsp_fold, bsp_scan, bsp_constantI,
 * the sum/product/min/max/all/any functions and the sort functions: one
 * superstep with an h-relation of (p-1) n bytes at every process (a total
 * exchange), then p-1 applications of op (bsp_fold) or up to pid of them
 * (bsp_scan) locally; bsp_bcast: one superstep, h = (p-1) n at the root;
 * bsp_gather, bsp_scatter: one superstep, h = (p-1) n at the root.
 */
#ifndef BSPK_BSP_LEVEL1_H
#define BSPK_BSP_LEVEL1_H

#include "bsp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reduction in pid order: dst = src(0) op src(1) op ... op src(p-1) on every
 * process, op(res, left, right, &nbytes) writing left op right into res (op
 * must be associative; it need not be commutative). dst and src may be the
 * same. */
BSPK_BSP_API void bsp_fold(void (*op)(void *, void *, void *, int *), void *src, void *dst, int nbytes);
/* The same; lineno and filename name the call in error messages (the
 * toolset's bsp_fold macro passed __LINE__ and __FILE__). */
BSPK_BSP_API void bsp_fold_cpp(void (*op)(void *, void *, void *, int *), void *src, void *dst, int nbytes, int lineno,
                  char *filename);
/* Inclusive prefix in pid order: dst on process k = src(0) op ... op src(k). */
BSPK_BSP_API void bsp_scan(void (*op)(void *, void *, void *, int *), void *src, void *dst, int nbytes);

/* nbytes from src on process pid into dst on every process (pid included). */
BSPK_BSP_API void bsp_bcast(int pid, void *src, void *dst, int nbytes);
BSPK_BSP_API void bsp_bcast_cpp(int pid, void *src, void *dst, int nbytes, int lineno, char *filename);
/* In place, as in P. Krusche's BSPonMPI fork (2012, bsp_broadcast.h):
 * nbytes at ptr on pid to ptr everywhere. */
BSPK_BSP_API void bsp_broadcast(int pid, void *ptr, int nbytes);
/* nbytes from src on every process k into dst + k * nbytes on process pid
 * (dst holds p * nbytes there; other processes' dst is not touched). */
BSPK_BSP_API void bsp_gather(int pid, void *src, void *dst, int nbytes);
/* src + k * nbytes on process pid (p * nbytes there) into dst on process k. */
BSPK_BSP_API void bsp_scatter(int pid, void *src, void *dst, int nbytes);

/* 1 if every process passed the same x, else 0. */
BSPK_BSP_API int bsp_constantI(int x);
/* Logical and / or of x over the processes (1 or 0), and their prefixes. */
BSPK_BSP_API int bsp_all(int x);
BSPK_BSP_API int bsp_any(int x);
BSPK_BSP_API int bsp_all_prefix(int x);
BSPK_BSP_API int bsp_any_prefix(int x);
/* Sum, product, minimum and maximum of x over the processes (folded in pid
 * order), and the inclusive prefix (processes 0..pid) with _prefix. */
BSPK_BSP_API int bsp_sumI(int x);
BSPK_BSP_API float bsp_sumR(float x);
BSPK_BSP_API double bsp_sumD(double x);
BSPK_BSP_API int bsp_sumI_prefix(int x);
BSPK_BSP_API float bsp_sumR_prefix(float x);
BSPK_BSP_API double bsp_sumD_prefix(double x);
BSPK_BSP_API int bsp_productI(int x);
BSPK_BSP_API float bsp_productR(float x);
BSPK_BSP_API double bsp_productD(double x);
BSPK_BSP_API int bsp_productI_prefix(int x);
BSPK_BSP_API float bsp_productR_prefix(float x);
BSPK_BSP_API double bsp_productD_prefix(double x);
BSPK_BSP_API int bsp_minI(int x);
BSPK_BSP_API float bsp_minR(float x);
BSPK_BSP_API double bsp_minD(double x);
BSPK_BSP_API int bsp_minI_prefix(int x);
BSPK_BSP_API float bsp_minR_prefix(float x);
BSPK_BSP_API double bsp_minD_prefix(double x);
BSPK_BSP_API int bsp_maxI(int x);
BSPK_BSP_API float bsp_maxR(float x);
BSPK_BSP_API double bsp_maxD(double x);
BSPK_BSP_API int bsp_maxI_prefix(int x);
BSPK_BSP_API float bsp_maxR_prefix(float x);
BSPK_BSP_API double bsp_maxD_prefix(double x);
/* The pid-th smallest of the values the processes passed (stable: equal
 * values keep pid order). */
BSPK_BSP_API int bsp_sortI(int x);
BSPK_BSP_API float bsp_sortR(float x);
BSPK_BSP_API double bsp_sortD(double x);
BSPK_BSP_API char bsp_sortC(char x);
/* The same for any element type: lt(a, b, &nbytes) non-zero when a sorts
 * before b; dst on process k gets the k-th element. */
BSPK_BSP_API void bsp_sort(int (*lt)(void *, void *, int *), void *src, void *dst, int nbytes);

#ifdef __cplusplus
}
#endif

#endif /* BSPK_BSP_LEVEL1_H */
