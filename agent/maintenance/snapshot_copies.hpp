#pragma once

// Copies of other members' snapshots this agent keeps for them (StoreSnapshotCopy), so that a
// host that dies does not take the only snapshot with it:
//
//   <[snapshot] dir>/<cluster token>/copies/<member>/m2-20261204T020000Z.db    (+ .json, .db.part)
//
// One directory per member of the cluster, the newest `keep` copies in each. A copy is received
// into NAME.db.part, checked against the sender's record (size, sha256) and etcd's trailer while
// it arrives, made durable (fsync, rename), then verified as the agent verifies its own snapshots
// (snapshot_job.hpp: bbolt opened and checked) and recorded. Blocking file I/O: off the loop.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/maintenance/snapshot_dir.hpp"
#include "common/durable_file.hpp"
#include "common/error.hpp"
#include "common/snapshot_intake.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

inline constexpr unsigned kDefaultKeepCopies = 2;

// Whether `offered` may be kept here: a snapshot of another member (not `own_member`) of the
// same cluster (`cluster_token`), named as that member's snapshots are (MEMBER-<time>.db), with a
// size and a sha256. The error says what is wrong (kInvalidArgument, kFailedPrecondition).
Result<void> checkCopyOffer(const v1::SnapshotRecord& offered, const std::string& own_member,
                            const std::string& cluster_token);

class CopyStore {
 public:
  // `root` is <[snapshot] dir>/<cluster token>/copies.
  CopyStore(std::string root, unsigned keep) : root_(std::move(root)), keep_(keep) {}

  [[nodiscard]] const std::string& root() const { return root_; }
  [[nodiscard]] unsigned keep() const { return keep_; }
  [[nodiscard]] SnapshotDir dirOf(const std::string& member) const {
    return SnapshotDir::at(root_ + "/" + member, member);
  }
  // The copy of `offered` kept already (same member, name and sha256), if any.
  [[nodiscard]] std::optional<v1::SnapshotRecord> find(const v1::SnapshotRecord& offered) const;
  // Every copy kept (verified ones), of every member, newest first.
  [[nodiscard]] Result<std::vector<v1::SnapshotRecord>> list() const;

  class Receiving {
   public:
    Receiving(const Receiving&) = delete;
    Receiving& operator=(const Receiving&) = delete;
    ~Receiving() = default;  // without a commit(), the .part goes
    Result<void> write(std::string_view chunk);
    // Whole, durable, verified and recorded; the retention applied to its member's copies.
    // Returns the record as verified here.
    Result<v1::SnapshotRecord> commit();

   private:
    friend class CopyStore;
    Receiving(const CopyStore& store, v1::SnapshotRecord offered, DurableFile file)
        : store_(store),
          offered_(std::move(offered)),
          file_(std::move(file)),
          intake_(zstdName(offered_.name()), offered_.size()) {}
    const CopyStore& store_;
    v1::SnapshotRecord offered_;
    DurableFile file_;
    SnapshotIntake intake_;  // a compressed copy is checked as it decompresses
  };
  // Starts receiving `offered` (checked with checkCopyOffer first): its member's directory made
  // (0700), room for it checked.
  [[nodiscard]] Result<std::unique_ptr<Receiving>> receive(const v1::SnapshotRecord& offered) const;

 private:
  std::string root_;
  unsigned keep_;
};

}  // namespace etcdagent::agent
