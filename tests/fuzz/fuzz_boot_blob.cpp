// fuzz_boot_blob -- libFuzzer target for what processes exchange through the
// bootstrap at start-up, as far as it is callable on its own:
//  * boot/auth.h from_hex / to_hex (the hub record "<key hex>;<port>,<addr>,..."
//    of boot/slurm.cpp start_hub_published, BSPK_JOB_KEY) and key_from_env;
//  * boot/protocol.h unpack_blobs / pack_blobs (every all-gather result from
//    bspkrun or the job hub);
//  * boot/slurm.h first_host (SLURM_*_NODELIST) and hub_ports (BSPK_HUB_PORT);
//  * auth::public_key_for.
// The other start-up parsers are inline in larger functions and are not
// reachable without a running job (see tests/fuzz/README.md).
// Properties, beyond "no crash and no undefined behaviour":
//  * from_hex accepts exactly an even number of hex digits, gives half as many
//    bytes, and to_hex of the result is the input in lower case; from_hex(to_hex(x)) == x;
//  * key_from_env (BSPK_JOB_KEY) accepts exactly 64 hex digits, giving those 32
//    bytes, and otherwise throws bspk::Error (BSPK_ERR_ARG); unset or empty gives "";
//  * unpack_blobs(p) succeeding implies pack_blobs(result) == p; the hub record
//    and blobs built from the input round-trip through pack/unpack and hex;
//  * first_host: of a well-formed hostlist built from the input ("pre[01-03,7]suf,x")
//    the first host ("pre01suf"); of any list no ',' and nothing longer than the
//    list, and the list's first element itself when the list has no '[';
//  * hub_ports gives 8 consecutive ports in [12000, 32767] when BSPK_HUB_PORT is
//    unset; when set, one port equal to the decimal value, or bspk::Error;
//  * public_key_for is 32 bytes and deterministic.
#include <bspk.h>
#include <fuzzer/FuzzedDataProvider.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/error.h"
#include "boot/auth.h"
#include "boot/protocol.h"
#include "boot/slurm.h"

#define FUZZ_TARGET "fuzz_boot_blob"
#include "fuzz_util.h"

