// etcd-fleet: argument vector in, exit code out. Everything else lives in fleet_cli.

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "fleetctl/cli/command.hpp"
#include "tls/openssl_lifetime.hpp"

namespace {

// What runCli does once the command's output is written. A command ends there: tearing gRPC down
// afterwards (closing its channels, joining its threads, running the static destructors) costs
// every run milliseconds and protects nothing. Whatever a command holds that others see (a lock's
// lease, an election, a watch, a file it writes, an inventory it saves) is released or closed
// inside the command, before runCli hands over the exit code; only connections are left, and the
// kernel closes those. The sanitizer builds exit the usual way, so that LeakSanitizer checks the
// whole run at exit.
etcdagent::fleet::CliFinish finish() {
#if defined(__SANITIZE_ADDRESS__)
  return {};
#else
  return [](int code) {
    std::fflush(nullptr);
    std::_Exit(code);
  };
#endif
}

}  // namespace

int main(int argc, char** argv) {
  etcdagent::tls::keepOpenSslUntilExit();
  std::ios::sync_with_stdio(false);
  std::vector<std::string> args(argv, argv + argc);
  return etcdagent::fleet::runCli(args, std::cout, std::cerr, std::cin, finish());
}
