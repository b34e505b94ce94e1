// tests/cpp/nontrivial.cpp -- must NOT compile: a region of a type that is
// not trivially copyable (tests/cpp/CMakeLists.txt expects the header's
// static_assert message).
#include <bspk.hpp>
#include <string>

int main(int argc, char** argv) {
    bspk::runtime rt(argc, argv);
    bspk::region<std::string> r(rt, 4);
    return 0;
}
