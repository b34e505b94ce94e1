// coll/ops.h -- the combining operations of the collectives (bspk_coll.h):
// the built-in operation x type pairs and user operations (bspk_op_create).
// Layering: coll/ knows only <bspk.h>, <bspk_coll.h> and the standard library.
#ifndef BSPK_COLL_OPS_H
#define BSPK_COLL_OPS_H

#include <bspk.h>
#include <bspk_coll.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace bspk_coll {

// A resolved operation: acc[i] = acc[i] op next[i] for k elements.
struct Op {
  bspk_op code = 0;        // as passed
  int oper = 0, type = 0;  // built-in: BSPK_SUM.., BSPK_INT32>>8..; user: 0
  size_t es = 0;           // element size in bytes
  bool commutative = true;
  bspk_combine_fn user = nullptr;
  void apply(void* acc, const void* next, size_t k) const;
  // An accumulator started from one process's values: BSPK_LAND / BSPK_LOR
  // make them 1 or 0 (as combining would), so that a result is 1 or 0 even
  // when it combines a single value (p = 1, the first pids of a scan).
  void start(void* acc, size_t k) const;
  bool starts() const { return !user && (oper == BSPK_LAND || oper == BSPK_LOR); }  // start() changes values
  bool is_user() const { return user != nullptr; }
};

// Resolve op (built-in or user). Returns BSPK_OK or BSPK_ERR_ARG with *why
// saying what is wrong ("... write e.g. BSPK_SUM | BSPK_DOUBLE").
int resolve(bspk_op op, Op* out, std::string* why);

// "BSPK_SUM | BSPK_DOUBLE", "user op 65537 (8-byte elements, commutative)".
std::string op_name(bspk_op op);

// Signature of an op for the cross-process check: built-in ops by value, user
// ops by (elements size, commutativity) -- handles are local numbers.
uint32_t op_signature(bspk_op op);
// How a signature reads in a message ("BSPK_SUM | BSPK_INT32", "a commutative user op").
std::string op_signature_name(uint32_t sig);

}  // namespace bspk_coll

#endif
