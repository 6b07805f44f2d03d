// libFuzzer entry point: etcdctl's transaction input (`etcd-fleet txn` on stdin) from arbitrary
// bytes. readTxn must return a request or an input error, never throw, abort or loop.

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "fleetctl/commands/txn_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  auto txn = etcdagent::fleet::readTxn(in);
  if (txn) {
    // A request that was read has at most what the input could describe.
    const auto ops = static_cast<std::size_t>(txn->compare_size()) +
                     static_cast<std::size_t>(txn->success_size()) +
                     static_cast<std::size_t>(txn->failure_size());
    if (ops > size) {
      __builtin_trap();
    }
  }
  return 0;
}
