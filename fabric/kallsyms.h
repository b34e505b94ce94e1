// fabric/kallsyms.h -- between fabric/getinfo.cpp (the guard's state) and
// fabric/kallsyms.cpp (the fopen that reads it). Internal to libbspk.
#pragma once

namespace bspk::fabric::detail {

// Whether a HideKallsyms guard is up (fabric/getinfo.h).
bool kallsyms_hidden();
// Counts an fopen of /proc/kallsyms seen by the guard's fopen.
void kallsyms_opened(bool refused);

}  // namespace bspk::fabric::detail
