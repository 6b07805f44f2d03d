#include "common/random_text.hpp"

#include <openssl/rand.h>

#include <vector>

namespace etcdagent {

// A random byte below 252 (7 * 36) picks byte % 36; the bytes 252..255 are drawn again.
Result<std::string> randomLowerAlnum(std::size_t count) {
  constexpr unsigned kLimit = 252;
  std::string out;
  out.reserve(count);
  // 4/256 of bytes are rejected: 16 rounds of `count` bytes fail to fill with probability far
  // below that of a hardware fault; the bound only keeps a broken CSPRNG from looping forever.
  for (int round = 0; round < 16 && out.size() < count; ++round) {
    std::vector<unsigned char> bytes(count);
    if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
      return fail(Errc::kInternal, "the system's random number generator failed (RAND_bytes)");
    }
    for (unsigned char b : bytes) {
      if (b >= kLimit) continue;
      out.push_back(kLowerAlnum[b % kLowerAlnum.size()]);
      if (out.size() == count) break;
    }
  }
  if (out.size() != count) {
    return fail(Errc::kInternal, "the system's random number generator returned biased bytes");
  }
  return out;
}

}  // namespace etcdagent
