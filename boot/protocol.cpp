#include "boot/protocol.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace bspk::boot {

bool write_all(int fd, const void* buf, size_t len) {
  const char* p = static_cast<const char*>(buf);
  while (len) {
    ssize_t n = ::write(fd, p, len);
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

bool send_msg(int fd, Msg type, const std::string& payload) {
  uint32_t len = static_cast<uint32_t>(payload.size() + 1);
  std::string buf(sizeof len + len, '\0');
  std::memcpy(buf.data(), &len, sizeof len);
  buf[sizeof len] = static_cast<char>(type);
  std::memcpy(buf.data() + sizeof len + 1, payload.data(), payload.size());
  return write_all(fd, buf.data(), buf.size());
}

bool recv_msg(int fd, Msg* type, std::string* payload) {
  uint32_t len = 0;
  if (!read_all(fd, &len, sizeof len) || len == 0 || len > (1u << 30)) return false;
  std::string buf(len, '\0');
  if (!read_all(fd, buf.data(), len)) return false;
  *type = static_cast<Msg>(buf[0]);
  payload->assign(buf, 1, std::string::npos);
  return true;
}

}  // namespace bspk::boot
