// bsplib/level1.cpp -- the Oxford toolset's level-1 collectives
// (bsp_level1.h) on the BSPlib core: bsp_put into a scratch registration of
// this file's own, one bsp_sync, then local work. It knows only bsp.h (and
// bspk.h's bspk_declared, to refuse a pending declaration).
//
// Scratch: p slots per process, slot k holding what process k sent for the
// current call: a Stamp (which call, nbytes, root, the sender's count of
// level-1 calls) and the data. Every process checks the stamps it reads
// against its own arguments, so a process that called another operation,
// passed another nbytes or root, or skipped a call is reported by pid (a
// stale slot has an old call count) instead of yielding garbage.
#include "bsplib/bsp_level1.h"

#include <bspk.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

// A call's operation in its stamp: a hash of the function's name (bsp_sumI
// and bsp_maxI move the same bytes; a process calling one while another calls
// the other is an error too).
uint32_t op_code(const char* fn) {
  uint32_t h = 2166136261u;
  for (const char* c = fn; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 16777619u;
  return h;
}

struct Stamp {
  uint32_t op;
  int32_t nbytes;
  int32_t root;
  uint32_t call;  // the sender's level-1 calls so far, this one included
};
static_assert(sizeof(Stamp) == 16, "stamp layout");

struct Scratch {
  char* buf = nullptr;  // p slots of `slot` bytes, registered
  size_t slot = 0;      // bytes per slot: a Stamp and up to slot - 16 data bytes
  uint32_t calls = 0;
} S;

char* slot_of(int k) { return S.buf + static_cast<size_t>(k) * S.slot; }
char* data_of(int k) { return slot_of(k) + sizeof(Stamp); }

// Checks common to every call; makes the scratch hold nbytes per process
// (a new registration and one bsp_sync when it does not yet) and counts the
// call (its stamps carry the count).
void begin(const char* fn, int nbytes, int root, bool rooted) {
  const int p = bsp_nprocs();
  if (nbytes < 0) bsp_abort("%s: negative size %d (process %d)\n", fn, nbytes, bsp_pid());
  if (rooted && (root < 0 || root >= p))
    bsp_abort("%s: root pid %d is out of range [0, %d) (process %d)\n", fn, root, p, bsp_pid());
  if (bspk_declared() != 0)
    bsp_abort("%s: a bspk_expect / bspk_will_send declaration is pending on process %d; level-1 operations end the "
              "superstep with a counted bsp_sync (declare after them)\n",
              fn, bsp_pid());
  const size_t need = sizeof(Stamp) + ((static_cast<size_t>(nbytes) + 15) & ~static_cast<size_t>(15));
  ++S.calls;
  if (S.buf && need <= S.slot) return;
  // Every process grows at the same call (nbytes must agree; if it does not,
  // the registration counts differ at this sync and the core says so).
  const size_t slot = std::max<size_t>(need, std::max<size_t>(64, 2 * S.slot));
  const size_t bytes = slot * static_cast<size_t>(p);
  if (bytes > static_cast<size_t>(INT32_MAX))
    bsp_abort("%s: %d bytes per process need a %zu-byte scratch buffer, more than a registration may hold\n", fn,
              nbytes, bytes);
  char* buf = static_cast<char*>(std::calloc(bytes, 1));
  if (!buf) bsp_abort("%s: cannot allocate %zu bytes of scratch on process %d\n", fn, bytes, bsp_pid());
  bsp_push_reg(buf, static_cast<bsp_size_t>(bytes));
  if (S.buf) bsp_pop_reg(S.buf);
  bsp_sync();
  std::free(S.buf);
  S.buf = buf;
  S.slot = slot;
}

// A buffer the call reads or writes on this process: NULL is an error (with
// nbytes > 0), reported like the core's bad arguments rather than a crash.
void need_ptr(const char* fn, const void* ptr, const char* name, int nbytes) {
  if (!ptr && nbytes > 0) bsp_abort("%s: %s is NULL on process %d (with nbytes %d)\n", fn, name, bsp_pid(), nbytes);
}

// Puts this process's stamp into slot `me` of process dst.
void send_stamp(int dst, uint32_t op, int nbytes, int root) {
  const Stamp st{op, nbytes, root, S.calls};
  bsp_put(dst, &st, S.buf, static_cast<bsp_size_t>(static_cast<size_t>(bsp_pid()) * S.slot), sizeof st);
}

// ... and nbytes of data from src after it.
void send_data(int dst, const void* src, int nbytes) {
  if (nbytes > 0)
    bsp_put(dst, src, S.buf, static_cast<bsp_size_t>(static_cast<size_t>(bsp_pid()) * S.slot + sizeof(Stamp)),
            nbytes);
}

// Puts this process's stamp and data (nbytes from src) into slot `me` of process dst.
void send_to(int dst, uint32_t op, const void* src, int nbytes, int root) {
  send_stamp(dst, op, nbytes, root);
  send_data(dst, src, nbytes);
}

// After the sync: slot k must hold this call's stamp from process k.
void expect_from(const char* fn, int k, uint32_t op, int nbytes, int root) {
  Stamp st;
  std::memcpy(&st, slot_of(k), sizeof st);
  const int me = bsp_pid();
  if (st.call != S.calls)
    bsp_abort("%s: process %d made its level-1 call number %u here, process %d sent nothing for it (did it call a "
              "level-1 operation at this point?)\n",
              fn, me, S.calls, k);
  if (st.op != op)
    bsp_abort("%s: process %d called %s at this point, process %d another level-1 operation (level-1 operations are "
              "collective: every process calls the same one)\n",
              fn, me, fn, k);
  if (st.nbytes != nbytes)
    bsp_abort("%s: process %d passed nbytes %d, process %d passed %d (it must be the same everywhere)\n", fn, me,
              nbytes, k, st.nbytes);
  if (st.root != root)
    bsp_abort("%s: process %d passed root pid %d, process %d passed %d (it must be the same everywhere)\n", fn, me,
              root, k, st.root);
}

// Every process's nbytes from src, in slots 0..p-1 (checked).
void gather_all(const char* fn, const void* src, int nbytes) {
  const uint32_t op = op_code(fn);
  begin(fn, nbytes, 0, false);
  const int p = bsp_nprocs();
  for (int k = 0; k < p; ++k) send_to(k, op, src, nbytes, 0);
  bsp_sync();
  for (int k = 0; k < p; ++k) expect_from(fn, k, op, nbytes, 0);
}

// res = data(0) op data(1) ... op data(last), in slot order (left fold; the
// slots are overwritten with the partial results).
void fold_slots(void (*op)(void*, void*, void*, int*), int last, void* res, int nbytes) {
  if (last == 0) {
    std::memmove(res, data_of(0), static_cast<size_t>(nbytes));
    return;
  }
  for (int k = 0; k < last; ++k) {
    int n = nbytes;
    op(res, data_of(k), data_of(k + 1), &n);
    std::memcpy(data_of(k + 1), res, static_cast<size_t>(nbytes));
  }
}

void fold_common(const char* fn, void (*op)(void*, void*, void*, int*), void* src, void* dst, int nbytes, bool prefix) {
  if (!op) bsp_abort("%s: the operator is NULL (process %d)\n", fn, bsp_pid());
  need_ptr(fn, src, "src", nbytes);
  need_ptr(fn, dst, "dst", nbytes);
  gather_all(fn, src, nbytes);
  fold_slots(op, prefix ? bsp_pid() : bsp_nprocs() - 1, dst, nbytes);
}

// The typed functions' operators: res = F(x, y) on elements of type T
// (memcpy: the slots need not be aligned for T).
struct Min { template <class T> T operator()(T a, T b) const { return b < a ? b : a; } };
struct Max { template <class T> T operator()(T a, T b) const { return a < b ? b : a; } };
struct Add { template <class T> T operator()(T a, T b) const { return a + b; } };
struct Mul { template <class T> T operator()(T a, T b) const { return a * b; } };
struct And { int operator()(int a, int b) const { return a && b; } };
struct Or { int operator()(int a, int b) const { return a || b; } };
template <class T, class F>
void typed_op(void* res, void* x, void* y, int*) {
  T a, b;
  std::memcpy(&a, x, sizeof a);
  std::memcpy(&b, y, sizeof b);
  const T c = F{}(a, b);
  std::memcpy(res, &c, sizeof c);
}

template <class T>
T reduce(const char* fn, void (*op)(void*, void*, void*, int*), T x, bool prefix) {
  T r{};
  fold_common(fn, op, &x, &r, static_cast<int>(sizeof x), prefix);
  return r;
}

// dst = the pid-th element of all processes' src in lt order (stable: pid
// order among equal ones).
void sort_common(const char* fn, int (*lt)(void*, void*, int*), void* src, void* dst, int nbytes) {
  if (!lt) bsp_abort("%s: the comparison is NULL (process %d)\n", fn, bsp_pid());
  need_ptr(fn, src, "src", nbytes);
  need_ptr(fn, dst, "dst", nbytes);
  gather_all(fn, src, nbytes);
  std::vector<int> order(static_cast<size_t>(bsp_nprocs()));
  for (size_t k = 0; k < order.size(); ++k) order[k] = static_cast<int>(k);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    int n = nbytes;
    return lt(data_of(a), data_of(b), &n) != 0;
  });
  std::memmove(dst, data_of(order[static_cast<size_t>(bsp_pid())]), static_cast<size_t>(nbytes));
}

