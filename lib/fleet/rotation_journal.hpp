#pragma once

// The journal of a flow that goes through the members one at a time (rolling.hpp), in progress:
//   - a certificate or CA rotation (rotate.hpp, ca_rotate.hpp): <inventory dir>/pki/rotation.json;
//   - a rolling restart or a rolling defrag (rolling_restart.hpp, rolling_defrag.hpp):
//     <inventory dir>/rolling.json, a file of its own (a fleet without a CA has no pki directory,
//     and neither flow can ever overwrite the other's journal).
// Both are 0600, proto/etcdagent/v1/rotation_journal.proto. The flows save it after every
// member's step, before they touch the next member, and remove it when they are done; a run
// interrupted anywhere (Ctrl-C, a lost agent, a crash) is finished by running the same command
// again, which skips the members the journal names for the step in progress. One such flow at a
// time: each refuses to start while the other file names a flow in progress
// (refuseWhileInProgress). Parsing is pure (parseRotationJournal works on a string);
// load/save/remove touch the disk.

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace etcdagent::fleet {

enum class RotationKind {
  kCerts,    // etcd-fleet certs rotate
  kCa,       // etcd-fleet ca rotate
  kRestart,  // etcd-fleet rolling-restart (rolling.json)
  kDefrag,   // etcd-fleet defrag --rolling (rolling.json)
  kUpgrade,  // etcd-fleet upgrade --etcd-binary (rolling.json)
};

// A CA rotation goes kTrustBoth -> kReissue -> kTrustNew; a certificate rotation is kReissue; a
// rolling restart is kRestart and a rolling defrag kDefrag.
enum class RotationStep {
  kTrustBoth,  // every member (agent and etcd) trusts the old and the new CA
  kReissue,    // every member gets new keys and certificates from the signing CA
  kTrustNew,   // every member trusts the new CA alone
  kRestart,    // every member's etcd is stopped and started again
  kDefrag,     // every member's database is defragmented
  kUpgrade,    // every member's etcd is stopped and started with another binary
};

// "certs", "ca", "restart", "defrag", "upgrade".
std::string_view rotationKindName(RotationKind kind);
// "trust-both", "reissue", "trust-new", "restart", "defrag", "upgrade".
std::string_view rotationStepName(RotationStep step);
// The command that finishes a flow of `kind`: "etcd-fleet certs rotate", "etcd-fleet ca rotate",
// "etcd-fleet rolling-restart", "etcd-fleet defrag --rolling", "etcd-fleet upgrade".
std::string_view resumeCommand(RotationKind kind);

struct RotationJournal {
  RotationKind kind = RotationKind::kCerts;
  RotationStep step = RotationStep::kReissue;
  std::string started_at;         // RFC 3339 UTC
  std::vector<std::string> done;  // members whose part of `step` is done, in the order done
  std::string new_ca;             // CA rotation: the new CA's fingerprint ("sha256:...")
  std::string etcd_binary;        // upgrade: the binary every member is moved to
  // The member whose part of `step` was begun and is not done yet ("" between members): a run
  // interrupted in a step that stops etcd may have left it stopped (rolling.hpp).
  std::string current;

  [[nodiscard]] bool isDone(std::string_view member) const;
  // The next step starts: nobody has done it yet.
  void advance(RotationStep next);
};

// <pki dir>/rotation.json.
std::string rotationJournalPath(const std::string& pki_dir);
// <inventory dir>/rolling.json: a rolling restart or defrag.
std::string rollingJournalPath(const std::string& inventory_path);

// The file's text and back. Errors name `source` and say how to get out (run the command that
// wrote it again, or remove the file when no rotation is in progress).
Result<RotationJournal> parseRotationJournal(std::string_view text, std::string_view source);
std::string renderRotationJournal(const RotationJournal& journal);

// nullopt when no rotation is in progress (no file).
Result<std::optional<RotationJournal>> loadRotationJournal(const std::string& path);
// Atomically, mode 0600.
Result<void> saveRotationJournal(const std::string& path, const RotationJournal& journal);
// The rotation is done; no file is fine.
Result<void> removeRotationJournal(const std::string& path);

// "a certificate rotation (step reissue, started 2026-...; done: m1, m2)", "a rolling restart
// (started 2026-...; done: none yet)", for messages.
std::string describeRotation(const RotationJournal& journal);

// Fails with kFailedPrecondition when the journal at `path` names a flow in progress whose kind is
// not one of `mine`: "<what> is refused: a CA rotation (...) is in progress (<path>); finish it
// first with `etcd-fleet ca rotate`". No file, or a flow of `mine`: fine. A damaged file is
// refused as loadRotationJournal refuses it.
Result<void> refuseWhileInProgress(const std::string& path,
                                   std::initializer_list<RotationKind> mine,
                                   const std::string& what);

}  // namespace etcdagent::fleet
