#include "fleet/snapshots.hpp"

#include <algorithm>
#include <optional>

#include "common/durable_file.hpp"
#include "common/snapshot_intake.hpp"
#include "fleet/fan_out.hpp"

namespace etcdagent::fleet {

Result<std::vector<HostSnapshots>> listFleetSnapshots(const Env& env, const Inventory& inventory,
                                                      const std::vector<std::string>& only,
                                                      Duration timeout) {
  std::vector<const InventoryMember*> members;
  for (const auto& m : inventory.members) {
    if (only.empty() || std::find(only.begin(), only.end(), m.name) != only.end() ||
        std::find(only.begin(), only.end(), m.host) != only.end()) {
      members.push_back(&m);
    }
  }
  if (members.empty()) {
    std::string known;
    for (const auto& m : inventory.members) known += (known.empty() ? "" : ", ") + m.name;
    return fail(Errc::kInvalidArgument, "no member of " + inventory.path +
                                            " is named or hosted "
                                            "at what --host gives (members: " +
                                            known + ")");
  }
  return fanOut(members.size(), [&](std::size_t i) {
    const InventoryMember& m = *members[i];
    HostSnapshots out{m.host, m.name, m.agent};
    auto agent = env.agents.dial(m.agent, timeout);
    if (!agent) {
      out.listing = fail(agent.error());
    } else {
      out.listing = (*agent)->listSnapshots();
    }
    return out;
  });
}

Result<SnapshotChoice> pickSnapshot(const std::vector<HostSnapshots>& listings,
                                    const std::string& name) {
  std::optional<SnapshotChoice> best;
  std::size_t seen = 0;
  // A member's own files first, then the copies other agents keep of them (the same snapshot:
  // the original wins a tie, a copy serves when its member's agent is gone).
  for (const bool copies : {false, true}) {
    for (const auto& h : listings) {
      if (!h.listing) continue;
      for (const auto& r : copies ? h.listing->copies() : h.listing->good()) {
        ++seen;
        if (!name.empty()) {
          if (r.name() == name) return SnapshotChoice{h.host, h.member, h.agent, r};
          continue;
        }
        if (!best || r.taken_at() > best->record.taken_at()) {
          best = SnapshotChoice{h.host, h.member, h.agent, r};
        }
      }
    }
  }
  if (best) return *best;
  if (!name.empty()) {
    return fail(Errc::kNotFound, "no agent keeps a verified snapshot named " + name + " (" +
                                     std::to_string(seen) +
                                     " verified snapshots listed; see etcd-fleet snapshot list)");
  }
  return fail(Errc::kNotFound,
              "no agent keeps a verified snapshot yet: take one with etcd-fleet snapshot save "
              "--host HOST FILE, or wait for the agents' schedule ([snapshot] in agent.toml)");
}

Result<v1::SnapshotRecord> fetchSnapshotTo(
    const AgentApi& agent, const std::string& name, const std::string& path,
    const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  auto file = DurableFile::create(path, 0600);
  if (!file) return fail(file.error());
  // The record is known with the first chunk: whether the stored file is compressed, the size of
  // the snapshot it holds.
  std::optional<SnapshotIntake> intake;
  bool keep_compressed = false;
  auto record = agent.fetchSnapshot(
      name, [&](std::string_view chunk, const v1::SnapshotRecord& r) -> Result<void> {
        if (!intake) {
          intake.emplace(zstdName(r.name()), r.size());
          keep_compressed = zstdName(r.name()) && zstdName(path);
        }
        std::optional<Error> write_error;  // the disk's, not the snapshot's
        auto write = [&](std::string_view bytes) -> Result<void> {
          auto w = file->write(bytes);
          if (!w) write_error = w.error();
          return w;
        };
        if (auto taken = keep_compressed ? intake->update(chunk) : intake->update(chunk, write);
            !taken) {
          if (write_error) return fail(*write_error);
          return fail(Errc::kIo, name + " from agent " + agent.address() + " is damaged (" +
                                     taken.error().message + "); nothing was written to " + path);
        }
        if (keep_compressed) {
          if (auto w = file->write(chunk); !w) return w;
        }
        if (progress) progress(intake->size(), r.size());
        return {};
      });
  if (!record) return fail(record.error());
  if (!intake) intake.emplace(zstdName(record->name()), record->size());
  if (auto r = intake->finish(); !r) {
    return fail(Errc::kIo, name + " from agent " + agent.address() + " is damaged (" +
                               r.error().message + "); nothing was written to " + path);
  }
  if (!record->sha256().empty() && intake->sha256Hex() != record->sha256()) {
    return fail(Errc::kIo, name + " from agent " + agent.address() +
                               " is not the file the agent verified (sha256 " +
                               intake->sha256Hex() + ", recorded " + record->sha256() +
                               "); nothing was written to " + path);
  }
  if (auto r = file->commit(); !r) return fail(r.error());
  return *record;
}

}  // namespace etcdagent::fleet
