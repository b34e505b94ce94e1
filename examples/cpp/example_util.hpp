// examples/cpp/example_util.hpp -- what the C++ DSM examples share (the C++
// twin of examples/example_util.h: to_comem / from_comem are region<T>'s
// copy_from / copy_to now).
#ifndef BSPK_EXAMPLE_UTIL_HPP
#define BSPK_EXAMPLE_UTIL_HPP
#include <bspk.hpp>

// The largest of every process's x (NaN counts as largest), known at pid 0
// after one superstep of message passing; other pids get their own x.
inline double max_at_pid0(bspk::runtime& rt, double x) {
    rt.send_buf(0, &x, 1);
    rt.sync(bspk::expect{rt.pid() == 0 ? rt.nprocs() : 0});
    double worst = x;
    for (bspk::message<double>& in : rt.messages<double>())
        if (in[0] > worst || in[0] != in[0]) worst = in[0];
    return worst;
}

#endif
