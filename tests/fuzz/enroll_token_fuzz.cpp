// libFuzzer entry point: an enrollment token (the agent's enroll.token, `etcd-agent enroll TOKEN`)
// from arbitrary bytes. parseEnrollToken must return a token or an error, never throw or abort;
// an error must never contain the bytes where the secret would be; what it accepts must format
// back to the same token and parse again.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/strings.hpp"
#include "fleet/enroll_token.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using etcdagent::fleet::formatEnrollToken;
  using etcdagent::fleet::parseEnrollToken;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto token = parseEnrollToken(text);
  if (!token) {
    const std::string& message = token.error().message;
    if (!message.starts_with("malformed enrollment token: ")) std::abort();
    // The third '.'-separated part is where a secret sits: no error may quote it.
    const std::string_view trimmed = etcdagent::trimSpace(text);
    const auto first = trimmed.find('.');
    const auto second = first == std::string_view::npos ? first : trimmed.find('.', first + 1);
    if (second != std::string_view::npos) {
      const auto third = trimmed.find('.', second + 1);
      const auto secret =
          trimmed.substr(second + 1, third == std::string_view::npos ? std::string_view::npos
                                                                     : third - second - 1);
      if (secret.size() >= 8 && message.find(secret) != std::string::npos) std::abort();
    }
    return 0;
  }
  const std::string formatted = formatEnrollToken(*token);
  if (formatted != etcdagent::trimSpace(text)) std::abort();
  auto again = parseEnrollToken(formatted);
  if (!again || again->id != token->id || again->secret != token->secret ||
      again->ca_hash != token->ca_hash) {
    std::abort();
  }
  return 0;
}
