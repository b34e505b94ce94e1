// fabric/kallsyms.h -- between fabric/getinfo.cpp (the guard's state) and
// fabric/kallsyms.cpp (the fopen that reads it). Internal to libbspk.
#pragma once

namespace bspk::fabric::detail {

// Whether a HideKallsyms guard is up (fabric/getinfo.h).
bool kallsyms_hidden();

}  // namespace bspk::fabric::detail
