#pragma once

// OpenSSL stays set up until the process is gone. By default OpenSSL frees its global state (its
// providers, its register of per-thread state, the keys of its thread-locals) from an atexit
// handler. gRPC's own threads (its event engine: a TLS handshake under way, a channel closing)
// may still run then, since gRPC 1.51 does not join them before exit: they would use freed state,
// and their per-thread OpenSSL state is orphaned, which LeakSanitizer reports as leaks from
// CRYPTO_zalloc in an etcd-fleet that exits right after a TLS call. The kernel takes the memory
// back at exit anyway.

namespace etcdagent::tls {

// Call first thing in main(), before anything uses OpenSSL or gRPC: only the first
// initialisation of OpenSSL decides whether it registers its atexit handler.
void keepOpenSslUntilExit();

}  // namespace etcdagent::tls
