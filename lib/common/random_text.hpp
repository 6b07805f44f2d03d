#pragma once

// Random text from OpenSSL's CSPRNG, for secrets that people copy and files hold: enrollment
// tokens' ids and secrets, the etcd root user's password.

#include <cstddef>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace etcdagent {

inline constexpr std::string_view kLowerAlnum = "abcdefghijklmnopqrstuvwxyz0123456789";

// `count` characters of kLowerAlnum, each uniform (about 5.17 bits each): RAND_bytes, with the
// bytes that would bias the choice drawn again. Fails (kInternal) only when the CSPRNG does.
Result<std::string> randomLowerAlnum(std::size_t count);

}  // namespace etcdagent
