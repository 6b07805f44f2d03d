#pragma once

// A real etcd cluster on loopback for integration tests: N members of Debian's etcd on free
// ports, in a temporary directory, stopped (by PID) and removed when the object dies.

#include <string>
#include <vector>

#include "tests/support/process.hpp"

namespace etcdagent::testing {

// Paths of the programs under test and of the reference tools. etcd-fleet comes from the build;
// etcd and etcdctl from PATH unless ETCD_BINARY / ETCDCTL_BINARY say otherwise.
std::string fleetBinary();
std::string agentBinary();
std::string etcdBinary();
std::string etcdctlBinary();

// etcd's command line for member `name` of a new cluster: its data dir, one client and one peer
// URL (listened on and advertised) and the initial cluster ("a=URL,b=URL"), as flag=value words;
// callers append TLS and other flags.
std::vector<std::string> etcdMemberArgv(const std::string& name, const std::string& data_dir,
                                        const std::string& client_url, const std::string& peer_url,
                                        const std::string& initial_cluster);

struct EtcdMember {
  std::string name;
  int client_port = 0;
  int peer_port = 0;
  std::string client_url;  // http://127.0.0.1:PORT
  std::string peer_url;
  std::string data_dir;
  std::string log_path;
  Child process;
};

class EtcdCluster {
 public:
  struct Options {
    int size = 1;
    std::string host = "127.0.0.1";
    std::vector<std::string> extra_flags;
  };

  // Starts every member and waits (bounded) until all are healthy; throws on failure.
  explicit EtcdCluster(Options options);
  EtcdCluster() : EtcdCluster(Options{}) {}
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  // "127.0.0.1:p1,127.0.0.1:p2,..."
  [[nodiscard]] std::string endpoints() const;
  [[nodiscard]] std::string endpoint(std::size_t i) const;
  [[nodiscard]] std::size_t size() const { return members_.size(); }
  EtcdMember& member(std::size_t i) { return members_[i]; }
  [[nodiscard]] const std::string& dir() const { return dir_.path(); }

  // SIGKILLs member i.
  void kill(std::size_t i);

 private:
  Options options_;
  TempDir dir_;
  std::vector<EtcdMember> members_;
};

// Runs etcdctl / etcd-fleet with --endpoints set (ETCDCTL_API=3 for etcdctl).
RunResult etcdctl(const std::string& endpoints, const std::vector<std::string>& args,
                  RunOptions options = {});
RunResult fleet(const std::string& endpoints, const std::vector<std::string>& args,
                RunOptions options = {});
// Waits until the etcd at `endpoint` ("HOST:PORT") no longer answers (it stopped, or was killed
// and its sockets are closed); false if it still answers after `timeout`.
bool waitUntilEtcdGone(const std::string& endpoint, std::chrono::milliseconds timeout);

// Output masking for parity checks: only IDs, revisions, hashes and timings may differ.
// Replaces the numeric value of each named JSON field ("revision":12 -> "revision":N).
std::string maskJsonNumbers(std::string text, const std::vector<std::string>& fields);
// Replaces lowercase hex IDs of 12..16 digits with <ID>.
std::string maskHexIds(std::string text);

}  // namespace etcdagent::testing
