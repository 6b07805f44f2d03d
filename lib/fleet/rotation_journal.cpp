#include "fleet/rotation_journal.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "common/duration.hpp"
#include "common/file_util.hpp"
#include "common/proto_json.hpp"
#include "etcdagent/v1/rotation_journal.pb.h"

namespace etcdagent::fleet {
namespace {

constexpr unsigned kJournalFileVersion = 1;
// A journal names a few members: a bigger file is not ours.
constexpr std::size_t kMaxJournalSize = 1024 * 1024;

std::string journalDamagedHint(std::string_view source) {
  if (source.ends_with("rolling.json")) {
    return "; if no rolling restart, upgrade or defrag is in progress, remove " +
           std::string(source) +
           ", else run it again (etcd-fleet rolling-restart, upgrade --etcd-binary PATH, or "
           "defrag --rolling)";
  }
  return "; if no rotation is in progress, remove " + std::string(source) +
         ", else run the rotation again (etcd-fleet certs rotate, or ca rotate)";
}

}  // namespace

std::string_view rotationKindName(RotationKind kind) {
  switch (kind) {
    case RotationKind::kCerts: return "certs";
    case RotationKind::kCa: return "ca";
    case RotationKind::kRestart: return "restart";
    case RotationKind::kDefrag: return "defrag";
    case RotationKind::kUpgrade: return "upgrade";
  }
  return "?";
}

std::string_view resumeCommand(RotationKind kind) {
  switch (kind) {
    case RotationKind::kCerts: return "etcd-fleet certs rotate";
    case RotationKind::kCa: return "etcd-fleet ca rotate";
    case RotationKind::kRestart: return "etcd-fleet rolling-restart";
    case RotationKind::kDefrag: return "etcd-fleet defrag --rolling";
    case RotationKind::kUpgrade: return "etcd-fleet upgrade";
  }
  return "?";
}

std::string_view rotationStepName(RotationStep step) {
  switch (step) {
    case RotationStep::kTrustBoth: return "trust-both";
    case RotationStep::kReissue: return "reissue";
    case RotationStep::kTrustNew: return "trust-new";
    case RotationStep::kRestart: return "restart";
    case RotationStep::kDefrag: return "defrag";
    case RotationStep::kUpgrade: return "upgrade";
  }
  return "?";
}

bool RotationJournal::isDone(std::string_view member) const {
  return std::find(done.begin(), done.end(), member) != done.end();
}

void RotationJournal::advance(RotationStep next) {
  step = next;
  done.clear();
  current.clear();
}

std::string rotationJournalPath(const std::string& pki_dir) {
  return pki_dir + "/rotation.json";
}

std::string rollingJournalPath(const std::string& inventory_path) {
  std::string base = std::filesystem::path(inventory_path).parent_path().string();
  if (base.empty()) base = ".";
  return base + "/rolling.json";
}

Result<RotationJournal> parseRotationJournal(std::string_view text, std::string_view source) {
  v1::RotationJournalFile file;
  if (auto parsed = parseStateJson(text, file); !parsed) {
    return fail(Errc::kInvalidArgument, std::string(source) + ": not a valid rotation journal (" +
                                            parsed.error().message + ")" +
                                            journalDamagedHint(source));
  }
  if (file.version() > kJournalFileVersion) {
    return fail(Errc::kFailedPrecondition,
                std::string(source) + ": written by a newer etcd-fleet (version " +
                    std::to_string(file.version()) + "); finish the rotation with it, or upgrade");
  }
  auto bad = [&](const std::string& what) {
    return fail(Errc::kInvalidArgument,
                std::string(source) + ": " + what + journalDamagedHint(source));
  };
  if (file.version() != kJournalFileVersion) return bad("has no \"version\": 1");
  RotationJournal out;
  if (file.kind() == "certs") {
    out.kind = RotationKind::kCerts;
  } else if (file.kind() == "ca") {
    out.kind = RotationKind::kCa;
  } else if (file.kind() == "restart") {
    out.kind = RotationKind::kRestart;
  } else if (file.kind() == "defrag") {
    out.kind = RotationKind::kDefrag;
  } else if (file.kind() == "upgrade") {
    out.kind = RotationKind::kUpgrade;
  } else {
    return bad("\"kind\" is none of \"certs\", \"ca\", \"restart\", \"defrag\" and \"upgrade\"");
  }
  if (file.step() == "trust-both") {
    out.step = RotationStep::kTrustBoth;
  } else if (file.step() == "reissue") {
    out.step = RotationStep::kReissue;
  } else if (file.step() == "trust-new") {
    out.step = RotationStep::kTrustNew;
  } else if (file.step() == "restart") {
    out.step = RotationStep::kRestart;
  } else if (file.step() == "defrag") {
    out.step = RotationStep::kDefrag;
  } else if (file.step() == "upgrade") {
    out.step = RotationStep::kUpgrade;
  } else {
    return bad("\"step\" is not trust-both, reissue, trust-new, restart, defrag or upgrade");
  }
  if (out.kind == RotationKind::kCerts && out.step != RotationStep::kReissue) {
    return bad("a certificate rotation has only the step \"reissue\"");
  }
  if (out.kind == RotationKind::kRestart && out.step != RotationStep::kRestart) {
    return bad("a rolling restart has only the step \"restart\"");
  }
  if (out.kind == RotationKind::kDefrag && out.step != RotationStep::kDefrag) {
    return bad("a rolling defrag has only the step \"defrag\"");
  }
  if ((out.kind == RotationKind::kUpgrade) != (out.step == RotationStep::kUpgrade)) {
    return bad("an upgrade has only the step \"upgrade\", and only an upgrade has it");
  }
  if (out.kind == RotationKind::kCa && out.step != RotationStep::kTrustBoth &&
      out.step != RotationStep::kReissue && out.step != RotationStep::kTrustNew) {
    return bad("a CA rotation's step is trust-both, reissue or trust-new");
  }
  if (!parseRfc3339(file.started_at())) {
    return bad("\"started_at\" is not an RFC 3339 UTC time (2026-01-31T12:00:00Z)");
  }
  out.started_at = file.started_at();
  for (const auto& m : file.done()) {
    if (m.empty()) return bad("\"done\" names an empty member");
    out.done.push_back(m);
  }
  out.new_ca = file.new_ca();
  if (out.kind == RotationKind::kCa && !out.new_ca.starts_with("sha256:")) {
    return bad("a CA rotation names no \"new_ca\" (sha256:...)");
  }
  out.current = file.current();
  out.etcd_binary = file.etcd_binary();
  if (out.kind == RotationKind::kUpgrade && !out.etcd_binary.starts_with('/')) {
    return bad("an upgrade names no \"etcd_binary\" (an absolute path)");
  }
  return out;
}

std::string renderRotationJournal(const RotationJournal& journal) {
  v1::RotationJournalFile file;
  file.set_version(kJournalFileVersion);
  file.set_kind(std::string(rotationKindName(journal.kind)));
  file.set_step(std::string(rotationStepName(journal.step)));
  file.set_started_at(journal.started_at);
  for (const auto& m : journal.done) file.add_done(m);
  file.set_new_ca(journal.new_ca);
  file.set_current(journal.current);
  file.set_etcd_binary(journal.etcd_binary);
  return renderStateJson(file);
}

Result<std::optional<RotationJournal>> loadRotationJournal(const std::string& path) {
  if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT) {
    return std::optional<RotationJournal>{};
  }
  auto text = readFile(path);
  if (!text) return fail(text.error());
  if (text->size() > kMaxJournalSize) {
    return fail(Errc::kInvalidArgument, path + ": " + std::to_string(text->size()) +
                                            " bytes is not a rotation journal" +
                                            journalDamagedHint(path));
  }
  auto journal = parseRotationJournal(*text, path);
  if (!journal) return fail(journal.error());
  return std::optional<RotationJournal>(std::move(*journal));
}

