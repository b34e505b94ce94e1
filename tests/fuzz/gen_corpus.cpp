// gen_corpus -- writes the seed corpora of the fuzz targets (corpus/<target>/)
// from the runtime's real encoders (hello_payload, frame, pack_blobs, the mp
// Data header as MessagePassing::send fills it, boot::auth::to_hex).
//   build-fuzz/tests/fuzz/fuzz_corpus_gen tests/fuzz/corpus
// The targets read their input with FuzzedDataProvider: integers from the end
// (most significant byte last in the file), strings and the remaining bytes
// from the front. Enc mirrors that, and every seed is decoded again here with
// FuzzedDataProvider to check the encoding.
#include <fuzzer/FuzzedDataProvider.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "base/config.h"
#include "boot/auth.h"
#include "boot/protocol.h"
#include "mp/wire.h"
#include "sync/wire.h"

namespace {

using namespace bspk;

// Builds a FuzzedDataProvider input: calls in the order the target consumes.
struct Enc {
  std::string front;
  std::vector<uint8_t> back;  // in consumption order (reversed into the file)
  template <class T>
  void integral_in_range(T lo, T hi, T v) {
    using U = std::make_unsigned_t<T>;
    const uint64_t range = static_cast<uint64_t>(static_cast<U>(hi) - static_cast<U>(lo));
    const uint64_t x = static_cast<uint64_t>(static_cast<U>(v) - static_cast<U>(lo));
    int n = 0;
    for (int off = 0; off < static_cast<int>(sizeof(T)) * 8 && (range >> off) > 0; off += 8) ++n;
    for (int k = n - 1; k >= 0; --k) back.push_back(static_cast<uint8_t>(x >> (8 * k)));
  }
  template <class T>
  void integral(T v) { integral_in_range<T>(std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), v); }
  void boolean(bool b) { integral<uint8_t>(b ? 1 : 0); }
  // ConsumeRandomLengthString: a backslash is doubled; "\\" then another byte ends the string.
  void random_length_string(const std::string& s) {
    for (char c : s) {
      front += c;
      if (c == '\\') front += '\\';
    }
    front += "\\x";
  }
  void bytes(const std::string& s) { front += s; }
  std::string done(const std::string& remaining = "") const {
    std::string out = front + remaining;
    for (auto it = back.rbegin(); it != back.rend(); ++it) out += static_cast<char>(*it);
    return out;
  }
};

std::string g_dir;
int g_count = 0;

void write(const std::string& target, const std::string& name, const std::string& data) {
  const std::string dir = g_dir + "/" + target;
  mkdir(dir.c_str(), 0755);
  const std::string path = dir + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(data.data(), 1, data.size(), f) != data.size() || std::fclose(f) != 0) {
    std::perror(path.c_str());
    std::exit(1);
  }
  ++g_count;
}

void expect(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "gen_corpus: self-check failed: %s\n", what);
    std::exit(1);
  }
}

std::string raw(const void* p, size_t n) { return std::string(static_cast<const char*>(p), n); }

