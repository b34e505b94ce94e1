// boot/protocol.h -- the launcher <-> process protocol: bspkrun over a Unix
// stream socket, and the job hub (boot/hub.h) over TCP under Slurm.
//
// Each message: u32 length (of what follows), u8 type, payload. Native byte
// order: a hub refuses a process whose byte-order mark differs (the Hello
// carries one), so both ends always agree. The launcher or hub answers an
// Allgather only once every process has sent its own, so it doubles as a
// barrier.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace bspk::boot {

constexpr uint32_t kProtocolVersion = 4;  // 2: authenticated hub (Challenge, Welcome); 3: start-up record carries the job token;
                                          // 4: Heartbeat and Exiting carry the layer's superstep

enum class Msg : uint8_t {
  Hello = 1,            // i32 rank, i32 os pid, u32 protocol version, u32 wire version, u32 byte-order mark
  Allgather = 2,        // blob
  AllgatherResult = 3,  // u32 n, then n x (u32 len, bytes)
  Abort = 4,            // i32 exit code, message
  Finalized = 5,        // (empty)
  Refused = 6,          // launcher -> process: reason (version/byte-order mismatch)
  // Hub only (boot/hub.h):
  Heartbeat = 7,        // both ways: u32 superstep, u32 state (ProcState), then process -> hub: u32 layer
                        // superstep + 1 (0: none; bspk_set_layer_superstep); "I am alive"
  Exiting = 8,          // process -> hub: u32 superstep, u32 layer superstep + 1, u32 ProcState; exit() without bspk_finalize
  Fail = 9,             // hub -> process: i32 exit code, i32 failed pid (-1: none), report
  Challenge = 10,       // hub -> process, first thing on a connection: the hub's nonce (boot/auth.h)
  Welcome = 11,         // hub -> process after a proven Hello: proof, then a Heartbeat's payload
};

// Hello payload: i32 rank, i32 os pid, u32 protocol version, u32 wire version,
// u32 byte-order mark; the hub's Hello continues with the job tag, '\0', the
// host name.
constexpr size_t kHelloFixed = 20;
constexpr uint32_t kByteOrderMark = 0x01020304;

// The wire version this process announces at start-up: base/version.h's, or
// BSPK_TEST_WIRE_VERSION (a test hook that makes one process look like another
// build, to exercise the refusal).
uint32_t announced_wire_version();
std::string hello_payload(int rank);

// "computing", "waiting in bspk_sync", ... for a ProcState value (reports).
const char* state_name(uint32_t state);

struct HelloInfo {
  int32_t rank = -1, os_pid = 0;
  uint32_t protocol = 0, wire = 0, bom = 0;
  std::string rest;  // hub Hello: job tag, '\0', host name
};
// Parses a Hello payload; false if it is too short.
bool parse_hello(const std::string& payload, HelloInfo* out);
// "" if the process speaks this build's protocol, wire version and byte order;
// else why it must be refused, naming its pid and both versions.
std::string version_mismatch(const HelloInfo& h);

// Shared status page (BSPK_STATUS_FILE): one slot per rank, written by the
// process, read by the launcher when a process dies.
struct StatusSlot {
  volatile uint32_t superstep;
  volatile uint32_t state;  // ProcState
  volatile int32_t os_pid;
  // The layer's own superstep + 1 (bspk_set_layer_superstep), 0 while there
  // is none; `layer` (NUL-terminated) is written before it first turns
  // non-zero and never changes after.
  volatile uint32_t layer_step1;
  char layer[16];
  uint32_t pad[8];
};
static_assert(sizeof(StatusSlot) == 64);

// How a report names a process's superstep. `step`: BSPk's; `layer` and
// `layer_step1` (the layer's superstep + 1, 0: none): a layer's own count
// (bspk_set_layer_superstep); `state`: what the process was doing, or NULL.
//   "superstep 8"            "superstep 8 (computing)"
//   "BSPlib superstep 5 (BSPk superstep 8)"
//   "BSPlib superstep 5 (computing; BSPk superstep 8)"
std::string superstep_text(uint32_t step, const char* layer, uint32_t layer_step1, const char* state = nullptr);

