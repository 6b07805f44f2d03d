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
    // The third '.'-separated part is where a secret sits: no error may depend on its letters
    // and digits (only on lengths and positions), so the same text with each of them replaced by
    // another of its class must give the same message. (Searching the message for the secret
    // itself is no oracle: the message quotes the token's format, "etf1.<id>.<secret>...".)
    const std::string_view trimmed = etcdagent::trimSpace(text);
    const auto first = trimmed.find('.');
    const auto second = first == std::string_view::npos ? first : trimmed.find('.', first + 1);
    if (second != std::string_view::npos) {
      const auto third = trimmed.find('.', second + 1);
      const std::size_t begin = static_cast<std::size_t>(trimmed.data() - text.data()) + second + 1;
      const std::size_t end =
          third == std::string_view::npos
              ? static_cast<std::size_t>(trimmed.data() - text.data()) + trimmed.size()
              : static_cast<std::size_t>(trimmed.data() - text.data()) + third;
      std::string other(text);
      for (std::size_t i = begin; i < end; ++i) {
        char& c = other[i];
        if (c >= 'a' && c <= 'z')
          c = static_cast<char>('a' + (c - 'a' + 1) % 26);
        else if (c >= '0' && c <= '9')
          c = static_cast<char>('0' + (c - '0' + 1) % 10);
      }
      auto again = parseEnrollToken(other);
      if (again || again.error().message != message) std::abort();
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
