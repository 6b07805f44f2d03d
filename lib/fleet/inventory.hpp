#pragma once

// The fleet inventory: what `etcd-fleet bootstrap` learned about a cluster, so that every later
// command (get, member list, status, member replace, ...) works without flags. It lives in
// ~/.config/etcd-fleet/fleet.toml (or --fleet FILE) and is written atomically, mode 0600:
//
//   # written by etcd-fleet; edit with care
//   [cluster]
//   token = "prod-1"
//
//   [[member]]
//   name = "m1"
//   host = "10.0.0.1"                  # as given to --hosts
//   agent = "10.0.0.1:2378"            # the agent's gRPC API
//   client_url = "http://10.0.0.1:2379"
//   peer_url = "http://10.0.0.1:2380"
//   id = "8e9e05c52164694d"            # etcd's member ID, hex, once known
//
//   [replace]                          # only while `member replace` is in progress
//   old_name = "m2"
//   step = "learner-added"
//
//   [tls]                              # only while `tls enable` is in progress
//   phase = "https"
//
//   [restore]                          # only while `restore` (in place) is in progress
//   phase = "restoring"
//
// Parsing is pure (parseInventory works on a string); loadInventory/saveInventory are the only
// functions that touch the disk. Errors name the file, line and column.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace etcdagent::fleet {

struct InventoryMember {
  std::string name;        // "m1"
  std::string host;        // the host as the operator named it ("10.0.0.1", "h1:2388")
  std::string agent;       // the agent's API address, "HOST:PORT"
  std::string client_url;  // "http://HOST:2379"
  std::string peer_url;    // "http://HOST:2380"
  std::uint64_t id = 0;    // etcd's member ID; 0 = not known yet
};

// "member m1 (127.0.0.11:2378)": how the flows name a member in their progress and errors.
inline std::string describeMember(const InventoryMember& m) {
  return "member " + m.name + " (" + m.agent + ")";
}

struct Inventory {
  std::string path;  // where it was read from and is written to
  std::string cluster_token;
  std::vector<InventoryMember> members;
  // The journal of an unfinished `member replace` (string keys and values it owns); empty when
  // none is in progress. Written in the same atomic file as the members, so a replace that
  // updates both never leaves them disagreeing.
  std::map<std::string, std::string> replace;
  // The journal of an unfinished `tls enable` (tls_enable_journal.hpp owns its keys); empty when
  // none is in progress. In the same file as the members for the same reason.
  std::map<std::string, std::string> tls;
  // The journal of an unfinished in-place `restore` (restore_journal.hpp owns its keys); empty
  // when none is in progress.
  std::map<std::string, std::string> restore;

  [[nodiscard]] const InventoryMember* find(std::string_view name) const;
  [[nodiscard]] InventoryMember* find(std::string_view name);
  [[nodiscard]] const InventoryMember* findById(std::uint64_t id) const;
  // "HOST:PORT" of every member's client URL, in inventory order (for --endpoints).
  // endpointOf() each member's client URL.
  [[nodiscard]] std::vector<std::string> clientEndpoints() const;
};

// "http://h:2379" -> "h:2379" (etcd-fleet's --endpoints take either form; etcdctl's take this one).
std::string hostPortOf(std::string_view url);
// The endpoint to dial for a client URL: "h:2379" for http://, "https://h:2379" for https:// (the
// scheme says to use TLS; etcd-fleet then presents the fleet's certificate).
std::string endpointOf(std::string_view url);

// ~/.config/etcd-fleet/fleet.toml ($XDG_CONFIG_HOME/etcd-fleet/fleet.toml when that is set).
// `getenv` is injected for tests.
std::string defaultInventoryPath(const std::function<const char*(const char*)>& getenv);

// The most [[member]] tables an inventory may have: far above any sane etcd cluster (3, 5 or 7
// members), low enough that a flow over every member stays a few rounds of kMaxFanOut threads
// and one etcd client over every client URL stays cheap.
inline constexpr std::size_t kMaxInventoryMembers = 128;

// Parses and validates (unknown keys, wrong types, members without a name or with duplicate
// names, no member at all (an empty file), more than kMaxInventoryMembers members are errors
// naming source:line:column). Never throws, whatever the bytes (binary, invalid UTF-8, ...).
Result<Inventory> parseInventory(std::string_view text, std::string_view source);

// Whether the cluster serves TLS, so that a member added to it must too: its inventory's peer
// URLs are https://, or (without an inventory) the client endpoints given are. Pure.
bool clusterServesTls(const std::optional<Inventory>& inventory,
                      const std::vector<std::string>& endpoints);

// The TOML text of `inventory` (stable order: cluster, members, replace, tls, restore).
std::string renderInventory(const Inventory& inventory);

// Reads `path`; std::nullopt when the file does not exist (no fleet bootstrapped yet).
Result<std::optional<Inventory>> loadInventory(const std::string& path);

// The inventory a command needs (status, member replace): nullopt from loadInventory becomes an
// kNotFound error that names the path, followed by `hint` (what needs it and how to get one:
// "member replace works on a fleet bootstrapped with etcd-fleet bootstrap (or pass --fleet FILE)").
Result<Inventory> requireInventory(const std::string& path, std::string_view hint);

// Writes inventory.path atomically with mode 0600, creating its directory (0700) if needed.
Result<void> saveInventory(const Inventory& inventory);

}  // namespace etcdagent::fleet
