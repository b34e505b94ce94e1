// tests/cpp/nontrivial_coll.cpp -- must NOT compile: a one-value collective
// of a type that is not trivially copyable (tests/cpp/CMakeLists.txt expects
// bspk_coll.hpp's static_assert message, not "no matching function").
// VARIANT 1: allreduce of a std::string; 2: allgather of a struct with a
// user-provided copy constructor.
#include <bspk.hpp>
#include <functional>
#include <string>
#include <vector>

struct Counted {
    Counted() {}
    Counted(const Counted&) {}
    int x = 0;
};

int main(int argc, char** argv) {
    bspk::runtime rt(argc, argv);
#if VARIANT == 1
    std::string s = bspk::allreduce(rt, std::string("a"), std::plus<>{});
    (void)s;
#else
    std::vector<Counted> g = bspk::allgather(rt, Counted{});
    (void)g;
#endif
    return 0;
}