// What a report says a process did when it left the job early, named as
// the program sees it: a program of a layer (`layer`/`layer_step1` as
// above) never called bspk_abort or bspk_finalize itself, its layer did.
//   "called bspk_abort"
//   "called bspk_abort (through BSPlib: its abort or an error it found)"
//   "exited without calling bspk_finalize"
//   "exited without calling bspk_finalize (BSPlib's end)"
//   "exited after its bspk_finalize failed"                (state Finalizing or Failed)
//   "exited after its bspk_finalize (BSPlib's end) failed"
std::string abort_text(const char* layer, uint32_t layer_step1);
std::string unfinalized_text(const char* layer, uint32_t layer_step1);
std::string finalize_failed_text(const char* layer, uint32_t layer_step1);
// Which of the two exit texts fits a process that exited without finalizing,
// by the state it published last (ProcState as uint32_t): in bspk_finalize
// (Finalizing) or having left BSPk after an error (Failed), its bspk_finalize
// failed; otherwise it never called it.
using LeavingText = std::string (*)(const char* layer, uint32_t layer_step1);
LeavingText exit_text(uint32_t state);

// Every shared-memory name of BSPk's jobs starts with it.
inline constexpr const char* kShmPrefix = "bspk.";

// The libfabric shm endpoint (and /dev/shm region) name of pid `rank` in job
// `job`: "bspk.<job>.<rank>", unique per job so a region a killed process left
// never blocks a new job.
std::string shm_name(const std::string& job, int rank);
// Remove what the shm provider left in /dev/shm for pid `rank` of `job`
// (every pid's if rank < 0): killed processes leave their regions behind.
void remove_shm_regions(const std::string& job, int rank);
// Remove the /dev/shm regions of a bspkrun job that is gone, given the
// suffix of its directory (bspkrun.<suffix>; its job id is
// "<launcher os pid>-<suffix>"): those named "bspk.<digits>-<suffix>." and
// owned by this user. Returns how many were removed.
int remove_job_regions_by_suffix(const std::string& suffix);

// Blocking helpers; return false on EOF or error (errno set).
bool write_all(int fd, const void* buf, size_t len);
bool read_all(int fd, void* buf, size_t len);
bool send_msg(int fd, Msg type, const std::string& payload);
// One message as bytes on the wire (length, type, payload).
std::string frame(Msg type, const std::string& payload);
// AllgatherResult payload: u32 n, then n x (u32 len, bytes).
std::string pack_blobs(const std::vector<std::string>& blobs);
// false if truncated or malformed.
bool unpack_blobs(const std::string& payload, std::vector<std::string>* out);
// The longest frame (its length field: type and payload) either end accepts.
constexpr uint32_t kMaxFrame = 1u << 30;

// Reads one message; returns false on EOF/error.
bool recv_msg(int fd, Msg* type, std::string* payload);

// Non-blocking reading of framed messages from a socket polled for input:
// bytes are taken as they arrive and a message is parsed once it is whole, so
// a peer that sends half a frame and stops never blocks the reader.
class FrameReader {
 public:
  explicit FrameReader(uint32_t max_frame = kMaxFrame) : max_frame_(max_frame) {}
  // Frames longer than `n` make the stream bad() from now on (e.g. a small
  // limit until a peer has said hello).
  void set_max_frame(uint32_t n) { max_frame_ = n; }
  // Appends what the socket has, at most `max_read` bytes in this call (the
  // rest stays in the socket: poll again); false at end of stream or on an
  // error (messages already buffered can still be taken with next()).
  bool fill(int fd, size_t max_read = SIZE_MAX);
  // Takes the next complete message; false if none is complete yet (or the
  // stream is malformed, a zero or too long frame: see bad()).
  bool next(Msg* type, std::string* payload);
  bool bad() const { return bad_; }
  // Bytes received and not yet taken (part of a frame, or whole frames).
  size_t buffered() const { return buf_.size(); }

 private:
  std::string buf_;
  uint32_t max_frame_;
  bool bad_ = false;
};

}  // namespace bspk::boot