// ---- fuzz_mp_header: mode, frame size, then (raw mode) payload and header ----
void mp_header_seed(const std::string& name, uint8_t mode, unsigned log2_fs, const wire::Header& h, uint64_t praw) {
  Enc e;
  e.integral<uint8_t>(mode);
  e.boolean(true);  // frame size: a power of two in 4 KiB .. 1 MiB
  e.integral_in_range<unsigned>(12, 20, log2_fs);
  e.integral<uint64_t>(praw);
  e.bytes(raw(&h, sizeof h));
  const std::string data = e.done();
  FuzzedDataProvider d(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  expect(d.ConsumeIntegral<uint8_t>() == mode && d.ConsumeBool() && d.ConsumeIntegralInRange<unsigned>(12, 20) == log2_fs &&
             d.ConsumeIntegral<uint64_t>() == praw && d.ConsumeBytes<uint8_t>(64).size() == 64,
         "mp_header encoding");
  write("fuzz_mp_header", name, data);
}

wire::Header data_header(uint32_t elem_size, uint32_t skew, uint64_t n, uint32_t frame, size_t fs) {
  wire::Header h{};
  h.magic = wire::magic_word();
  h.kind = mp::kData;
  h.step = 3;
  h.src = 1;
  h.nelems = n;
  h.elem_size = elem_size;
  const uint64_t epf = fs / elem_size;
  h.skew = n ? skew : 0;
  h.nframes = n ? static_cast<uint32_t>((skew + n + epf - 1) / epf) : 0;
  h.frame = frame;
  return h;
}

void mp_header() {
  // mode 2: payload = (low 20 bits of the u64) * elem_size.
  wire::Header h = data_header(8, 0, 100, 0, 1 << 16);
  expect(mp::check_data_header(h, 800, 1 << 16) == nullptr, "one-frame header");
  mp_header_seed("data_one_frame", 2, 16, h, 100);
  h = data_header(8, 10, 2000, 1, 4096);  // 512 per frame, 4 frames; frame 1 is full
  expect(h.nframes == 4 && mp::check_data_header(h, 512 * 8, 4096) == nullptr, "multi-frame header");
  mp_header_seed("data_frame1_of4", 2, 12, h, 512);
  h = data_header(8, 10, 2000, 3, 4096);  // the last frame: 2000 - 502 - 2*512 = 474
  expect(mp::check_data_header(h, 474 * 8, 4096) == nullptr, "last-frame header");
  mp_header_seed("data_last_frame", 2, 12, h, 474);
  h = data_header(4, 0, 0, 0, 1 << 16);
  expect(mp::check_data_header(h, 0, 1 << 16) == nullptr, "empty header");
  mp_header_seed("data_empty", 0, 16, h, 0);
  // mode 1: a header built as the sender does, from the parameters after the frame size.
  Enc e;
  e.integral<uint8_t>(1);
  e.boolean(true);
  e.integral_in_range<unsigned>(12, 20, 16);
  e.integral_in_range<uint32_t>(1, 1 << 16, 24);                             // elem_size
  const uint64_t epf = (1 << 16) / 24, max_n = (mp::kMaxFrames - 2) * epf + epf - 1;
  e.integral_in_range<uint64_t>(0, max_n, 100000);                          // nelems
  e.integral_in_range<uint64_t>(0, epf - 1, 7);                             // skew
  e.integral_in_range<uint32_t>(0, static_cast<uint32_t>((7 + 100000 + epf - 1) / epf) - 1, 5);  // frame
  write("fuzz_mp_header", "constructed", e.done());
}

// ---- fuzz_hub_frames: limit mode [, limit], chunking seed, rank; the stream ----
void hub_frames_seed(const std::string& name, uint8_t mode, uint64_t seed, int32_t rank, const std::string& stream) {
  Enc e;
  e.integral<uint8_t>(mode);
  e.integral<uint64_t>(seed);
  e.integral<int32_t>(rank);
  write("fuzz_hub_frames", name, e.done(stream));
}

std::string u32s(uint32_t a, uint32_t b) { return raw(&a, 4) + raw(&b, 4); }

void hub_frames() {
  using boot::Msg;
  std::string hello = boot::hello_payload(2);
  const int32_t os_pid = 4242;  // not this generator's: the seeds stay the same from run to run
  std::memcpy(&hello[4], &os_pid, 4);
  boot::HelloInfo hi;
  expect(boot::parse_hello(hello, &hi) && hi.rank == 2 && boot::version_mismatch(hi).empty(), "hello");
  // bspkrun: Hello, Allgather, AllgatherResult, Heartbeat, Finalized.
  std::string s = boot::frame(Msg::Hello, hello) + boot::frame(Msg::Allgather, std::string("node0\t2")) +
                  boot::frame(Msg::AllgatherResult, boot::pack_blobs({"node0\t2", "node1\t4", ""})) +
                  boot::frame(Msg::Heartbeat, u32s(7, 1)) + boot::frame(Msg::Finalized, "");
  hub_frames_seed("launcher_session", 1, 1, 2, s);
  // The hub before authentication (4096-byte limit): a Hello with tag, host, nonce and proof.
  std::string body = hello + "slurm.42.0" + std::string(1, '\0') + "node7";
  const std::string nonce(boot::auth::kNonceBytes, 'n');
  const std::string key(boot::auth::kKeyBytes, 'k');
  std::string hub_hello = body + nonce + boot::auth::mac(key, "bspk-hub-hello", {std::string(32, 'c'), nonce, body});
  hub_frames_seed("hub_hello", 0, 2, 0, boot::frame(Msg::Hello, hub_hello));
  // A frame cut in the middle, and one whose length exceeds the limit.
  std::string cut = boot::frame(Msg::Abort, raw("\x01\0\0\0", 4) + "bspk_abort called");
  hub_frames_seed("cut_frame", 1, 3, 0, boot::frame(Msg::Exiting, u32s(9, 0)) + cut.substr(0, cut.size() / 2));
  std::string big = boot::frame(Msg::Allgather, std::string(5000, 'x'));
  hub_frames_seed("too_long_preauth", 0, 4, 1, boot::frame(Msg::Hello, hello) + big);
  // Fail from the hub: i32 code, i32 failed pid, report.
  int32_t code = 3, failed = 1;
  hub_frames_seed("hub_fail", 1, 5, 0,
                  boot::frame(Msg::Fail, raw(&code, 4) + raw(&failed, 4) + "pid 1 died") +
                      boot::frame(Msg::Refused, "wrong version"));
}

// ---- fuzz_boot_blob: job, step; strings a, b; the rest ----
void boot_blob_seed(const std::string& name, uint64_t job, uint64_t step, const std::string& a, const std::string& b,
                    const std::string& rest) {
  Enc e;
  e.integral<uint64_t>(job);
  e.integral<uint64_t>(step);
  e.random_length_string(a);
  e.random_length_string(b);
  const std::string data = e.done(rest);
  FuzzedDataProvider d(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  expect(d.ConsumeIntegral<uint64_t>() == job && d.ConsumeIntegral<uint64_t>() == step &&
             d.ConsumeRandomLengthString(256) == a && d.ConsumeRandomLengthString(256) == b &&
             d.ConsumeRemainingBytesAsString() == rest,
         "boot_blob encoding");
  write("fuzz_boot_blob", name, data);
}

void boot_blob() {
  const std::string key = boot::auth::to_hex(std::string(boot::auth::kKeyBytes, '\x5a'));
  boot_blob_seed("hub_record", 1234, 0, key, "node[01-03,07],gpu5", key + ";40123,10.0.0.1,192.168.7.2");
  uint64_t meta[3] = {0x7f0000001000ull, 42, 64};
  boot_blob_seed("allgather_result", 99, 1, "DEADbeef01", "h0,h1",
                 boot::pack_blobs({"node0\t8", "node1\t8", raw(meta, sizeof meta) + "fi_addr"}));
  boot_blob_seed("hub_port", 7, 3, "0", "12345", "board.name\nrings.name");
  boot_blob_seed("odd_hex", 0, 0, "abc", "a]b[c-d],e", "xyz\\");
}

// ---- fuzz_env: lo, hi, typical range?, row, fixed choices?, [choices], value ----
void env_seed(const std::string& name, const char* var, const std::string& value, bool fixed_choices = true,
              const std::string& choices = "") {
  Enc e;
  e.integral<int64_t>(0);
  e.integral<int64_t>(4096);
  e.boolean(false);
  auto v = config::find(var);
  expect(v.has_value(), "config variable");
  e.integral<uint8_t>(static_cast<uint8_t>(*v));  // the row index (Var is in table order)
  e.boolean(fixed_choices);
  if (!fixed_choices) e.random_length_string(choices);
  write("fuzz_env", name, e.done(value));
}

void env() {
  env_seed("size_k", "BSPK_FRAME_SIZE", "64K");
  env_seed("size_mib", "BSPK_FRAME_SIZE", "1MiB");
  env_seed("size_max", "BSPK_POOL_LIMIT", "18446744073709551615");
  env_seed("size_g_edge", "BSPK_POOL_LIMIT", "17179869183G");  // 2^64 - 2^30: the largest G value
  env_seed("int", "BSPK_MAX_AHEAD", "16");
  env_seed("int_negative", "BSPK_SPIN_US", "-5");
  env_seed("seconds", "BSPK_SYNC_TIMEOUT", "0.5");
  env_seed("seconds_off", "BSPK_FAILURE_TIMEOUT", "off");
  env_seed("bool", "BSPK_STATS", "yes");
  env_seed("choice", "BSPK_ERRORS", "quiet");
  env_seed("choice_custom", "BSPK_COUNT_EXCHANGE", "tree", false, "auto|board|messages|direct|halving|tree");
  env_seed("job_key", "BSPK_JOB_KEY", std::string(64, 'a'));
  env_seed("hub_port", "BSPK_HUB_PORT", "40123");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR (tests/fuzz/corpus)\n", argv[0]);
    return 2;
  }
  g_dir = argv[1];
  mkdir(g_dir.c_str(), 0755);
  mp_header();
  hub_frames();
  boot_blob();
  env();
  std::printf("gen_corpus: %d seeds written under %s\n", g_count, g_dir.c_str());
  return 0;
}
