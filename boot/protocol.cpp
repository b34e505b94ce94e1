#include "boot/protocol.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include "base/config.h"
#include "base/shm_dir.h"
#include "boot/bootstrap.h"
#include "base/version.h"

namespace bspk::boot {

namespace {
bool layered(const char* layer, uint32_t layer_step1) { return layer && *layer && layer_step1 != 0; }
}  // namespace

std::string superstep_text(uint32_t step, const char* layer, uint32_t layer_step1, const char* state) {
  std::string s;
  if (layered(layer, layer_step1)) {
    s = std::string(layer) + " superstep " + std::to_string(layer_step1 - 1) + " (";
    if (state) s += std::string(state) + "; ";
    return s + "BSPk superstep " + std::to_string(step) + ")";
  }
  s = "superstep " + std::to_string(step);
  if (state) s += std::string(" (") + state + ")";
  return s;
}

std::string abort_text(const char* layer, uint32_t layer_step1) {
  if (!layered(layer, layer_step1)) return "called bspk_abort";
  return std::string("called bspk_abort (through ") + layer + ": its abort or an error it found)";
}

std::string unfinalized_text(const char* layer, uint32_t layer_step1) {
  if (!layered(layer, layer_step1)) return "exited without calling bspk_finalize";
  return std::string("exited without calling bspk_finalize (") + layer + "'s end)";
}

std::string finalize_failed_text(const char* layer, uint32_t layer_step1) {
  if (!layered(layer, layer_step1)) return "exited after its bspk_finalize failed";
  return std::string("exited after its bspk_finalize (") + layer + "'s end) failed";
}

LeavingText exit_text(uint32_t state) {
  const auto st = static_cast<ProcState>(state);
  return st == ProcState::Finalizing || st == ProcState::Failed ? finalize_failed_text : unfinalized_text;
}

std::string shm_name(const std::string& job, int rank) { return kShmPrefix + job + "." + std::to_string(rank); }

namespace {
// Unlinks the files of /dev/shm whose name `match` accepts; returns how many.
template <class Match>
int unlink_shm_files(Match match) {
  int removed = 0;
  for_each_shm_entry([&](int dir, const char* n) {
    if (match(dir, n) && unlinkat(dir, n, 0) == 0) ++removed;
    return true;
  });
  return removed;
}
}  // namespace

void remove_shm_regions(const std::string& job, int rank) {
  const std::string name = rank < 0 ? kShmPrefix + job + "." : shm_name(job, rank);
  // the name, then (one rank) anything but a digit: never pid 10's for pid 1's
  unlink_shm_files([&name, rank](int, const char* n) {
    return std::strncmp(n, name.c_str(), name.size()) == 0 &&
           (rank < 0 || !std::isdigit(static_cast<unsigned char>(n[name.size()])));
  });
}

int remove_job_regions_by_suffix(const std::string& suffix) {
  if (suffix.empty()) return 0;
  const std::string tail = "-" + suffix + ".";
  return unlink_shm_files([&tail](int dir, const char* n) {
    const size_t k0 = std::strlen(kShmPrefix);
    if (std::strncmp(n, kShmPrefix, k0) != 0) return false;
    size_t k = k0;
    while (std::isdigit(static_cast<unsigned char>(n[k]))) ++k;
    struct stat st;
    return k > k0 && std::strncmp(n + k, tail.c_str(), tail.size()) == 0 &&
           fstatat(dir, n, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_uid == geteuid();
  });
}

uint32_t announced_wire_version() {
  return static_cast<uint32_t>(config::get_int(config::Var::TEST_WIRE_VERSION));
}

std::string hello_payload(int rank) {
  std::string hello(kHelloFixed, '\0');
  int32_t r = rank, osp = static_cast<int32_t>(getpid());
  uint32_t pv = kProtocolVersion, wv = announced_wire_version(), bom = kByteOrderMark;
  std::memcpy(&hello[0], &r, 4);
  std::memcpy(&hello[4], &osp, 4);
  std::memcpy(&hello[8], &pv, 4);
  std::memcpy(&hello[12], &wv, 4);
  std::memcpy(&hello[16], &bom, 4);
  return hello;
}

const char* state_name(uint32_t st) {
  switch (static_cast<ProcState>(st)) {
    case ProcState::Starting: return "starting";
    case ProcState::Running: return "computing";
    case ProcState::InSync: return "waiting in bspk_sync";
    case ProcState::Finalizing: return "in bspk_finalize";
    case ProcState::Done: return "finished";
    case ProcState::Failed: return "left BSPk after an error";
  }
  return "in an unknown state";
}

bool parse_hello(const std::string& pl, HelloInfo* h) {
  if (pl.size() < kHelloFixed) return false;
  std::memcpy(&h->rank, &pl[0], 4);
  std::memcpy(&h->os_pid, &pl[4], 4);
  std::memcpy(&h->protocol, &pl[8], 4);
  std::memcpy(&h->wire, &pl[12], 4);
  std::memcpy(&h->bom, &pl[16], 4);
  h->rest = pl.substr(kHelloFixed);
  return true;
}

std::string version_mismatch(const HelloInfo& h) {
  if (h.bom != kByteOrderMark)
    return "pid " + std::to_string(h.rank) + " runs on a machine of another byte order: BSPk jobs must be "
           "homogeneous";
  if (h.protocol == kProtocolVersion && h.wire == version::kWireVersion) return "";
  return "pid " + std::to_string(h.rank) + " (os pid " + std::to_string(h.os_pid) +
         ") was built against another BSPk version (bootstrap protocol " + std::to_string(h.protocol) +
         ", wire protocol " + std::to_string(h.wire) + "; this side speaks " +
         std::to_string(kProtocolVersion) + " and " + std::to_string(version::kWireVersion) +
         "): every process of a job must run the same BSPk build; rebuild or relink it";
}

bool write_all(int fd, const void* buf, size_t len) {
  // send(MSG_NOSIGNAL), not write(): a peer that is gone must be an error
  // return, never a SIGPIPE that kills this process. Every fd here is a socket.
  const char* p = static_cast<const char*>(buf);
  while (len) {
    ssize_t n = ::send(fd, p, len, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

bool read_all(int fd, void* buf, size_t len) {
  char* p = static_cast<char*>(buf);
  while (len) {
    ssize_t n = ::read(fd, p, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) {
      errno = ECONNRESET;
      return false;
    }
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

std::string frame(Msg type, const std::string& payload) {
  uint32_t len = static_cast<uint32_t>(payload.size() + 1);
  std::string buf(sizeof len + len, '\0');
  std::memcpy(buf.data(), &len, sizeof len);
  buf[sizeof len] = static_cast<char>(type);
  std::memcpy(buf.data() + sizeof len + 1, payload.data(), payload.size());
  return buf;
}

bool send_msg(int fd, Msg type, const std::string& payload) {
  std::string buf = frame(type, payload);
  return write_all(fd, buf.data(), buf.size());
}

std::string pack_blobs(const std::vector<std::string>& blobs) {
  std::string res(4, '\0');
  uint32_t n = static_cast<uint32_t>(blobs.size());
  std::memcpy(res.data(), &n, 4);
  for (auto& b : blobs) {
    uint32_t len = static_cast<uint32_t>(b.size());
    res.append(reinterpret_cast<const char*>(&len), 4);
    res += b;
  }
  return res;
}

bool unpack_blobs(const std::string& p, std::vector<std::string>* out) {
  out->clear();
  uint32_t n = 0;
  if (p.size() < 4) return false;
  std::memcpy(&n, p.data(), 4);
  size_t pos = 4;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t len = 0;
    if (pos + 4 > p.size()) return false;
    std::memcpy(&len, p.data() + pos, 4);
    if (pos + 4 + len > p.size()) return false;
    out->emplace_back(p, pos + 4, len);
    pos += 4 + len;
  }
  return pos == p.size();
}

bool FrameReader::fill(int fd, size_t max_read) {
  char tmp[16384];
  for (size_t got = 0; got < max_read;) {
    ssize_t n = ::recv(fd, tmp, std::min(sizeof tmp, max_read - got), MSG_DONTWAIT);
    if (n > 0) {
      buf_.append(tmp, static_cast<size_t>(n));
      got += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
  return true;
}

bool FrameReader::next(Msg* type, std::string* payload) {
  if (bad_ || buf_.size() < 4) return false;
  uint32_t len = 0;
  std::memcpy(&len, buf_.data(), 4);
  if (len == 0 || len > max_frame_) {
    bad_ = true;
    return false;
  }
  if (buf_.size() < 4 + size_t{len}) return false;
  *type = static_cast<Msg>(buf_[4]);
  payload->assign(buf_, 5, len - 1);
  buf_.erase(0, 4 + size_t{len});
  return true;
}

bool recv_msg(int fd, Msg* type, std::string* payload) {
  uint32_t len = 0;
  if (!read_all(fd, &len, sizeof len) || len == 0 || len > kMaxFrame) return false;
  std::string buf(len, '\0');
  if (!read_all(fd, buf.data(), len)) return false;
  *type = static_cast<Msg>(buf[0]);
  payload->assign(buf, 1, std::string::npos);
  return true;
}

}  // namespace bspk::boot
