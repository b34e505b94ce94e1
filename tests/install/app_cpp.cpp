// tests/install/app_cpp.cpp -- a C++ user program built from the installed
// tree, as the README says:
//   c++ -std=c++17 app_cpp.cpp $(pkg-config --cflags --libs bspk)
//   find_package(bspk) + target_link_libraries(app bspk::bspk), CXX_STANDARD 17
// and run with the installed bspkrun: a typed message round the ring, a
// store into the next process's named region, a buffered send.
#include <bspk.hpp>

#include <cstdio>

#if __cplusplus >= 202002L
#include <ranges>
// The frame and message ranges work with C++20's ranges library, not only range-for.
static_assert(std::ranges::input_range<bspk::frame_range<int>>, "frames() is a std::ranges::input_range");
static_assert(std::ranges::input_range<bspk::message_range<int>>, "messages<T>() is a std::ranges::input_range");
#endif

int main(int argc, char** argv) {
    bspk::runtime rt(argc, argv);
    const int me = rt.pid(), p = rt.nprocs(), next = (me + 1) % p, prev = (me + p - 1) % p;
    bspk::region<int> m(rt, 1), g(rt, "g", me, 4);
    m[0] = me;
    rt.send(next, m);
    bspk::copy(bspk::lookup<int>(rt, "g", next) + 2, m, 1);
    const double x = 0.5 * me;
    rt.send_buf(next, &x, 1);
    rt.sync(bspk::expect{3});  // the message, the store, the buffered send
    int got = -1;
    double gx = -1;
    for (bspk::message<int>& in : rt.messages<int>()) {
        if (in.size() == 1 && in.sender() == prev) got = in[0];
        break;  // the typed message first (send order); the buffered one next
    }
    if (bspk::message<double> b = rt.recv<double>()) gx = b[0];
    const bool ok = got == prev && g[2] == prev && gx == 0.5 * prev;
    std::printf("pid %d of %d received %d: %s\n", me, p, got, ok ? "cpp ok" : "WRONG");
    rt.finalize();
    return ok ? 0 : 3;
}
