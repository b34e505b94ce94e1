// mp_template (C++) -- examples/mp_template.c written with bspk.hpp: the
// message-passing superstep of the BSPk paper, Figure 4, run for many
// supersteps with varying numbers and sizes of messages, and checked.
//
//   (0) sync;
//   (1) free the messages sent in the previous superstep    out.clear()
//   (2-3) pull in all pending messages                      rt.messages<double>()
//   (4) for each message to send: a fresh region, computed
//       from the received messages, sent                    out.emplace_back, rt.send
//   (5) free the received messages                          in.clear()
//   (6) sync.
//
// Schedule: in superstep s, process q sends k = (s + q) % 4 messages, message
// j to pid (q + j + 1) % p with n(s, q, j) doubles (from empty to several
// frames). Contents: element i = first + i, where `first` folds the first
// elements of the messages q received in s (so every value depends on the
// communication). Every process replays the schedule (first elements only)
// and checks each received message completely: sender, order, length and
// every element.
//
// Usage: bspkrun -n P mp_template_cpp [--steps S] [--mode expect|will_send|counted]
#include <bspk.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

static int P, me;

static size_t nelems(int s, int q, int j) {
    static const size_t sizes[] = {0, 1, 2, 100, 1000, 8191, 8192, 8193, 20000, 70000};
    return sizes[size_t(s * 7 + q * 3 + j) % (sizeof sizes / sizeof *sizes)];
}
static int nsend(int s, int q) { return (s + q) % 4; }
static int dest_of(int q, int j) { return (q + j + 1) % P; }

static double fold(double acc, double first) {
    const uint64_t x = uint64_t(acc) * 31u + uint64_t(first);
    return double(x % 1000003u);
}

int main(int argc, char** argv) {
    bspk::runtime rt(argc, argv);
    P = rt.nprocs();
    me = rt.pid();
    int steps = 50;
    std::string mode = "expect";
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) steps = std::stoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--mode") && i + 1 < argc) mode = argv[++i];
    }
    // carry[q]: fold of the first elements q received at the start of superstep s
    std::vector<double> carry(P), next(P);
    std::vector<int> v(P);
    std::vector<bspk::region<double>> out;  // sent in the previous superstep
    long checked = 0;
    auto fail = [&](int s, const std::string& what) { rt.abort("superstep " + std::to_string(s) + ": " + what); };

    rt.sync();  // (0)
    for (int s = 0; s < steps; s++) {
        out.clear();  // (1)
        std::vector<bspk::message<double>> in;  // (2)-(3)
        for (bspk::message<double>& m : rt.messages<double>()) in.push_back(std::move(m));
        // Check what arrived against the replayed schedule of superstep s-1.
        double acc = 0;
        size_t k = 0;
        if (s > 0) {
            for (int q = 0; q < P; q++)
                for (int j = 0; j < nsend(s - 1, q); j++) {
                    if (dest_of(q, j) != me) continue;
                    if (k >= in.size()) fail(s, "message " + std::to_string(j) + " from pid " + std::to_string(q) + " missing");
                    const bspk::message<double>& m = in[k++];
                    const size_t n = nelems(s - 1, q, j);
                    if (m.sender() != q || m.size() != n)
                        fail(s, "message " + std::to_string(j) + " from pid " + std::to_string(q) + " has sender " +
                                    std::to_string(m.sender()) + ", " + std::to_string(m.size()) + " elements (expected " +
                                    std::to_string(n) + ")");
                    const double first = carry[q] + j;
                    size_t i = 0;
                    for (bspk::span<const double> f : m.frames())  // frame by frame
                        for (double x : f) {
                            if (x != first + double(i))
                                fail(s, "message " + std::to_string(j) + " from pid " + std::to_string(q) + ", element " +
                                            std::to_string(i) + " is " + std::to_string(x));
                            i++;
                        }
                    checked += long(n);
                    if (n) acc = fold(acc, first);
                }
            if (k != in.size()) fail(s, std::to_string(in.size()) + " messages arrived, " + std::to_string(k) + " expected");
            // replay everyone's fold for the next superstep
            for (int r = 0; r < P; r++) {
                double a = 0;
                for (int q = 0; q < P; q++)
                    for (int j = 0; j < nsend(s - 1, q); j++)
                        if (dest_of(q, j) == r && nelems(s - 1, q, j)) a = fold(a, carry[q] + j);
                next[r] = a;
            }
            std::swap(carry, next);
            if (carry[me] != acc) rt.abort("replay disagrees with received data");
        }
        // (4) compute and send this superstep's messages
        std::fill(v.begin(), v.end(), 0);
        for (int j = 0; j < nsend(s, me); j++) {
            bspk::region<double>& o = out.emplace_back(rt, nelems(s, me, j));
            size_t i = 0;
            for (bspk::span<double> f : o.frames())
                for (double& x : f) x = carry[me] + j + double(i++);
            rt.send(dest_of(me, j), o);
            v[dest_of(me, j)]++;
        }
        in.clear();  // (5)
        if (mode == "expect") {
            int e = 0;
            for (int q = 0; q < P; q++)
                for (int j = 0; j < nsend(s, q); j++) e += dest_of(q, j) == me;
            rt.sync(bspk::expect{e});  // (6)
        } else if (mode == "will_send") {
            rt.sync(bspk::will_send{v});
        } else {
            rt.sync();
        }
    }
    out.clear();
    for (bspk::message<double>& m : rt.messages<double>()) (void)m;
    const bspk_stats st = rt.stats();
    std::printf("mp_template pid=%d: %d supersteps, %llu messages received, %ld elements checked, "
                "runtime bytes copied %llu: ok\n",
                me, steps, (unsigned long long)st.msgs_recv, checked, (unsigned long long)st.bytes_copied);
    rt.finalize();
    return 0;
}
