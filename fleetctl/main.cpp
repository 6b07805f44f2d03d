// etcd-fleet: argument vector in, exit code out. Everything else lives in fleet_cli.

#include <iostream>
#include <string>
#include <vector>

#include "fleetctl/cli/command.hpp"
#include "tls/openssl_lifetime.hpp"

int main(int argc, char** argv) {
  etcdagent::tls::keepOpenSslUntilExit();
  std::ios::sync_with_stdio(false);
  std::vector<std::string> args(argv, argv + argc);
  return etcdagent::fleet::runCli(args, std::cout, std::cerr, std::cin);
}
