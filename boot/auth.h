// boot/auth.h -- the job's secret and the keyed proofs of the job hub's
// handshake (boot/hub.h), on OpenSSL's libcrypto (HMAC-SHA-256,
// CRYPTO_memcmp): no home-made cryptography.
//
// Every process of a job holds the same 32-byte job key. Under PMIx and PMI2
// pid 0 draws it (getrandom, base/random.h) and publishes it with the hub's address in the
// job's key-value store, which only the job's processes can read; under plain
// srun it comes from BSPK_JOB_KEY, exported by the user before srun (srun
// passes the environment to the tasks, and a process's environment is
// readable only by its owner). At connection time the hub and the process
// each prove they know the key without sending it: HMAC-SHA-256 over a
// context label, both sides' fresh 32-byte nonces and the message. A stranger
// who does not know the key can neither join, nor end, nor read the job
// through the hub, nor pose as its hub.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>

namespace bspk::boot::auth {

constexpr size_t kKeyBytes = 32;
constexpr size_t kNonceBytes = 32;
constexpr size_t kMacBytes = 32;

// `n` bytes from the operating system's random source (getrandom, base/random.h). Throws
// BSPK_ERR_BOOT if none are available.
std::string random_bytes(size_t n);

// HMAC-SHA-256 of label || parts... under `key` (kMacBytes bytes). Every part is
// prefixed with its length, so no two different lists have the same input.
std::string mac(const std::string& key, const char* label, std::initializer_list<std::string> parts);

// Constant-time comparison (CRYPTO_memcmp) of a received proof with the
// expected one; false if the sizes differ.
bool same_mac(const std::string& got, const std::string& want);

// Lower-case hex, and back: false unless `hex` is an even number of hex digits.
std::string to_hex(const std::string& bytes);
bool from_hex(const std::string& hex, std::string* bytes);

// The key of a job whose launcher distributes none (plain srun without
// BSPK_JOB_KEY): derived from the public job tag, so it authenticates nothing
// (the caller warns); one code path for both cases.
std::string public_key_for(const std::string& job_tag);

// BSPK_JOB_KEY (64 hex digits) if set, as kKeyBytes bytes; "" if unset.
// Throws BSPK_ERR_ARG naming the variable if it is malformed.
std::string key_from_env();

}  // namespace bspk::boot::auth
