#pragma once

// Everything a flow of lib/fleet needs, faked: a FakeFleet of agents and one cluster, a stepping
// clock, a recording Progress and a temp dir for the inventory.

#include "fleet/env.hpp"
#include "fleet/inventory.hpp"
#include "tests/mocks/fake_fleet.hpp"
#include "tests/mocks/recording_progress.hpp"
#include "tests/mocks/stepping_clock.hpp"
#include "tests/mocks/temp_dir.hpp"

namespace etcdagent::testing {

struct FleetWorld {
  FakeFleet fleet;
  FakeAgents agents{fleet};
  FakeEtcd etcd{fleet};
  SteppingClock clock;
  RecordingProgress progress;
  UnitTempDir dir;
  std::stop_source stop;
  // One Env for the world's lifetime, not a temporary per call: a flow object (MemberRemoval)
  // keeps a reference to the Env it was built with and uses it in later calls.
  fleet::Env env_{agents, etcd, clock, progress, stop.get_token()};

  [[nodiscard]] const fleet::Env& env() const { return env_; }
  [[nodiscard]] std::string inventoryPath() const { return dir.path() + "/fleet.toml"; }

  // The inventory of a cluster formed from `hosts` (as bootstrap writes it), saved.
  fleet::Inventory saveInventoryOf(const std::string& token, const std::vector<FakeHost*>& hosts) {
    fleet::Inventory inv;
    inv.path = inventoryPath();
    inv.cluster_token = token;
    for (auto* h : hosts) {
      inv.members.push_back({.name = h->member_name,
                             .host = h->advertise,
                             .agent = h->address,
                             .client_url = h->clientUrl(),
                             .peer_url = h->peerUrl(),
                             .id = h->member_id});
    }
    if (auto r = fleet::saveInventory(inv); !r) throw std::runtime_error(r.error().message);
    return inv;
  }
  fleet::Inventory inventory() {
    auto inv = fleet::loadInventory(inventoryPath());
    if (!inv || !*inv) throw std::runtime_error("no inventory at " + inventoryPath());
    return **inv;
  }
};

}  // namespace etcdagent::testing