template <class T>
int less(void* x, void* y, int*) {
  T a, b;
  std::memcpy(&a, x, sizeof a);
  std::memcpy(&b, y, sizeof b);
  return a < b;
}

template <class T>
T sort_one(const char* fn, T x) {
  T r{};
  sort_common(fn, less<T>, &x, &r, static_cast<int>(sizeof x));
  return r;
}

// bsp_bcast (stride 0: the root's nbytes to every process) and bsp_scatter
// (stride nbytes: process k gets the root's k-th block): src + k * stride
// on process pid into dst on every process k.
void from_root(const char* fn, int pid, const void* src, size_t stride, void* dst, int nbytes) {
  const int me = bsp_pid();
  if (me == pid) need_ptr(fn, src, "src", nbytes);
  need_ptr(fn, dst, "dst", nbytes);
  begin(fn, nbytes, pid, true);
  const uint32_t op = op_code(fn);
  // Every process's stamp to every process (the root's with the data), and
  // every process checks all of them: with the root's alone, processes that
  // named different roots each read "their" root's data and went on with
  // different results (until 2026-12-07).
  const int p = bsp_nprocs();
  for (int k = 0; k < p; ++k) {
    send_stamp(k, op, nbytes, pid);
    if (me == pid) send_data(k, static_cast<const char*>(src) + static_cast<size_t>(k) * stride, nbytes);
  }
  bsp_sync();
  for (int k = 0; k < p; ++k) expect_from(fn, k, op, nbytes, pid);
  std::memmove(dst, data_of(pid), static_cast<size_t>(nbytes));
}

}  // namespace

