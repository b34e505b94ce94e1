// coll/report.h -- how the collectives report errors they find themselves.
//
// bspk.h has no public call to record a message for bspk_error_string(), so
// this layer keeps its own last message (bspk_coll_error_string()) in the C
// API's form "CALL (pid P, superstep S): what happened", and prints it as the
// C API does: "bspk: error: ..." on stderr unless BSPK_ERRORS=quiet;
// BSPK_ERRORS=abort ends the job with it (bspk_abort_text). Errors of a C API
// call made inside a collective were printed by the C API already: they are
// recorded here (prefixed with the collective's name) but not printed again.
#ifndef BSPK_COLL_REPORT_H
#define BSPK_COLL_REPORT_H

#include <cstdint>
#include <string>

namespace bspk_coll {

// "CALL (pid P, superstep S)" with this process's pid and the given superstep
// (or the current one when step < 0); "CALL (no runtime)" without a runtime.
std::string where(const char* call, int64_t step = -1);
// Record (and print) an error found by this layer; returns code.
int report(const char* call, int64_t step, int code, const std::string& what);
// The same for a call outside any superstep's logic (bspk_op_create, ...).
int report_local(const char* call, int code, const std::string& what);
// Record, without printing, a C API error (already printed by the C API).
int record_nested(const char* call, int64_t step, int code, const char* c_call);
// Current superstep, -1 without a runtime.
int64_t superstep_now();

}  // namespace bspk_coll

#endif
