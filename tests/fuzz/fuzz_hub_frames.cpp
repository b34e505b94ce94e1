// fuzz_hub_frames -- libFuzzer target for the framed stream the job hub and
// bspkrun read from every connection: bspk::boot::FrameReader (boot/protocol.h),
// and the parsers every message taken from it reaches: parse_hello,
// version_mismatch (the hub's and the launcher's first message) and
// unpack_blobs (an AllgatherResult), plus pack_blobs / frame / hello_payload.
//
// The input is written into a non-blocking Unix socketpair in chunks whose
// sizes (and the per-call read limits of fill()) come from the input, with
// the frame limit from the input too (e.g. hub.h's kPreAuthFrame, 4096, as
// the hub uses before a peer has proven its key).
// Properties, beyond "no crash and no undefined behaviour":
//  * fill() never reports end of stream or an error on a live socket;
//  * next() returns exactly the frames an independent parse of the bytes
//    written finds, in order, none with a payload longer than max_frame - 1,
//    and frame(type, payload) reproduces their bytes;
//  * buffered() plus the bytes taken never exceeds the bytes written, and
//    equals them once the socket is drained; bad() is set exactly when the
//    next frame's length is 0 or above the limit;
//  * parse_hello accepts exactly payloads of >= kHelloFixed bytes and splits
//    them faithfully; version_mismatch is "" exactly for this build's protocol,
//    wire version and byte-order mark; hello_payload(rank) is accepted;
//  * unpack_blobs(p) succeeding implies pack_blobs(result) == p (one encoding
//    per list), and unpack_blobs(pack_blobs(x)) == x for x built from the input.
#include <fcntl.h>
#include <fuzzer/FuzzedDataProvider.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/version.h"
#include "boot/protocol.h"

#define FUZZ_TARGET "fuzz_hub_frames"
#include "fuzz_util.h"

