#pragma once

// The journal of a certificate or CA rotation in progress: <inventory dir>/pki/rotation.json
// (0600, proto/etcdagent/v1/rotation_journal.proto). The flows (rotate.hpp, ca_rotate.hpp) save it
// after every member's step, before they touch the next member, and remove it when the rotation
// is done; a run interrupted anywhere (Ctrl-C, a lost agent, a crash) is finished by running the
// same command again, which skips the members the journal names for the step in progress.
// Parsing is pure (parseRotationJournal works on a string); load/save/remove touch the disk.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace etcdagent::fleet {

enum class RotationKind {
  kCerts,  // etcd-fleet certs rotate
  kCa,     // etcd-fleet ca rotate
};

// A CA rotation goes kTrustBoth -> kReissue -> kTrustNew; a certificate rotation is kReissue.
enum class RotationStep {
  kTrustBoth,  // every member (agent and etcd) trusts the old and the new CA
  kReissue,    // every member gets new keys and certificates from the signing CA
  kTrustNew,   // every member trusts the new CA alone
};

std::string_view rotationKindName(RotationKind kind);  // "certs", "ca"
std::string_view rotationStepName(RotationStep step);  // "trust-both", "reissue", "trust-new"

struct RotationJournal {
  RotationKind kind = RotationKind::kCerts;
  RotationStep step = RotationStep::kReissue;
  std::string started_at;         // RFC 3339 UTC
  std::vector<std::string> done;  // members whose part of `step` is done, in the order done
  std::string new_ca;             // CA rotation: the new CA's fingerprint ("sha256:...")

  [[nodiscard]] bool isDone(std::string_view member) const;
  // The next step starts: nobody has done it yet.
  void advance(RotationStep next);
};

// <pki dir>/rotation.json.
std::string rotationJournalPath(const std::string& pki_dir);

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

// "a certificate rotation (step reissue, started 2026-...; done: m1, m2)", for messages.
std::string describeRotation(const RotationJournal& journal);

}  // namespace etcdagent::fleet
