// boot/protocol.h -- the bspkrun <-> process protocol over a Unix stream socket.
//
// Each message: u32 length (of what follows), u8 type, payload. Native byte
// order (both ends on one host). The launcher answers an Allgather only once
// every process has sent its own, so it doubles as a barrier.
#pragma once

#include <cstdint>
#include <string>

namespace bspk::boot {

constexpr uint32_t kProtocolVersion = 1;

enum class Msg : uint8_t {
  Hello = 1,            // i32 rank, i32 os pid, u32 protocol version, u32 wire version, u32 byte-order mark
  Allgather = 2,        // blob
  AllgatherResult = 3,  // u32 n, then n x (u32 len, bytes)
  Abort = 4,            // i32 exit code, message
  Finalized = 5,        // (empty)
  Refused = 6,          // launcher -> process: reason (version/byte-order mismatch)
};

// Shared status page (BSPK_STATUS_FILE): one slot per rank, written by the
// process, read by the launcher when a process dies.
struct StatusSlot {
  volatile uint32_t superstep;
  volatile uint32_t state;  // ProcState
  volatile int32_t os_pid;
  uint32_t pad[13];
};
static_assert(sizeof(StatusSlot) == 64);

// Blocking helpers; return false on EOF or error (errno set).
bool write_all(int fd, const void* buf, size_t len);
bool read_all(int fd, void* buf, size_t len);
bool send_msg(int fd, Msg type, const std::string& payload);
// Reads one message; returns false on EOF/error.
bool recv_msg(int fd, Msg* type, std::string* payload);

}  // namespace bspk::boot