Result<void> saveRotationJournal(const std::string& path, const RotationJournal& journal) {
  if (auto r = writeFileAtomic(path, renderRotationJournal(journal), 0600); !r) {
    return fail(r.error().context("saving the rotation journal"));
  }
  return {};
}

Result<void> removeRotationJournal(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return fail(Errc::kIo, "cannot remove the rotation journal " + path + ": " + errnoText(errno));
  }
  return {};
}

std::string describeRotation(const RotationJournal& journal) {
  std::string done;
  for (const auto& m : journal.done) done += (done.empty() ? "" : ", ") + m;
  std::string what;
  switch (journal.kind) {
    case RotationKind::kCerts: what = "a certificate rotation ("; break;
    case RotationKind::kCa: what = "a CA rotation ("; break;
    case RotationKind::kRestart: what = "a rolling restart ("; break;
    case RotationKind::kDefrag: what = "a rolling defrag ("; break;
    case RotationKind::kUpgrade: what = "an upgrade to " + journal.etcd_binary + " ("; break;
  }
  if (journal.kind == RotationKind::kCerts || journal.kind == RotationKind::kCa) {
    what += "step " + std::string(rotationStepName(journal.step)) + ", ";
  }
  return what + "started " + journal.started_at + "; done: " + (done.empty() ? "none yet" : done) +
         (journal.current.empty() || journal.isDone(journal.current)
              ? ""
              : "; begun: " + journal.current) +
         ")";
}

Result<void> refuseWhileInProgress(const std::string& path,
                                   std::initializer_list<RotationKind> mine,
                                   const std::string& what) {
  auto loaded = loadRotationJournal(path);
  if (!loaded) return fail(loaded.error());
  if (!*loaded) return {};
  for (RotationKind kind : mine) {
    if ((*loaded)->kind == kind) return {};
  }
  return fail(Errc::kFailedPrecondition,
              what + " is refused: " + describeRotation(**loaded) + " is in progress (" + path +
                  "), and one member-by-member flow runs at a time; finish it first with `" +
                  std::string(resumeCommand((*loaded)->kind)) + "`");
}

}  // namespace etcdagent::fleet
