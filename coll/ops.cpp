// coll/ops.cpp -- built-in combining operations and the user-op table.
#include "coll/ops.h"

#include <cstring>
#include <vector>

#include "coll/report.h"

namespace bspk_coll {
namespace {

struct UserEntry {
  bspk_combine_fn fn = nullptr;
  size_t es = 0;
  bool commutative = false;
  bool live = false;
};
std::vector<UserEntry>& table() {
  static std::vector<UserEntry> t;
  return t;
}
constexpr bspk_op kUserBase = 0x10000;

const char* const kOperNames[] = {"?",       "BSPK_SUM", "BSPK_PROD", "BSPK_MIN",  "BSPK_MAX",
                                  "BSPK_LAND", "BSPK_LOR", "BSPK_BAND", "BSPK_BOR", "BSPK_BXOR"};
const char* const kTypeNames[] = {"?", "BSPK_INT32", "BSPK_INT64", "BSPK_UINT32", "BSPK_UINT64", "BSPK_FLOAT",
                                  "BSPK_DOUBLE"};
const size_t kTypeSize[] = {0, 4, 8, 4, 8, 4, 8};

// Integer sums and products wrap modulo 2^bits (computed unsigned, as a
// sequential loop over unsigned values would).
template <class T, class U>
void apply_int(int oper, T* a, const T* b, size_t k) {
  switch (oper) {
    case BSPK_SUM: for (size_t i = 0; i < k; i++) a[i] = static_cast<T>(static_cast<U>(a[i]) + static_cast<U>(b[i])); break;
    case BSPK_PROD: for (size_t i = 0; i < k; i++) a[i] = static_cast<T>(static_cast<U>(a[i]) * static_cast<U>(b[i])); break;
    case BSPK_MIN: for (size_t i = 0; i < k; i++) if (b[i] < a[i]) a[i] = b[i]; break;
    case BSPK_MAX: for (size_t i = 0; i < k; i++) if (b[i] > a[i]) a[i] = b[i]; break;
    case BSPK_LAND: for (size_t i = 0; i < k; i++) a[i] = (a[i] != 0 && b[i] != 0) ? 1 : 0; break;
    case BSPK_LOR: for (size_t i = 0; i < k; i++) a[i] = (a[i] != 0 || b[i] != 0) ? 1 : 0; break;
    case BSPK_BAND: for (size_t i = 0; i < k; i++) a[i] = static_cast<T>(a[i] & b[i]); break;
    case BSPK_BOR: for (size_t i = 0; i < k; i++) a[i] = static_cast<T>(a[i] | b[i]); break;
    case BSPK_BXOR: for (size_t i = 0; i < k; i++) a[i] = static_cast<T>(a[i] ^ b[i]); break;
    default: break;
  }
}
template <class T>
void apply_float(int oper, T* a, const T* b, size_t k) {
  switch (oper) {
    case BSPK_SUM: for (size_t i = 0; i < k; i++) a[i] = a[i] + b[i]; break;
    case BSPK_PROD: for (size_t i = 0; i < k; i++) a[i] = a[i] * b[i]; break;
    case BSPK_MIN: for (size_t i = 0; i < k; i++) if (b[i] < a[i]) a[i] = b[i]; break;
    case BSPK_MAX: for (size_t i = 0; i < k; i++) if (b[i] > a[i]) a[i] = b[i]; break;
    case BSPK_LAND: for (size_t i = 0; i < k; i++) a[i] = (a[i] != 0 && b[i] != 0) ? T(1) : T(0); break;
    case BSPK_LOR: for (size_t i = 0; i < k; i++) a[i] = (a[i] != 0 || b[i] != 0) ? T(1) : T(0); break;
    default: break;
  }
}

}  // namespace

void Op::apply(void* acc, const void* next, size_t k) const {
  if (k == 0) return;
  if (user) {
    user(acc, next, k);
    return;
  }
  switch (type) {
    case 1: apply_int<int32_t, uint32_t>(oper, static_cast<int32_t*>(acc), static_cast<const int32_t*>(next), k); break;
    case 2: apply_int<int64_t, uint64_t>(oper, static_cast<int64_t*>(acc), static_cast<const int64_t*>(next), k); break;
    case 3: apply_int<uint32_t, uint32_t>(oper, static_cast<uint32_t*>(acc), static_cast<const uint32_t*>(next), k); break;
    case 4: apply_int<uint64_t, uint64_t>(oper, static_cast<uint64_t*>(acc), static_cast<const uint64_t*>(next), k); break;
    case 5: apply_float<float>(oper, static_cast<float*>(acc), static_cast<const float*>(next), k); break;
    case 6: apply_float<double>(oper, static_cast<double*>(acc), static_cast<const double*>(next), k); break;
    default: break;
  }
}

void Op::start(void* acc, size_t k) const {
  if (starts()) apply(acc, acc, k);  // x op x = (x != 0)
}

int resolve(bspk_op op, Op* out, std::string* why) {
  *out = Op();
  out->code = op;
  if (op >= kUserBase) {
    const size_t idx = static_cast<size_t>(op - kUserBase);
    if (idx >= table().size() || !table()[idx].live) {
      *why = "op " + std::to_string(op) + " is not a live user operation (freed, or not from bspk_op_create)";
      return BSPK_ERR_ARG;
    }
    const UserEntry& e = table()[idx];
    out->user = e.fn;
    out->es = e.es;
    out->commutative = e.commutative;
    return BSPK_OK;
  }
  const int oper = op & 0xff, type = (op >> 8) & 0xff;
  if (op <= 0 || (op & ~0xffff) != 0 || oper < 1 || oper > 9 || type > 6) {
    *why = "op " + std::to_string(op) + " is neither an operation | type (e.g. BSPK_SUM | BSPK_DOUBLE) nor a user "
           "operation from bspk_op_create";
    return BSPK_ERR_ARG;
  }
  if (type == 0) {
    *why = std::string("the operation ") + kOperNames[oper] + " has no element type: write e.g. " + kOperNames[oper] +
           " | BSPK_DOUBLE (or | BSPK_INT32, BSPK_INT64, BSPK_UINT32, BSPK_UINT64, BSPK_FLOAT)";
    return BSPK_ERR_ARG;
  }
  if (oper >= BSPK_BAND && type >= 5) {
    *why = std::string("the bitwise operation ") + kOperNames[oper] + " is not defined on " + kTypeNames[type] +
           ": use an integer type";
    return BSPK_ERR_ARG;
  }
  out->oper = oper;
  out->type = type;
  out->es = kTypeSize[type];
  out->commutative = true;
  return BSPK_OK;
}

std::string op_name(bspk_op op) {
  if (op >= kUserBase) {
    const size_t idx = static_cast<size_t>(op - kUserBase);
    std::string s = "user op " + std::to_string(op);
    if (idx < table().size() && table()[idx].live)
      s += " (" + std::to_string(table()[idx].es) + "-byte elements, " +
           (table()[idx].commutative ? "commutative" : "non-commutative") + ")";
    return s;
  }
  const int oper = op & 0xff, type = (op >> 8) & 0xff;
  if (op <= 0 || (op & ~0xffff) != 0 || oper < 1 || oper > 9 || type > 6) return "op " + std::to_string(op);
  if (type == 0) return kOperNames[oper];
  return std::string(kOperNames[oper]) + " | " + kTypeNames[type];
}

uint32_t op_signature(bspk_op op) {
  if (op >= kUserBase) {
    const size_t idx = static_cast<size_t>(op - kUserBase);
    if (idx < table().size() && table()[idx].live)
      return 0x10000u | (table()[idx].commutative ? 1u : 0u);
    return 0x20000u;
  }
  return static_cast<uint32_t>(op);
}

std::string op_signature_name(uint32_t sig) {
  if (sig & 0x20000u) return "an invalid user op";
  if (sig & 0x10000u) return (sig & 1u) ? "a commutative user op" : "a non-commutative user op";
  return op_name(static_cast<bspk_op>(sig));
}

}  // namespace bspk_coll