extern "C" {

void bsp_fold(void (*op)(void*, void*, void*, int*), void* src, void* dst, int nbytes) {
  fold_common("bsp_fold", op, src, dst, nbytes, false);
}
void bsp_fold_cpp(void (*op)(void*, void*, void*, int*), void* src, void* dst, int nbytes, int, char*) {
  bsp_fold(op, src, dst, nbytes);
}
void bsp_scan(void (*op)(void*, void*, void*, int*), void* src, void* dst, int nbytes) {
  fold_common("bsp_scan", op, src, dst, nbytes, true);
}

void bsp_bcast(int pid, void* src, void* dst, int nbytes) { from_root("bsp_bcast", pid, src, 0, dst, nbytes); }
void bsp_bcast_cpp(int pid, void* src, void* dst, int nbytes, int, char*) { bsp_bcast(pid, src, dst, nbytes); }
void bsp_broadcast(int pid, void* ptr, int nbytes) { bsp_bcast(pid, ptr, ptr, nbytes); }
void bsp_scatter(int pid, void* src, void* dst, int nbytes) {
  from_root("bsp_scatter", pid, src, nbytes < 0 ? 0 : static_cast<size_t>(nbytes), dst, nbytes);
}

void bsp_gather(int pid, void* src, void* dst, int nbytes) {
  const char* fn = "bsp_gather";
  const int p = bsp_nprocs(), me = bsp_pid();
  need_ptr(fn, src, "src", nbytes);
  if (me == pid) need_ptr(fn, dst, "dst", nbytes);
  begin(fn, nbytes, pid, true);
  const uint32_t op = op_code(fn);
  for (int k = 0; k < p; ++k) send_stamp(k, op, nbytes, pid);  // (checked everywhere, as in from_root)
  send_data(pid, src, nbytes);
  bsp_sync();
  for (int k = 0; k < p; ++k) expect_from(fn, k, op, nbytes, pid);
  if (me != pid) return;
  for (int k = 0; k < p; ++k)
    std::memmove(static_cast<char*>(dst) + static_cast<size_t>(k) * static_cast<size_t>(nbytes), data_of(k),
                 static_cast<size_t>(nbytes));
}

int bsp_constantI(int x) {
  gather_all("bsp_constantI", &x, static_cast<int>(sizeof x));
  for (int k = 0; k < bsp_nprocs(); ++k)
    if (std::memcmp(data_of(k), &x, sizeof x) != 0) return 0;
  return 1;
}
int bsp_all(int x) { return reduce("bsp_all", typed_op<int, And>, x, false); }
int bsp_any(int x) { return reduce("bsp_any", typed_op<int, Or>, x, false); }
int bsp_all_prefix(int x) { return reduce("bsp_all_prefix", typed_op<int, And>, x, true); }
int bsp_any_prefix(int x) { return reduce("bsp_any_prefix", typed_op<int, Or>, x, true); }

int bsp_sumI(int x) { return reduce("bsp_sumI", typed_op<int, Add>, x, false); }
float bsp_sumR(float x) { return reduce("bsp_sumR", typed_op<float, Add>, x, false); }
double bsp_sumD(double x) { return reduce("bsp_sumD", typed_op<double, Add>, x, false); }
int bsp_sumI_prefix(int x) { return reduce("bsp_sumI_prefix", typed_op<int, Add>, x, true); }
float bsp_sumR_prefix(float x) { return reduce("bsp_sumR_prefix", typed_op<float, Add>, x, true); }
double bsp_sumD_prefix(double x) { return reduce("bsp_sumD_prefix", typed_op<double, Add>, x, true); }
int bsp_productI(int x) { return reduce("bsp_productI", typed_op<int, Mul>, x, false); }
float bsp_productR(float x) { return reduce("bsp_productR", typed_op<float, Mul>, x, false); }
double bsp_productD(double x) { return reduce("bsp_productD", typed_op<double, Mul>, x, false); }
int bsp_productI_prefix(int x) { return reduce("bsp_productI_prefix", typed_op<int, Mul>, x, true); }
float bsp_productR_prefix(float x) { return reduce("bsp_productR_prefix", typed_op<float, Mul>, x, true); }
double bsp_productD_prefix(double x) { return reduce("bsp_productD_prefix", typed_op<double, Mul>, x, true); }
int bsp_minI(int x) { return reduce("bsp_minI", typed_op<int, Min>, x, false); }
float bsp_minR(float x) { return reduce("bsp_minR", typed_op<float, Min>, x, false); }
double bsp_minD(double x) { return reduce("bsp_minD", typed_op<double, Min>, x, false); }
int bsp_minI_prefix(int x) { return reduce("bsp_minI_prefix", typed_op<int, Min>, x, true); }
float bsp_minR_prefix(float x) { return reduce("bsp_minR_prefix", typed_op<float, Min>, x, true); }
double bsp_minD_prefix(double x) { return reduce("bsp_minD_prefix", typed_op<double, Min>, x, true); }
int bsp_maxI(int x) { return reduce("bsp_maxI", typed_op<int, Max>, x, false); }
float bsp_maxR(float x) { return reduce("bsp_maxR", typed_op<float, Max>, x, false); }
double bsp_maxD(double x) { return reduce("bsp_maxD", typed_op<double, Max>, x, false); }
int bsp_maxI_prefix(int x) { return reduce("bsp_maxI_prefix", typed_op<int, Max>, x, true); }
float bsp_maxR_prefix(float x) { return reduce("bsp_maxR_prefix", typed_op<float, Max>, x, true); }
double bsp_maxD_prefix(double x) { return reduce("bsp_maxD_prefix", typed_op<double, Max>, x, true); }

int bsp_sortI(int x) { return sort_one("bsp_sortI", x); }
float bsp_sortR(float x) { return sort_one("bsp_sortR", x); }
double bsp_sortD(double x) { return sort_one("bsp_sortD", x); }
char bsp_sortC(char x) { return sort_one("bsp_sortC", x); }

void bsp_sort(int (*lt)(void*, void*, int*), void* src, void* dst, int nbytes) {
  sort_common("bsp_sort", lt, src, dst, nbytes);
}

}  // extern "C"
