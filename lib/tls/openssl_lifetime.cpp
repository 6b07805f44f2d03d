#include "tls/openssl_lifetime.hpp"

#include <openssl/crypto.h>

namespace etcdagent::tls {

void keepOpenSslUntilExit() {
  // Fails only when OpenSSL cannot initialise at all; the first real use reports that.
  (void)OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, nullptr);
}

}  // namespace etcdagent::tls