extern "C" {

bspk_op bspk_op_create(bspk_combine_fn fn, size_t elem_size, int commutative) {
  using namespace bspk_coll;
  if (!fn) return static_cast<bspk_op>(report_local("bspk_op_create", BSPK_ERR_ARG, "fn is NULL"));
  if (elem_size == 0) return static_cast<bspk_op>(report_local("bspk_op_create", BSPK_ERR_ARG, "elem_size is 0"));
  auto& t = table();
  size_t idx = 0;
  while (idx < t.size() && t[idx].live) idx++;
  if (idx == t.size()) {
    if (t.size() >= 0x7fff0000u)
      return static_cast<bspk_op>(report_local("bspk_op_create", BSPK_ERR_NOMEM, "too many user operations"));
    t.push_back(UserEntry());
  }
  t[idx].fn = fn;
  t[idx].es = elem_size;
  t[idx].commutative = commutative != 0;
  t[idx].live = true;
  return kUserBase + static_cast<bspk_op>(idx);
}

int bspk_op_free(bspk_op op) {
  using namespace bspk_coll;
  auto& t = table();
  if (op < kUserBase || static_cast<size_t>(op - kUserBase) >= t.size() || !t[static_cast<size_t>(op - kUserBase)].live)
    return report_local("bspk_op_free", BSPK_ERR_ARG,
                        "op " + std::to_string(op) + " is not a live user operation from bspk_op_create");
  t[static_cast<size_t>(op - kUserBase)] = UserEntry();
  return BSPK_OK;
}

}  // extern "C"
