// boot/auth.cpp -- see auth.h.
#include "boot/auth.h"

#include <bspk.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <cstdint>
#include <cstring>
#include <optional>

#include "base/config.h"
#include "base/error.h"
#include "base/random.h"

namespace bspk::boot::auth {

std::string random_bytes(size_t n) {
  std::string out(n, '\0');
  bspk::random_bytes(out.data(), n);  // base/random.h: the one source of unpredictable bytes
  return out;
}

std::string mac(const std::string& key, const char* label, std::initializer_list<std::string> parts) {
  std::string in(label);
  in += '\0';
  for (const std::string& p : parts) {
    uint64_t len = p.size();
    in.append(reinterpret_cast<const char*>(&len), sizeof len);
    in += p;
  }
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int out_len = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(in.data()),
            in.size(), out, &out_len) ||
      out_len != kMacBytes)
    fail(BSPK_ERR_INTERNAL, "HMAC-SHA-256 failed (OpenSSL)");
  return std::string(reinterpret_cast<const char*>(out), out_len);
}

bool same_mac(const std::string& got, const std::string& want) {
  return got.size() == want.size() && CRYPTO_memcmp(got.data(), want.data(), want.size()) == 0;
}

std::string to_hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

bool from_hex(const std::string& hex, std::string* bytes) {
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (hex.size() % 2) return false;
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = nib(hex[i]), lo = nib(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out += static_cast<char>(hi << 4 | lo);
  }
  *bytes = std::move(out);
  return true;
}

std::string public_key_for(const std::string& job_tag) {
  std::string in = std::string("bspk-public-job-key") + '\0' + job_tag;
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(in.data()), in.size(), d);
  return std::string(reinterpret_cast<const char*>(d), sizeof d);
}

std::string key_from_env() {
  std::optional<std::string> set = config::get_string(config::Var::JOB_KEY);
  if (!set) return "";
  const std::string& hex = *set;
  std::string key;
  if (hex.size() != 2 * kKeyBytes || !from_hex(hex, &key)) {
    // Name what is wrong: the length, or (right length) the first non-hex character.
    std::string what = strprintf("not %zu characters", hex.size());
    if (hex.size() == 2 * kKeyBytes) {
      size_t at = hex.find_first_not_of("0123456789abcdefABCDEF");
      what = strprintf("character %zu is not a hex digit", at + 1);
    }
    fail(BSPK_ERR_ARG, "BSPK_JOB_KEY must be %zu hex digits (e.g. export BSPK_JOB_KEY=$(openssl rand -hex %zu)): %s",
         2 * kKeyBytes, kKeyBytes, what.c_str());
  }
  return key;
}

}  // namespace bspk::boot::auth
