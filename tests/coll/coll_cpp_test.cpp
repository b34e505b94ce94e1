// tests/coll/coll_cpp_test.cpp -- the C++ collectives of bspk_coll.hpp:
// value and region forms, built-in function objects, lambdas (commutative or
// not), slices, errors thrown as bspk::error. Prints "coll_cpp pid=P p=N: C
// checks, F failures"; exit 0 iff F == 0. Also compiled -fsyntax-only with
// -Werror -pedantic -Wconversion ... as C++17 and C++20 (tests/coll).
#include <bspk.hpp>
#include <bspk_coll.hpp>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace {

long checks = 0, failures = 0;
int me = 0;

void check(bool ok, const std::string& what) {
  checks++;
  if (!ok) {
    failures++;
    std::fprintf(stderr, "FAIL pid %d: %s\n", me, what.c_str());
  }
}

// A number written as decimal digits, concatenated: non-commutative.
struct digits {
  std::uint64_t value;
  std::uint32_t len;
  std::uint32_t pad;
};
digits concat(const digits& a, const digits& b) {
  std::uint64_t m = 1;
  for (std::uint32_t i = 0; i < b.len; i++) m *= 10;
  return digits{a.value * m + b.value, a.len + b.len, 0};
}

}  // namespace

int main(int argc, char** argv) {
  bspk::runtime rt(argc, argv);
  me = rt.pid();
  const int p = rt.nprocs();
  const std::size_t up = static_cast<std::size_t>(p);

  // value forms, built-in ops
  const double s = bspk::allreduce(rt, static_cast<double>(me) + 0.5, std::plus<>{});
  check(s == static_cast<double>(p) * (p - 1) / 2.0 + 0.5 * p, "allreduce(double, plus<>)");
  const std::int64_t mx = bspk::allreduce(rt, static_cast<std::int64_t>(me * 7 % 5), bspk::max{});
  std::int64_t want_mx = 0;
  for (int j = 0; j < p; j++) want_mx = std::max<std::int64_t>(want_mx, j * 7 % 5);
  check(mx == want_mx, "allreduce(int64, bspk::max)");
  const int mn = bspk::allreduce(rt, 100 - me, bspk::min{});
  check(mn == 100 - (p - 1), "allreduce(int, bspk::min)");
  const unsigned x = bspk::allreduce(rt, 1u << me % 32, std::bit_or<>{});
  unsigned want_x = 0;
  for (int j = 0; j < p; j++) want_x |= 1u << j % 32;
  check(x == want_x, "allreduce(unsigned, bit_or<>)");
  const std::int64_t sc = bspk::scan(rt, static_cast<std::int64_t>(me + 1), std::plus<std::int64_t>{});
  check(sc == static_cast<std::int64_t>(me + 1) * (me + 2) / 2, "scan(int64, plus<int64>)");
  const std::int64_t ex = bspk::exscan(rt, static_cast<std::int64_t>(me + 1), std::multiplies<>{});
  std::int64_t want_ex = 1;
  for (int j = 0; j < me; j++) want_ex *= j + 1;
  check(me == 0 ? ex == 1 : ex == want_ex, "exscan(int64, multiplies<>)");
  const float b = bspk::broadcast(rt, static_cast<float>(me) * 2.0f, p - 1);
  check(b == static_cast<float>(p - 1) * 2.0f, "broadcast(float)");
  const int r = bspk::reduce(rt, me, std::plus<>{}, p / 2);
  check(me == p / 2 ? r == p * (p - 1) / 2 : r == me, "reduce(int, plus<>) at root p/2");

  // lambdas: a user op, with state
  int calls = 0;
  auto lsum = [&calls](short a, short c) {
    calls++;
    return static_cast<short>(a + c);
  };
  const short ls = bspk::allreduce(rt, static_cast<short>(me + 1), lsum);
  check(ls == static_cast<short>(p * (p + 1) / 2), "allreduce(short, lambda)");
  check(p == 1 || calls > 0, "the lambda was called");
  // non-commutative: concatenating pid digits must come out in pid order
  const digits d = bspk::allreduce(rt, digits{static_cast<std::uint64_t>(me % 10), 1, 0},
                                   [](const digits& a, const digits& c) { return concat(a, c); });
  digits want_d{0, 0, 0};
  for (int j = 0; j < p; j++) want_d = concat(want_d, digits{static_cast<std::uint64_t>(j % 10), 1, 0});
  check(d.value == want_d.value && d.len == want_d.len, "allreduce(concat lambda) in pid order");
  const digits ds = bspk::scan(rt, digits{static_cast<std::uint64_t>(me % 10 + 1), 1, 0},
                               [](const digits& a, const digits& c) { return concat(a, c); });
  digits want_ds{0, 0, 0};
  for (int j = 0; j <= me; j++) want_ds = concat(want_ds, digits{static_cast<std::uint64_t>(j % 10 + 1), 1, 0});
  check(ds.value == want_ds.value, "scan(concat lambda) in pid order");

  // gather / allgather value forms
  const std::vector<int> g = bspk::gather(rt, me * 3, 0);
  bool gok = me == 0 ? g.size() == up : g.empty();
  for (std::size_t j = 0; gok && j < g.size(); j++) gok = g[j] == static_cast<int>(j) * 3;
  check(gok, "gather(int) value form");
  const std::vector<double> ag = bspk::allgather(rt, me + 0.25);
  bool agok = ag.size() == up;
  for (std::size_t j = 0; agok && j < up; j++) agok = ag[j] == static_cast<double>(j) + 0.25;
  check(agok, "allgather(double) value form");

  // region forms: more than one frame
  const std::size_t n = rt.stats().frame_size / sizeof(double) + 123;
  bspk::region<double> v(rt, n);
  for (std::size_t i = 0; i < n; i++) v[i] = static_cast<double>(i % 1000) + me;
  bspk::allreduce(rt, v, std::plus<>{});
  bool vok = true;
  for (std::size_t i = 0; vok && i < n; i++) {
    double w = 0;
    for (int j = 0; j < p; j++) w += static_cast<double>(i % 1000) + j;
    vok = v[i] == w;
  }
  check(vok, "allreduce(region<double>, plus<>) over frames");
  // a slice: elements [5, 5 + 40) only
  for (std::size_t i = 0; i < n; i++) v[i] = me == 1 % p ? static_cast<double>(i) : -1.0;
  bspk::broadcast(rt, v.slice(5, 40), 1 % p);
  bool slok = true;
  for (std::size_t i = 0; slok && i < n; i++) {
    const bool inside = i >= 5 && i < 45;
    slok = v[i] == (inside || me == 1 % p ? static_cast<double>(i) : -1.0);
  }
  check(slok, "broadcast(slice)");
  // region with a lambda, long path
  bspk::region<std::int64_t> w(rt, n);
  for (std::size_t i = 0; i < n; i++) w[i] = static_cast<std::int64_t>(i) * (me + 1);
  bspk::exscan(rt, w, [](std::int64_t a, std::int64_t c) { return a + c; });
  bool wok = true;
  for (std::size_t i = 0; wok && i < n; i++)
    wok = w[i] == (me == 0 ? static_cast<std::int64_t>(i) : static_cast<std::int64_t>(i) * me * (me + 1) / 2);
  check(wok, "exscan(region<int64>, lambda)");
  // alltoall and gather on regions
  bspk::region<int> src(rt, up * 3), dst(rt, up * 3);
  for (std::size_t i = 0; i < up * 3; i++) src[i] = me * 1000 + static_cast<int>(i);
  bspk::alltoall(rt, dst, src);
  bool aok = true;
  for (std::size_t j = 0; aok && j < up; j++)
    for (std::size_t k = 0; aok && k < 3; k++)
      aok = dst[j * 3 + k] == static_cast<int>(j) * 1000 + me * 3 + static_cast<int>(k);
  check(aok, "alltoall(region<int>)");
  bspk::region<int> gd = me == 0 ? bspk::region<int>(rt, up * 3) : bspk::region<int>();
  bspk::gather(rt, gd, src.slice(0, 3), 0);
  bool gdok = true;
  for (std::size_t j = 0; me == 0 && gdok && j < up; j++)
    for (std::size_t k = 0; gdok && k < 3; k++) gdok = gd[j * 3 + k] == static_cast<int>(j) * 1000 + static_cast<int>(k);
  check(gdok, "gather(region<int>)");

  // errors: a collective after a send (every process) throws BSPK_ERR_STATE
  bspk::region<int> one(rt, 1);
  one[0] = 1;
  rt.send(me, one);
  try {
    bspk::allreduce(rt, one, std::plus<>{});
    check(false, "allreduce after a send did not throw");
  } catch (const bspk::error& e) {
    check(e.code() == BSPK_ERR_STATE && e.call() == "bspk_allreduce" &&
              std::string(e.what()).find("bspk_allreduce (pid ") == 0,
          std::string("allreduce after a send: ") + e.what());
  }
  rt.sync();
  try {
    bspk::region<int> odd(rt, up + 1);
    bspk::alltoall(rt, dst, odd);
    check(p == 1, "alltoall with p + 1 elements did not throw");
  } catch (const bspk::error& e) {
    check(e.code() == BSPK_ERR_ARG, std::string("alltoall with p + 1 elements: ") + e.what());
  }
  // Only the last pid's src is not a multiple of p: every process leaves
  // the collective with an error (none waits for the others), the others'
  // messages name the odd pid, and superstep() is the superstep of the message.
  if (p > 1) {
    bspk::region<int> part(rt, me == p - 1 ? up * 3 + 1 : up * 3);
    bool threw = false;
    try {
      bspk::alltoall(rt, dst, part);
    } catch (const bspk::error& e) {
      threw = true;
      const std::string text = e.what();
      check(e.code() == BSPK_ERR_ARG, "alltoall, one odd src: code " + text);
      check(text.find("superstep " + std::to_string(e.superstep()) + ")") != std::string::npos,
            "alltoall, one odd src: superstep() " + std::to_string(e.superstep()) + " as in the message: " + text);
      check(me == p - 1 ? text.find("not a multiple") != std::string::npos
                        : text.find("pid " + std::to_string(p - 1)) != std::string::npos,
            "alltoall, one odd src: " + text);
    }
    check(threw, "alltoall, one odd src: every process throws");
  }
  // alltoallv: pid me sends j + 1 elements to pid j.
  {
    const std::size_t P = up;
    std::vector<std::size_t> scnt(P), sdis(P), rcnt(P), rdis(P);
    std::size_t so = 0, ro = 0;
    for (std::size_t j = 0; j < P; j++) {
      scnt[j] = j + 1, sdis[j] = so, so += scnt[j];
      rcnt[j] = static_cast<std::size_t>(me) + 1, rdis[j] = ro, ro += rcnt[j];
    }
    bspk::region<int> sv(rt, so), dv(rt, ro);
    for (std::size_t j = 0; j < P; j++)
      for (std::size_t k = 0; k < scnt[j]; k++) sv[sdis[j] + k] = me * 100 + static_cast<int>(j * 10 + k);
    bspk::alltoallv(rt, dv, rcnt, rdis, sv, scnt, sdis);
    bool ok = true;
    for (std::size_t j = 0; j < P; j++)
      for (std::size_t k = 0; k < rcnt[j]; k++)
        ok = ok && dv[rdis[j] + k] == static_cast<int>(j) * 100 + me * 10 + static_cast<int>(k);
    check(ok, "alltoallv(region<int>)");
    // A vector of p - 1 entries on the last pid: it throws, nobody waits.
    std::vector<std::size_t> z(P, 0), zs(me == p - 1 ? P - 1 : P, 0);
    bool threw = false;
    try {
      bspk::alltoallv(rt, dv, z, z, sv, z, zs);
    } catch (const bspk::error& e) {
      threw = true;
      check(e.code() == BSPK_ERR_ARG, std::string("alltoallv, short vector: ") + e.what());
      if (me == p - 1)
        check(std::string(e.what()).find("sdispls has") != std::string::npos, std::string("alltoallv: ") + e.what());
    }
    check(threw || me != p - 1, "alltoallv with a short vector did not throw");
  }
  // LAND / LOR give 1 or 0, even of one value (p = 1; pid 0 of a scan).
  check(bspk::allreduce(rt, 5 * (me + 1), std::logical_and<>{}) == 1, "allreduce(5(pid+1), logical_and) is 1");
  check(bspk::scan(rt, 3, std::logical_and<>{}) == 1, "scan(3, logical_and) is 1");
  check(bspk::allreduce(rt, me == 0 ? 7.5 : 0.0, std::logical_or<>{}) == 1.0, "allreduce(logical_or) is 1.0");

  const int after = bspk::allreduce(rt, 1, std::plus<>{});
  check(after == p, "allreduce after the errors");

  std::printf("coll_cpp pid=%d p=%d: %ld checks, %ld failures\n", me, p, checks, failures);
  std::fflush(stdout);
  rt.finalize();
  return failures == 0 ? 0 : 1;
}
