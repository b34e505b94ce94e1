// tests/cpp/header_cxx.cpp -- bspk.hpp alone, compiled by tests/cpp's header
// tests with -Wall -Wextra -Werror -pedantic (and more) as C++17 and C++20.
#include <bspk.hpp>

// Instantiate the templates a program uses, so their bodies are checked too.
struct Cell {
    double v;
    bspk::remote<Cell> next;
};
template class bspk::region<Cell>;
template class bspk::slice<Cell>;
template class bspk::remote<Cell>;
template class bspk::message<Cell>;
template class bspk::frame_range<Cell>;
template class bspk::frame_range<const Cell>;

int use(bspk::runtime& rt) {
    bspk::region<Cell> r(rt, "cells", rt.pid(), 8);
    auto g = bspk::lookup<Cell>(rt, "cells", 0);
    bspk::copy(g + 1, r.slice(0, 2), 2);
    const Cell c[2] = {};
    bspk::put(r, c, 2);
    rt.send(0, r.slice(1, 1));
    rt.send_buf(0, c, 2);
    std::vector<int> v(static_cast<size_t>(rt.nprocs()));
    rt.sync(bspk::will_send{v});
    rt.sync(bspk::expect{0u});
    int n = 0;
    for (bspk::message<Cell>& m : rt.messages<Cell>())
        for (bspk::span<Cell> f : m.frames()) n += static_cast<int>(f.size()) + m.sender();
    return n;
}