namespace {

using namespace bspk::boot;

#define CHECK(cond) FUZZ_CHECK(cond)

// One socketpair for the whole run: [0] written, [1] read by FrameReader.
int* sockets() {
  static int sv[2] = {-1, -1};
  if (sv[0] < 0) {
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
      std::perror("fuzz_hub_frames: socketpair");
      std::abort();
    }
    for (int fd : sv) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  return sv;
}

uint64_t splitmix(uint64_t* s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint32_t u32_at(const std::string& s, size_t off) {
  uint32_t v;
  std::memcpy(&v, s.data() + off, 4);
  return v;
}

void check_hello(const std::string& pl) {
  HelloInfo h;
  const bool ok = parse_hello(pl, &h);
  CHECK(ok == (pl.size() >= kHelloFixed));
  if (!ok) return;
  CHECK(static_cast<uint32_t>(h.rank) == u32_at(pl, 0));
  CHECK(static_cast<uint32_t>(h.os_pid) == u32_at(pl, 4));
  CHECK(h.protocol == u32_at(pl, 8));
  CHECK(h.wire == u32_at(pl, 12));
  CHECK(h.bom == u32_at(pl, 16));
  CHECK(h.rest == pl.substr(kHelloFixed));
  const std::string why = version_mismatch(h);
  const bool same = h.bom == kByteOrderMark && h.protocol == kProtocolVersion &&
                    h.wire == bspk::version::kWireVersion;
  CHECK(why.empty() == same);
  // The hub's split of the rest: job tag, '\0', host name (hub.cpp on_hello).
  size_t z = h.rest.find('\0');
  std::string tag = h.rest.substr(0, z), host = z == std::string::npos ? "?" : h.rest.substr(z + 1);
  CHECK(tag.size() <= h.rest.size() && host.size() <= h.rest.size() + 1);
}

void check_blobs(const std::string& pl) {
  std::vector<std::string> out{"stale"};
  if (unpack_blobs(pl, &out)) CHECK(pack_blobs(out) == pl);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  uint32_t max_frame = kMaxFrame;
  switch (in.ConsumeIntegral<uint8_t>() & 3) {
    case 0: max_frame = 4096; break;  // hub.h kPreAuthFrame: before a proven Hello
    case 1: max_frame = kMaxFrame; break;
    case 2: max_frame = in.ConsumeIntegralInRange<uint32_t>(1, 1u << 16); break;
    case 3: max_frame = in.ConsumeIntegral<uint32_t>(); break;
  }
  uint64_t seed = in.ConsumeIntegral<uint64_t>();
  const int32_t rank = in.ConsumeIntegral<int32_t>();
  const std::string stream = in.ConsumeRemainingBytesAsString();

  {  // what a process sends first must pass the other end's checks
    HelloInfo h;
    CHECK(parse_hello(hello_payload(rank), &h) && h.rank == rank && version_mismatch(h).empty() && h.rest.empty());
  }

  int* sv = sockets();
  FrameReader rd;
  rd.set_max_frame(max_frame);
  size_t written = 0, consumed = 0, ref = 0;  // ref: the independent parser's position in stream
  std::vector<std::string> payloads;

  auto drain = [&] {
    Msg type;
    std::string pl;
    while (rd.next(&type, &pl)) {
      // The independent parse of the bytes: a whole, valid frame at ref.
      CHECK(stream.size() - ref >= 4);
      const uint32_t len = u32_at(stream, ref);
      CHECK(len != 0 && len <= max_frame);
      CHECK(stream.size() - ref - 4 >= len);
      CHECK(pl.size() == len - 1 && pl.size() <= max_frame - 1);
      CHECK(static_cast<uint8_t>(type) == static_cast<uint8_t>(stream[ref + 4]));
      CHECK(stream.compare(ref + 5, len - 1, pl) == 0);
      CHECK(frame(type, pl) == stream.substr(ref, 4 + size_t{len}));
      ref += 4 + size_t{len};
      consumed += 4 + size_t{len};
      CHECK(consumed <= written);
      check_hello(pl);
      check_blobs(pl);
      if (payloads.size() < 64) payloads.push_back(pl);
    }
  };

  while (written < stream.size()) {
    const size_t left = stream.size() - written;
    size_t chunk = 1 + splitmix(&seed) % (left < 512 ? left : 512);
    if (splitmix(&seed) % 4 == 0) chunk = left;
    ssize_t n = ::send(sv[0], stream.data() + written, chunk, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) {
      CHECK(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
      n = 0;  // the socket buffer is full: read, then write again
    }
    written += static_cast<size_t>(n);
    const uint64_t r = splitmix(&seed);
    const size_t max_read = r % 3 == 0 ? SIZE_MAX : 1 + (r >> 8) % 1024;
    CHECK(rd.fill(sv[1], n == 0 ? SIZE_MAX : max_read));
    CHECK(rd.buffered() + consumed <= written);
    drain();
  }
  CHECK(rd.fill(sv[1]));  // the rest of the socket: now empty
  drain();
  CHECK(rd.buffered() + consumed == written);
  CHECK(written == stream.size());
  {
    char c;
    CHECK(::recv(sv[1], &c, 1, MSG_DONTWAIT) < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
  }

  // What is left: a malformed frame header (then bad()), or part of a frame.
  const size_t rest = stream.size() - ref;
  CHECK(rd.buffered() == rest);
  if (rest >= 4) {
    const uint32_t len = u32_at(stream, ref);
    const bool malformed = len == 0 || len > max_frame;
    CHECK(rd.bad() == malformed);
    if (!malformed) CHECK(rest - 4 < len);  // else next() should have taken it
  } else {
    CHECK(!rd.bad());
  }

  // Blob round trip on a list built from the input: the frames' payloads and
  // the raw stream cut into pieces.
  std::vector<std::string> x = payloads;
  for (size_t p = 0; p < stream.size() && x.size() < 128;) {
    size_t k = splitmix(&seed) % 64;
    x.push_back(stream.substr(p, k));
    p += k;
  }
  if (splitmix(&seed) % 8 == 0) x.clear();
  const std::string packed = pack_blobs(x);
  std::vector<std::string> y{"stale"};
  CHECK(unpack_blobs(packed, &y) && y == x);
  check_blobs(packed);
  // A truncated packing is refused (pack_blobs of a non-empty list has >= 4 bytes after the count).
  if (!packed.empty()) CHECK(!unpack_blobs(packed.substr(0, packed.size() - 1), &y));
  return 0;
}