namespace {

using namespace bspk::boot;

#define CHECK(cond) FUZZ_CHECK(cond)

bool all_hex(const std::string& s) {
  for (unsigned char c : s)
    if (!std::isxdigit(c)) return false;
  return true;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// NUL-terminated copy (what setenv stores).
std::string c_str_of(const std::string& s) { return s.substr(0, s.find('\0')); }

void check_hex(const std::string& s) {
  std::string b = "stale";
  const bool ok = auth::from_hex(s, &b);
  CHECK(ok == (s.size() % 2 == 0 && all_hex(s)));
  if (ok) {
    CHECK(b.size() == s.size() / 2);
    CHECK(auth::to_hex(b) == lower(s));
  } else {
    CHECK(b == "stale");  // untouched on failure
  }
  const std::string h = auth::to_hex(s);
  CHECK(h.size() == 2 * s.size() && all_hex(h) && h == lower(h));
  CHECK(auth::from_hex(h, &b) && b == s);
}

void check_job_key(const std::string& v) {
  const std::string val = c_str_of(v);
  setenv("BSPK_JOB_KEY", val.c_str(), 1);
  try {
    const std::string key = auth::key_from_env();
    if (val.empty()) {
      CHECK(key.empty());
    } else {
      CHECK(val.size() == 2 * auth::kKeyBytes && all_hex(val));
      CHECK(key.size() == auth::kKeyBytes && auth::to_hex(key) == lower(val));
    }
  } catch (const bspk::Error& e) {
    CHECK(e.code() == BSPK_ERR_ARG);
    CHECK(!(val.size() == 2 * auth::kKeyBytes && all_hex(val)));
  }
  unsetenv("BSPK_JOB_KEY");
}

void check_blobs(const std::string& p) {
  std::vector<std::string> out{"stale"};
  if (unpack_blobs(p, &out)) CHECK(pack_blobs(out) == p);
}

void check_first_host(const std::string& list) {
  const std::string h = first_host(list);
  CHECK(h.size() <= list.size());
  CHECK(h.find(',') == std::string::npos);
  if (list.find('[') == std::string::npos) CHECK(h == list.substr(0, list.find(',')));
}

// A well-formed Slurm hostlist built from `seed` ("<prefix>[<ranges>]<suffix>,<more>"):
// first_host gives the prefix, the first range's first number and the suffix.
void check_first_host_wellformed(const std::string& seed) {
  FuzzedDataProvider in(reinterpret_cast<const uint8_t*>(seed.data()), seed.size());
  static const char kName[] = "abcdefghijklmnopqrstuvwxyz0123456789.-_";
  auto name = [&](size_t max) {
    std::string n;
    for (size_t k = in.ConsumeIntegralInRange<size_t>(0, max); k > 0; --k)
      n += kName[in.ConsumeIntegralInRange<size_t>(0, sizeof kName - 2)];
    return n;
  };
  auto number = [&] {
    std::string d = std::to_string(in.ConsumeIntegralInRange<unsigned>(0, 99999));
    return std::string(in.ConsumeIntegralInRange<size_t>(0, 3), '0') + d;  // zero-padded, as Slurm writes them
  };
  std::string prefix = name(12);
  if (prefix.empty()) prefix = "n";
  std::string list = prefix, want = prefix;
  if (in.ConsumeBool()) {
    const std::string first = number();
    list += "[" + first;
    want += first;
    if (in.ConsumeBool()) list += "-" + number();
    for (size_t k = in.ConsumeIntegralInRange<size_t>(0, 3); k > 0; --k) {
      list += "," + number();
      if (in.ConsumeBool()) list += "-" + number();
    }
    const std::string suffix = name(6);
    list += "]" + suffix;
    want += suffix;
  }
  for (size_t k = in.ConsumeIntegralInRange<size_t>(0, 2); k > 0; --k) list += "," + name(8) + (in.ConsumeBool() ? "[1-2]" : "");
  if (first_host(list) != want) {
    std::fprintf(stderr, "fuzz_boot_blob: first_host(\"%s\") = \"%s\", want \"%s\"\n", list.c_str(),
                 first_host(list).c_str(), want.c_str());
    CHECK(!"first_host gives the first host of a well-formed list");
  }
}

void check_hub_ports(const std::string& v, uint64_t job, uint64_t step) {
  unsetenv("BSPK_HUB_PORT");
  std::vector<uint16_t> p = hub_ports(job, step);
  CHECK(p.size() == 8);
  for (size_t k = 0; k < p.size(); ++k) CHECK(p[k] == p[0] + k && p[k] >= 12000 && p[k] <= 32767);
  CHECK(hub_ports(job, step) == p);  // the same on every process

  const std::string val = c_str_of(v);
  if (val.empty()) return;
  setenv("BSPK_HUB_PORT", val.c_str(), 1);
  try {
    p = hub_ports(job, step);
    CHECK(p.size() == 1 && p[0] >= 1);
    // The value must be a decimal integer (glibc strtoll: spaces and a sign allowed) equal to the port.
    char* end = nullptr;
    long long x = std::strtoll(val.c_str(), &end, 10);
    CHECK(*end == '\0' && x == p[0]);
  } catch (const bspk::Error& e) {
    CHECK(e.code() == BSPK_ERR_ARG);
  }
  unsetenv("BSPK_HUB_PORT");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const uint64_t job = in.ConsumeIntegral<uint64_t>(), step = in.ConsumeIntegral<uint64_t>();
  const std::string a = in.ConsumeRandomLengthString(256);
  const std::string b = in.ConsumeRandomLengthString(256);
  const std::string rest = in.ConsumeRemainingBytesAsString();

  check_hex(a);
  check_hex(rest);
  check_job_key(a);
  check_blobs(rest);
  check_blobs(a);
  check_first_host(b);
  check_first_host(rest);
  check_first_host_wellformed(b);
  check_hub_ports(b, job, step);

  // A hub record as pid 0 publishes it, carried in an all-gather result with
  // the other pids' (empty) records: survives the packing and the hex.
  const std::string key = auth::public_key_for(a);
  CHECK(key.size() == auth::kKeyBytes && auth::public_key_for(a) == key);
  const std::string rec = auth::to_hex(key) + ";" + std::to_string(static_cast<uint16_t>(job)) + "," + c_str_of(b);
  std::vector<std::string> all{rec, std::string(), a, rest};
  std::vector<std::string> back;
  CHECK(unpack_blobs(pack_blobs(all), &back) && back == all);
  const size_t semi = back[0].find(';');
  std::string key2;
  CHECK(semi == 2 * auth::kKeyBytes && auth::from_hex(back[0].substr(0, semi), &key2) && key2 == key);

  // parse_hub_record (boot/slurm.h) on arbitrary bytes: never throws; what it
  // accepts has a 32-byte key, a port in [1, 65535] and non-empty hosts, and
  // re-encodes to the same record (up to hex case). Its own records round-trip.
  for (const std::string* r : {&a, &b, &rest}) {
    std::string k;
    uint16_t port = 0;
    std::vector<std::string> hosts;
    if (parse_hub_record(*r, &k, &port, &hosts)) {
      CHECK(k.size() == auth::kKeyBytes && port >= 1 && !hosts.empty());
      for (const auto& h : hosts) CHECK(!h.empty() && h.find(',') == std::string::npos);
    }
  }
  std::vector<std::string> hs;
  for (size_t i = 0, j; i <= b.size(); i = j + 1) {  // b split at ',' into non-empty hosts
    j = b.find(',', i);
    if (j == std::string::npos) j = b.size();
    if (j > i) hs.push_back(b.substr(i, j - i));
  }
  const uint16_t port = static_cast<uint16_t>(job % 65535 + 1);
  if (!hs.empty()) {
    std::string k;
    uint16_t p2 = 0;
    std::vector<std::string> h2;
    CHECK(parse_hub_record(hub_record(key, port, hs), &k, &p2, &h2) && k == key && p2 == port && h2 == hs);
  }
  return 0;
}
