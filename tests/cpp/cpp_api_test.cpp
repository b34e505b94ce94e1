// tests/cpp/cpp_api_test.cpp -- the C++ API (include/bspk.hpp) against the C
// API it wraps, on every process of a job (bspkrun -n P, any P >= 1).
//
// Each section is one behaviour of issue 15 part 1; collective sections use
// the same supersteps on every process. Every check is counted; at the end
// each process prints
//   cpp_api pid=N p=P: C checks, F failures
// after rt.finalize() (tests/cpp/CMakeLists.txt wants P lines with 0
// failures, exit status 0, and no bspk_free error: regions alive at finalize
// must not be freed again). A failed check prints its line on stderr.
#include <bspk.hpp>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

static int checks = 0, failures = 0;

#define CHECK(c)                                                                                              \
    do {                                                                                                      \
        ++checks;                                                                                             \
        if (!(c)) {                                                                                           \
            ++failures;                                                                                       \
            std::fprintf(stderr, "cpp_api pid %d: %s:%d: CHECK(%s) failed\n", bspk_pid(), __FILE__, __LINE__, #c); \
        }                                                                                                     \
    } while (0)

static bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Run f; it must throw bspk::error with `code` from `call`, with this
// process's pid and superstep (step < 0: no runtime, pid -1).
template <class F>
static bspk::error expect_error(int code, const std::string& call, int line, F&& f, std::int64_t step = -2) {
    const int pid = bspk_pid();
    if (step == -2) step = bspk_nprocs() > 0 ? std::int64_t(bspk::detail::superstep_now()) : -1;
    try {
        f();
    } catch (const bspk::error& e) {
        ++checks;
        if (e.code() != code || e.call() != call || e.pid() != pid || e.superstep() != step) {
            ++failures;
            std::fprintf(stderr, "cpp_api pid %d: line %d: got %s from %s (pid %d, superstep %lld), expected %s from %s "
                         "(pid %d, superstep %lld): %s\n", pid, line, e.code_name(), e.call().c_str(), e.pid(),
                         (long long)e.superstep(), bspk::code_name(code), call.c_str(), pid, (long long)step, e.what());
        }
        return e;
    }
    ++checks;
    ++failures;
    std::fprintf(stderr, "cpp_api pid %d: line %d: no bspk::error thrown (expected %s from %s)\n", pid, line,
                 bspk::code_name(code), call.c_str());
    return bspk::error(0, "", 0, 0, "");
}

// ---- compile-time properties ----
struct Pod {
    int32_t a;
    float b;
    double c;
};
struct ListNode {
    int64_t value;
    bspk::remote<ListNode> next;  // a typed pointer inside an element
};
static_assert(std::is_base_of<std::runtime_error, bspk::error>::value, "bspk::error is a std::runtime_error");
static_assert(!std::is_copy_constructible<bspk::region<int>>::value, "regions are not copyable");
static_assert(!std::is_copy_assignable<bspk::region<int>>::value, "regions are not copyable");
static_assert(std::is_nothrow_move_constructible<bspk::region<int>>::value, "regions move");
static_assert(std::is_nothrow_move_assignable<bspk::region<int>>::value, "regions move");
static_assert(!std::is_copy_constructible<bspk::message<int>>::value, "messages are not copyable");
static_assert(std::is_nothrow_move_constructible<bspk::message<int>>::value, "messages move");
static_assert(std::is_convertible<bspk::message<int>&&, bspk::region<int>&&>::value, "a message is a region");
static_assert(!std::is_copy_constructible<bspk::runtime>::value, "one runtime");
static_assert(std::is_trivially_copyable<bspk::remote<ListNode>>::value, "remote pointers travel in regions");
static_assert(std::is_trivially_copyable<ListNode>::value, "remote pointers travel in regions");
static_assert(sizeof(bspk::remote<double>) == sizeof(bspk_ptr), "a remote<T> is a bspk_ptr");
#if BSPK_HPP_STD_SPAN
static_assert(std::is_same<bspk::span<int>, std::span<int>>::value, "C++20: bspk::span is std::span");
#endif

static size_t frame_size(bspk::runtime& rt) { return size_t(rt.stats().frame_size); }
static uint64_t frames_in_use(bspk::runtime& rt) { return rt.stats().frames_in_use; }

// ---- sections ----

static void basics(bspk::runtime& rt) {
    CHECK(rt.pid() == bspk_pid() && rt.pid() >= 0 && rt.pid() < rt.nprocs());
    CHECK(rt.nprocs() == bspk_nprocs());
    CHECK(!rt.finalized());
    const uint64_t s0 = rt.superstep();
    CHECK(s0 == 0);
    rt.sync();
    CHECK(rt.superstep() == s0 + 1);
}

// region<T> frees on destruction, moves, releases.
static void raii_and_moves(bspk::runtime& rt) {
    const size_t fe = frame_size(rt) / sizeof(double);
    const uint64_t before = frames_in_use(rt);
    {
        bspk::region<double> r(rt, 3 * fe + 5);  // four frames
        CHECK(r.size() == 3 * fe + 5 && bool(r) && !r.empty());
        CHECK(frames_in_use(rt) == before + 4);
    }
    CHECK(frames_in_use(rt) == before);

    bspk::region<double> a(rt, 100);
    a[5] = 42;
    const bspk_ptr pa = a.c_ptr();
    bspk::region<double> b(std::move(a));
    CHECK(!a && a.size() == 0 && bspk_is_null(a.c_ptr()));
    CHECK(b.size() == 100 && b[5] == 42 && b.c_ptr().region == pa.region && b.c_ptr().gen == pa.gen);
    bspk::region<double> c(rt, 2 * fe);  // two frames, freed by the move assignment below
    const uint64_t with_c = frames_in_use(rt);
    c = std::move(b);
    CHECK(frames_in_use(rt) == with_c - 2);
    CHECK(c.size() == 100 && c[5] == 42 && !b);
    bspk::region<double>& alias = c;
    c = std::move(alias);  // self-move keeps the region
    CHECK(c.size() == 100 && c[5] == 42);
    bspk::region<double> d;  // empty
    CHECK(!d && d.size() == 0);
    d = std::move(c);
    CHECK(d[5] == 42);
    bspk_ptr raw = d.release();
    CHECK(!d && !bspk_is_null(raw));
    CHECK(bspk_free(raw) == BSPK_OK);
    d.reset();  // nothing to free
    CHECK(frames_in_use(rt) == with_c - 2 - 1);  // c's two frames, then a's one

    // A vector of regions: moves on reallocation, frees on clear.
    const uint64_t v0 = frames_in_use(rt);
    {
        std::vector<bspk::region<int>> v;
        for (int i = 0; i < 20; i++) v.emplace_back(rt, 10)[0] = i;
        bool all = true;
        for (int i = 0; i < 20; i++) all = all && v[size_t(i)][0] == i;
        CHECK(all);
    }
    CHECK(frames_in_use(rt) == v0);

    // Contiguous regions: data() for all of it, one frame span.
    bspk::region<double> cont(rt, 3 * fe, bspk::contiguous);
    CHECK(cont.contiguous());
    double* base = cont.data();
    bool same = base != nullptr;
    for (size_t k = 0; k < cont.size(); k += 97) same = same && base + k == &cont[k];
    CHECK(same && base + cont.size() - 1 == &cont[cont.size() - 1]);
    int spans = 0;
    for (bspk::span<double> f : cont.frames()) spans++, same = same && f.data() == base && f.size() == 3 * fe;
    CHECK(spans == 1 && same);
    bspk::region<double> named_cont(rt, "cpp_cont", rt.pid(), 10, bspk::contiguous);
    CHECK(named_cont.contiguous() && named_cont.data() == &named_cont[0]);
    bspk::region<double> spread(rt, 3 * fe);
    CHECK(!spread.contiguous());
    expect_error(BSPK_ERR_ARG, "bspk::region::data", __LINE__, [&] { (void)spread.data(); });
    bspk::region<double> none(rt, 0);
    CHECK(none.empty() && bool(none) && none.data() == nullptr);
}

// r[i] is the C API's element: the same address as bspk_elemP(bspk_incr(p, i)).
static void element_access(bspk::runtime& rt) {
    const size_t fe = frame_size(rt) / sizeof(int32_t), n = 3 * fe + 7;
    bspk::region<int32_t> r(rt, n);
    bool same = true;
    for (size_t i = 0; i < n; i++) same = same && &r[i] == bspk_elemP(bspk_incr(r.c_ptr(), ptrdiff_t(i)));
    CHECK(same);
    for (size_t i = 0; i < n; i++) r[i] = int32_t(i * 3);
    const bspk::region<int32_t>& cr = r;
    size_t idx = 0, nframes = 0;
    for (bspk::span<const int32_t> f : cr.frames()) {
        nframes++;
        for (const int32_t& x : f) same = same && &x == &r[idx] && x == int32_t(idx * 3), idx++;
    }
    CHECK(same && idx == n && nframes == 4);
    static_assert(std::is_same<decltype(cr[0]), const int32_t&>::value, "const region, const elements");

    bspk::slice<int32_t> s = r.slice(fe - 2, 5);  // across a frame boundary
    CHECK(s.size() == 5 && &s[0] == &r[fe - 2] && &s[4] == &r[fe + 2]);
    size_t ns = 0;
    for (bspk::span<int32_t> f : s.frames()) ns += f.size();
    CHECK(ns == 5);
    CHECK(&s.subslice(1, 2)[1] == &r[fe]);
    CHECK(r.slice(n - 3).size() == 3 && r.slice().size() == n && r.slice(n).size() == 0);
    std::vector<int32_t> out(5);
    s.copy_to(out.data());
    CHECK(out[0] == int32_t((fe - 2) * 3) && out[4] == int32_t((fe + 2) * 3));
    const std::vector<int32_t> in = {-1, -2, -3, -4, -5};
    s.copy_from(in.data());
    CHECK(r[fe - 2] == -1 && r[fe + 2] == -5);
    std::vector<int32_t> all(n);
    r.copy_to(all.data());
    CHECK(all[fe] == -3 && all[n - 1] == int32_t((n - 1) * 3));

    bspk::remote<int32_t> p = r.ptr(10);
    CHECK(p.owner() == rt.pid() && p.size() == n - 10 && (p + 5).size() == n - 15 && (p - 10).size() == n);
    CHECK(r.ptr(n).size() == 0);

    // Bounds: the region's by the runtime, a slice's here.
    expect_error(BSPK_ERR_RANGE, "bspk_elemP", __LINE__, [&] { (void)r[n]; });
    expect_error(BSPK_ERR_RANGE, "bspk_incr", __LINE__, [&] { (void)r[n + 5]; });
    expect_error(BSPK_ERR_RANGE, "bspk::region::slice", __LINE__, [&] { (void)r.slice(n - 2, 5); });
    expect_error(BSPK_ERR_RANGE, "bspk::slice::operator[]", __LINE__, [&] { (void)s[5]; });
    expect_error(BSPK_ERR_RANGE, "bspk::slice::subslice", __LINE__, [&] { (void)s.subslice(3, 3); });
    expect_error(BSPK_ERR_RANGE, "bspk_incr", __LINE__, [&] { (void)(p + ptrdiff_t(n)); });
    bspk::region<int32_t> moved(std::move(r));
    expect_error(BSPK_ERR_PTR, "bspk_incr", __LINE__, [&] { (void)r[0]; });
    CHECK(moved[1] == 3);
}

// Messages: p messages to each process (itself included), checked for
// sender, order, size and every element; a message kept as a region.
static void messages_round_trip(bspk::runtime& rt) {
    const int P = rt.nprocs(), me = rt.pid();
    const size_t fe = frame_size(rt) / sizeof(double);
    auto size_of = [&](int from, int to) { return fe * size_t(from % 2 + 1) + size_t(to) * 3 + size_t(from); };
    auto value = [](int from, int to, size_t i) { return double(from) * 1e6 + double(to) * 1e3 + double(i); };
    std::vector<bspk::region<double>> out;  // alive until the sync [BSPk §6 rule 2]
    for (int q = 0; q < P; q++) {
        bspk::region<double>& o = out.emplace_back(rt, size_of(me, q) + 4);
        for (size_t i = 0; i < o.size(); i++) o[i] = value(me, q, i >= 4 ? i - 4 : 0);
        rt.send(q, o.slice(4, size_of(me, q)));  // from element 4: not frame-aligned
    }
    CHECK(!rt.recv<double>());  // nothing before the sync
    rt.sync(bspk::expect{P});
    int next_sender = 0;
    bool all = true;
    bspk::region<double> kept;
    for (bspk::message<double>& m : rt.messages<double>()) {
        CHECK(m.sender() == next_sender);
        CHECK(m.size() == size_of(m.sender(), me));
        for (size_t i = 0; i < m.size(); i++) all = all && m[i] == value(m.sender(), me, i);
        size_t i = 0;
        for (bspk::span<double> f : m.frames())
            for (double x : f) all = all && x == value(m.sender(), me, i++);
        all = all && i == m.size();
        if (m.sender() == P - 1) kept = std::move(m);  // received messages are regions
        next_sender++;
    }
    CHECK(all && next_sender == P);
    CHECK(kept.size() == size_of(P - 1, me) && kept[1] == value(P - 1, me, 1));
    CHECK(!rt.recv<double>());
    out.clear();

    // Buffered sends: a struct array, bytes read as int, an empty message, a
    // single message through recv<T>.
    const int next = (me + 1) % P, prev = (me + P - 1) % P;
    const Pod pods[3] = {{me, 1.5f, 2.5}, {me + 1, 3.5f, 4.5}, {me + 2, 5.5f, 6.5}};
    rt.send_buf(next, pods, 3);
    const int32_t ints[3] = {7 * me, 8 * me, 9 * me};
    rt.send_buf(next, ints, 3);
    bspk::region<Pod> empty(rt, 4);
    rt.send(next, empty.slice(2, 0));
    std::vector<double> many(3 * fe + 1);  // bytes over four frames, read as doubles in place
    for (size_t i = 0; i < many.size(); i++) many[i] = me + 0.25 * double(i);
    rt.send_buf(next, many.data(), many.size());
    struct Twelve {
        char b[12];
    };
    std::vector<Twelve> odd(3 * fe / 2);  // 12-byte elements across frames: some would straddle
    rt.send_buf(next, odd.data(), odd.size());
    rt.sync(bspk::expect{5});
    bspk::message<Pod> mp = rt.recv<Pod>();
    CHECK(bool(mp) && mp.sender() == prev && mp.size() == 3 && mp[2].a == prev + 2 && mp[1].c == 4.5);
    bspk::message<int32_t> mi = rt.recv<int32_t>();
    CHECK(bool(mi) && mi.size() == 3 && mi[0] == 7 * prev && mi[2] == 9 * prev);
    bspk::message<Pod> me0 = rt.recv<Pod>();
    CHECK(bool(me0) && me0.size() == 0 && me0.sender() == prev);
    bspk::message<double> md = rt.recv<double>();
    CHECK(bool(md) && md.size() == 3 * fe + 1);
    all = true;
    size_t k = 0, spans = 0;
    for (bspk::span<double> f : md.frames()) {
        spans++;
        for (double x : f) all = all && x == prev + 0.25 * double(k++);
    }
    CHECK(all && k == md.size() && spans >= 4 && md[3 * fe] == prev + 0.25 * double(3 * fe));
    bspk::region<double> target(rt, 4);
    expect_error(BSPK_ERR_ARG, "bspk::copy", __LINE__, [&] { bspk::copy(target, md.slice(0, 4), 4); });
    rt.send(me, md.slice(1, 2));  // its bytes go on: 16 bytes, read as 2 doubles
    bspk::error e = expect_error(BSPK_ERR_ARG, "bspk::runtime::recv<T>", __LINE__, [&] { (void)rt.recv<Twelve>(); });
    CHECK(contains(e.what(), "frames do not hold whole"));
    CHECK(!rt.recv<Pod>());
    rt.sync(bspk::expect{1});
    bspk::message<double> fwd = rt.recv<double>();
    CHECK(fwd.size() == 2 && fwd[0] == prev + 0.25 && fwd[1] == prev + 0.5 && fwd.sender() == me);
}

// The element type is checked against the sender's element size.
static void element_size_mismatch(bspk::runtime& rt) {
    const int P = rt.nprocs(), me = rt.pid(), next = (me + 1) % P, prev = (me + P - 1) % P;
    bspk::region<int32_t> four(rt, 4);
    rt.send(next, four);
    const char twelve[12] = {};
    rt.send_buf(next, twelve, 12);
    rt.send(next, four);
    rt.sync(bspk::expect{3});
    const uint64_t small_before = rt.stats().small_in_use;
    bspk::error e = expect_error(BSPK_ERR_ARG, "bspk::runtime::messages<T>", __LINE__, [&] {
        for (bspk::message<double>& m : rt.messages<double>()) (void)m;
    });
    CHECK(contains(e.what(), "from pid " + std::to_string(prev)) && contains(e.what(), "4 bytes") &&
          contains(e.what(), "T has 8 bytes"));
    CHECK(contains(e.what(), "bspk::runtime::messages<T> (pid " + std::to_string(me) + ", superstep "));
    CHECK(rt.stats().small_in_use < small_before);  // the refused message was freed
    // 12 bytes are not a whole number of doubles
    e = expect_error(BSPK_ERR_ARG, "bspk::runtime::recv<T>", __LINE__, [&] { (void)rt.recv<double>(); });
    CHECK(contains(e.what(), "12 bytes are not a whole number"));
    bspk::message<int32_t> last = rt.recv<int32_t>();  // the messages after it stay queued
    CHECK(bool(last) && last.size() == 4);
    CHECK(!rt.recv<char>());
}

// bspk::copy with bspk::lookup: a store, a fetch, a local copy and a put in
// one superstep, counted with bspk::expect.
static void dsm_copies(bspk::runtime& rt) {
    const int P = rt.nprocs(), me = rt.pid(), next = (me + 1) % P, prev = (me + P - 1) % P;
    const size_t fe = frame_size(rt) / sizeof(double), n = 2 * fe + 10;
    bspk::region<double> g(rt, "cpp_g", me, n);
    for (size_t i = 0; i < n; i++) g[i] = me * 1e6 + double(i);
    bspk::region<double> src(rt, 8), fetched(rt, 7), local(rt, 4);
    for (size_t i = 0; i < 8; i++) src[i] = 1000.0 * (me + 1) + double(i);
    bspk::remote<double> nx = bspk::lookup<double>(rt, "cpp_g", next);  // maybe provisional: usable at once
    rt.sync();
    bspk::copy(nx + 3, src.slice(0, 5), 5);                                   // store: counted at next
    bspk::copy(fetched, bspk::lookup<double>(rt, "cpp_g", prev) + 11, 7);     // fetch: counted at prev
    bspk::copy(local.slice(0, 4), g.slice(20, 4), 4);                          // local copy: counted here
    const double put_src[2] = {-1.0, -2.0};
    bspk::put(nx + 30, put_src, 2);                                           // buffered store: at next
    rt.sync(bspk::expect{4});
    bool ok = true;
    for (size_t i = 0; i < 5; i++) ok = ok && g[3 + i] == 1000.0 * (prev + 1) + double(i);
    for (size_t i = 0; i < 7; i++) ok = ok && fetched[i] == prev * 1e6 + double(11 + i);
    for (size_t i = 0; i < 4; i++) ok = ok && local[i] == me * 1e6 + double(20 + i);
    CHECK(ok && g[30] == -1.0 && g[31] == -2.0 && g[2] == me * 1e6 + 2);
    CHECK(nx.owner() == next && nx.size() == n);  // resolved by now

    expect_error(BSPK_ERR_RANGE, "bspk::copy", __LINE__, [&] { bspk::copy(nx, src.slice(0, 5), 6); });
    expect_error(BSPK_ERR_RANGE, "bspk::copy", __LINE__, [&] { bspk::copy(fetched, nx, 8); });
    expect_error(BSPK_ERR_RANGE, "bspk::put", __LINE__, [&] { bspk::put(local.slice(0, 1), put_src, 2); });
    expect_error(BSPK_ERR_RANGE, "bspk_copy", __LINE__, [&] { bspk::copy(bspk::lookup<double>(rt, "cpp_g", me) + ptrdiff_t(n - 2), src, 5); });
    expect_error(BSPK_ERR_ARG, "bspk::lookup<T>", __LINE__, [&] { (void)bspk::lookup<float>(rt, "cpp_g", me); });
    expect_error(BSPK_ERR_ARG, "bspk_lookup", __LINE__, [&] { (void)bspk::lookup<double>(rt, "", 0); });
    expect_error(BSPK_ERR_NAME, "bspk_malloc", __LINE__, [&] { bspk::region<double> twice(rt, "cpp_g", me, 4); });
    expect_error(BSPK_ERR_ARG, "bspk_malloc", __LINE__,
                 [&] { bspk::region<double> longname(rt, std::string(70, 'x'), me, 4); });
    struct Huge {
        char b[1 << 21];  // larger than a frame
    };
    expect_error(BSPK_ERR_ARG, "bspk_malloc_contiguous", __LINE__,
                 [&] { bspk::region<Huge> h(rt, 1, bspk::contiguous); });
    if (P > 1) {
        expect_error(BSPK_ERR_PTR, "bspk_send", __LINE__, [&] { rt.send(next, nx.slice(3)); });  // remote: not sendable
        expect_error(BSPK_ERR_ARG, "bspk_copy", __LINE__, [&] { bspk::copy(nx, bspk::lookup<double>(rt, "cpp_g", next), 1); });
    }
    // A list node with a typed pointer inside, fetched and followed.
    bspk::region<ListNode> nodes(rt, "cpp_nodes", me, 2);
    nodes[0] = ListNode{me, bspk::lookup<ListNode>(rt, "cpp_nodes", next) + 1};
    nodes[1] = ListNode{100 + me, bspk::remote<ListNode>()};
    rt.sync();
    bspk::region<ListNode> buf(rt, 1);
    bspk::copy(buf, bspk::lookup<ListNode>(rt, "cpp_nodes", prev), 1);  // counted at prev (me's fetcher: next)
    rt.sync(bspk::expect{1});
    // prev's node 0 points to node 1 of prev's next, which is mine; prev made
    // that pointer with bspk_lookup (maybe provisional): it means the same here
    const bspk::remote<ListNode> follow = buf[0].next;
    CHECK(buf[0].value == prev && bool(follow));
    bspk::copy(buf, follow, 1);  // a local copy
    rt.sync(bspk::expect{1});
    CHECK(buf[0].value == 100 + me && !buf[0].next && follow.owner() == me);

    // bspk::move: a message of two frames sent from element 0 moves into
    // element 0 of g by frame flips (no byte copied); its sender's values land.
    const size_t fe2 = 2 * fe;
    rt.send(next, g.slice(0, fe2));
    rt.sync(bspk::expect{1});
    bspk::message<double> whole = rt.recv<double>();
    bspk::region<double> keep(rt, fe2);
    const bspk_stats before = rt.stats();
    bspk::move(keep, std::move(whole));
    const bspk_stats after = rt.stats();
    CHECK(!whole && whole.size() == 0 && after.frames_flipped == before.frames_flipped + 2 &&
          after.bytes_copied == before.bytes_copied);
    CHECK(keep[0] == prev * 1e6 && keep[fe2 - 1] == prev * 1e6 + double(fe2 - 1));
    rt.send(next, g.slice(0, 4));
    rt.sync(bspk::expect{1});
    bspk::message<double> four = rt.recv<double>();
    expect_error(BSPK_ERR_RANGE, "bspk::move", __LINE__, [&] { bspk::move(keep.slice(0, 3), std::move(four)); });
    CHECK(four.size() == 4);  // an error leaves the source as it was
    const double keep4 = keep[4], keep9 = keep[9];
    bspk::move(keep.slice(5, 4), std::move(four));  // into the middle of a frame: copied
    CHECK(!four && keep[5] == prev * 1e6 + 0 && keep[7] == prev * 1e6 + 2 && keep[4] == keep4 && keep[9] == keep9);
}

// rt.sync with expect and will_send, and their errors.
static void sync_declarations(bspk::runtime& rt) {
    const int P = rt.nprocs(), me = rt.pid(), next = (me + 1) % P;
    bspk::region<int> one(rt, 1);
    one[0] = me;
    std::vector<int> v(size_t(P), 0);
    rt.send(next, one);
    rt.send(me, one);
    rt.send(me, one);
    v[size_t(next)]++;
    v[size_t(me)] += 2;
    expect_error(BSPK_ERR_ARG, "bspk::runtime::sync(will_send)", __LINE__, [&] {
        std::vector<int> wrong(size_t(P) + 1, 0);
        rt.sync(bspk::will_send{wrong});
    });
    const uint64_t s = rt.superstep();
    rt.sync(bspk::will_send{v});
    CHECK(rt.superstep() == s + 1);
    int got = 0;
    for (bspk::message<int>& m : rt.messages<int>()) got += m.size() == 1;
    CHECK(got == 3);
    // expect: any integer type; out of range refused before the C call
    size_t zero = 0;
    rt.sync(bspk::expect{zero});
    expect_error(BSPK_ERR_ARG, "bspk::runtime::sync(expect)", __LINE__, [&] { rt.sync(bspk::expect{-1}); });
    const std::vector<int> zeros(size_t(P), 0);  // nothing sent: as a span, and as pointer + count
    rt.sync(bspk::will_send{bspk::span<const int>(zeros.data(), zeros.size())});
    rt.sync(bspk::will_send{zeros.data(), zeros.size()});
    // a declaration twice in one superstep: BSPK_ERR_MODE from the C call
    CHECK(bspk_expect(0) == BSPK_OK);
    expect_error(BSPK_ERR_MODE, "bspk_expect", __LINE__, [&] { rt.sync(bspk::expect{0}); });
    rt.sync();
}

// rt.sync_allgather<T>: every process's value, one superstep.
static void sync_allgather(bspk::runtime& rt) {
    struct Pair {
        int pid;
        double x;
    };
    const int P = rt.nprocs(), me = rt.pid();
    const uint64_t s = rt.superstep();
    std::vector<Pair> all = rt.sync_allgather(Pair{me, 0.5 * me});
    CHECK(rt.superstep() == s + 1);
    CHECK(all.size() == size_t(P));
    for (int j = 0; j < P; ++j) CHECK(all[size_t(j)].pid == j && all[size_t(j)].x == 0.5 * j);
    bspk::region<int> one(rt, 1);
    rt.send(me, one);  // a message in the superstep: refused, nothing ends
    expect_error(BSPK_ERR_STATE, "bspk_sync_allgather", __LINE__, [&] { (void)rt.sync_allgather(me); });
    rt.sync();
    for (bspk::message<int>& m : rt.messages<int>()) CHECK(m.size() == 1);
}

// bspk::error carries the code, the call, the pid, the superstep and the C
// API's message.
static void error_fields(bspk::runtime& rt) {
    const int P = rt.nprocs(), me = rt.pid();
    bspk::region<double> r(rt, 4);
    rt.sync();
    rt.sync();
    const std::int64_t step = std::int64_t(rt.superstep());
    try {
        rt.send(P + 5, r.slice(0, 1));
        CHECK(false);
    } catch (const bspk::error& e) {
        CHECK(e.code() == BSPK_ERR_PID);
        CHECK(std::string(e.code_name()) == "BSPK_ERR_PID");
        CHECK(e.call() == "bspk_send");
        CHECK(e.pid() == me);
        CHECK(e.superstep() == step);
        CHECK(std::string(e.what()) == bspk_error_string());
        CHECK(contains(e.what(), "bspk_send (pid " + std::to_string(me) + ", superstep " + std::to_string(step) + ")"));
    }
    try {  // caught as the standard base class
        rt.send(-1, r);
        CHECK(false);
    } catch (const std::runtime_error& e) {
        CHECK(contains(e.what(), "bspk_send"));
    }
    expect_error(BSPK_ERR_PID, "bspk_send_buf", __LINE__, [&] { rt.send_buf(P, &me, 1); });
}

// The C++ layer adds no copies: the same bytes_copied (0) as the C API for
// a whole-frame send and receive and a whole-frame store.
static void zero_copy(bspk::runtime& rt) {
    const int P = rt.nprocs(), me = rt.pid(), next = (me + 1) % P;
    const size_t fe = frame_size(rt) / sizeof(double);
    bspk::region<double> w(rt, 2 * fe), z(rt, "cpp_zc", me, 2 * fe);
    for (size_t i = 0; i < w.size(); i++) w[i] = double(i);
    auto nz = bspk::lookup<double>(rt, "cpp_zc", next);
    rt.sync();
    auto copied = [&] { return rt.stats().bytes_copied; };
    // C++: a whole-frame message there and back (the received frames go
    // straight back, as bench/pingpong does), then a whole-frame store
    const uint64_t c0 = copied();
    rt.send(next, w);
    rt.sync(bspk::expect{1});
    bspk::message<double> m = rt.recv<double>();
    CHECK(m.size() == 2 * fe && m[fe] == double(fe));
    rt.send((me + P - 1) % P, m);
    rt.sync(bspk::expect{1});
    for (bspk::message<double>& back : rt.messages<double>()) CHECK(back.size() == 2 * fe && back[1] == 1.0);
    m.reset();
    const uint64_t c1 = copied();
    bspk::copy(nz, w, 2 * fe);
    rt.sync(bspk::expect{1});
    const uint64_t c2 = copied();
    // the same through the C API
    CHECK(bspk_send(next, w.c_ptr(), 2 * fe) == BSPK_OK);
    CHECK(bspk_expect(1) == BSPK_OK && bspk_sync() == BSPK_OK);
    bspk_ptr cm = bspk_recv();
    CHECK(bspk_send((me + P - 1) % P, cm, 2 * fe) == BSPK_OK);
    CHECK(bspk_expect(1) == BSPK_OK && bspk_sync() == BSPK_OK);
    for (bspk_ptr back; !bspk_is_null(back = bspk_recv());) bspk_free(back);
    bspk_free(cm);
    const uint64_t c3 = copied();
    CHECK(bspk_copy(nz.c_ptr(), w.c_ptr(), 2 * fe) == BSPK_OK);
    CHECK(bspk_expect(1) == BSPK_OK && bspk_sync() == BSPK_OK);
    const uint64_t c4 = copied();
    CHECK(c1 - c0 == c3 - c2);                    // messages: as the C API
    CHECK(P == 1 || c1 - c0 == 0);                // zero copy both ways (to itself at p = 1: copied)
    CHECK(c2 - c1 == c4 - c3);                    // the store: as the C API
    CHECK(P == 1 || c2 - c1 == 0);                // whole frames flip (a local copy at p = 1 copies)
    CHECK(z[fe + 1] == double(fe + 1));
}

// Tags (bspk_send_tag): rt.send(dest, s, tag) arrives with m.tag(); an
// untagged send has tag 0; a message keeps its tag when moved out.
static void tagged_messages(bspk::runtime& rt) {
    const int P = rt.nprocs(), me = rt.pid();
    bspk::region<int> o(rt, 2 * size_t(P));
    for (int q = 0; q < P; q++) {
        o[2 * size_t(q)] = me * 100 + q;
        o[2 * size_t(q) + 1] = -1;
        rt.send(q, o.slice(2 * size_t(q), 1), (std::uint64_t{1} << 63) | std::uint64_t(me) << 8 | std::uint64_t(q));
        rt.send(q, o.slice(2 * size_t(q) + 1, 1));
    }
    rt.sync(bspk::expect{2 * P});
    int from = 0;
    bspk::region<int> kept;
    std::uint64_t kept_tag = 0;
    for (bspk::message<int>& m : rt.messages<int>()) {
        const int src = from / 2;
        if (from % 2 == 0) {
            CHECK(m.sender() == src && m[0] == src * 100 + me);
            CHECK(m.tag() == ((std::uint64_t{1} << 63) | std::uint64_t(src) << 8 | std::uint64_t(me)));
            if (src == P - 1) {
                kept_tag = m.tag();
                kept = std::move(m);
            }
        } else {
            CHECK(m.sender() == src && m[0] == -1 && m.tag() == 0);
        }
        ++from;
    }
    CHECK(from == 2 * P);
    CHECK(kept.size() == 1 && kept[0] == (P - 1) * 100 + me && bspk_tag(kept.c_ptr()) == kept_tag);
}

int main(int argc, char** argv) {
    bspk::runtime rt(argc, argv);
    const int me = rt.pid(), P = rt.nprocs();
    basics(rt);
    raii_and_moves(rt);
    element_access(rt);
    messages_round_trip(rt);
    element_size_mismatch(rt);
    dsm_copies(rt);
    sync_declarations(rt);
    sync_allgather(rt);
    error_fields(rt);
    zero_copy(rt);
    tagged_messages(rt);
    bspk::region<int> alive(rt, 3);  // alive at finalize: its destructor must not free it again
    rt.finalize();
    CHECK(rt.finalized());
    rt.finalize();  // a second call does nothing
    expect_error(BSPK_ERR_STATE, "bspk_malloc", __LINE__, [&] { bspk::region<int> late(rt, 1); }, -1);
    expect_error(BSPK_ERR_STATE, "bspk_recv", __LINE__, [&] { (void)rt.recv<int>(); }, -1);
    std::printf("cpp_api pid=%d p=%d: %d checks, %d failures\n", me, P, checks, failures);
    return failures ? 1 : 0;
}
