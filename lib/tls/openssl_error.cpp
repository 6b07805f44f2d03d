#include "tls/openssl_error.hpp"

#include <openssl/err.h>

#include <array>

namespace etcdagent::tls {

std::string takeOpenSslErrors() {
  std::string text;
  while (unsigned long code = ERR_get_error()) {
    std::array<char, 256> buf{};
    ERR_error_string_n(code, buf.data(), buf.size());
    if (!text.empty()) text += "; ";
    text += buf.data();
  }
  return text;
}

std::string opensslReason() {
  std::string errors = takeOpenSslErrors();
  return errors.empty() ? std::string() : ": " + errors;
}

}  // namespace etcdagent::tls
