// fabric/lsan.cpp -- LeakSanitizer's default suppressions for programs built
// with -fsanitize=address (or =leak) that link BSPk.
//
// libfabric 1.17's tcp (net) provider leaks inside libfabric: the fi_info it
// copies at fi_endpoint and 1-2 KiB per connection (tests/lsan_libfabric.supp
// has the measurements). A user's ASan build of a correct BSPk or BSPlib
// program on tcp then ends with "SUMMARY: AddressSanitizer: 1280 byte(s)
// leaked" and status 1. The sanitizer runtime calls
// __lsan_default_suppressions if the process defines it (a weak reference,
// resolved in the global scope, where libbspk is): this one names libfabric
// only, whose stacks end at its first frame (no frame pointers), so leaks of
// the program and of BSPk itself are still reported. A program that defines
// its own takes precedence (its definition is found first); LSAN_OPTIONS
// suppressions= adds to these.
extern "C" __attribute__((visibility("default"), used)) const char* __lsan_default_suppressions() {
  return "leak:libfabric.so.1\n";
}
