// The agent API's snapshot calls (AgentService, agent_service.hpp): ListSnapshots, FetchSnapshot,
// TakeSnapshot. They translate; the scheduler (agent/maintenance) decides and does the work.

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "agent/restore/restore.hpp"
#include "agent/service/agent_service.hpp"
#include "agent/service/on_loop.hpp"
#include "common/file_util.hpp"
#include "common/zstd_stream.hpp"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kFetchChunk = 1U << 20;

grpc::Status noScheduler() {
  return {grpc::StatusCode::UNAVAILABLE, "the agent's snapshot scheduler is not running"};
}

// A name ListSnapshots gave: the member's own file, no directory part.
bool listedName(const std::string& name, const std::string& member) {
  const std::string_view plain = uncompressedName(name);
  return name.starts_with(member + "-") && name.find('/') == std::string::npos &&
         (plain.ends_with(".db") || plain.ends_with(".bad"));
}

}  // namespace

Result<AgentService::SnapshotPlaces> AgentService::snapshotPlaces() {
  struct Where {
    std::string root;
    std::string token;
    unsigned keep_copies = 0;
  };
  Where where;
  using WhereDone = std::function<void(grpc::Status, Where)>;
  auto s = onLoop<Where>(
      io_, 10s,
      [this](WhereDone done) {
        const auto& plan = supervisor_.state();
        const auto& settings = snapshots_->settings();
        done(grpc::Status::OK,
             Where{settings.dir,
                   plan ? plan->plan().cluster_token() : supervisor_.config().cluster.token,
                   settings.keep_copies});
      },
      &where);
  if (!s.ok()) return fail(Errc::kUnavailable, s.error_message());
  SnapshotDir own(where.root, where.token, supervisor_.config().member.name);
  CopyStore copies(own.path() + "/copies", where.keep_copies);
  return SnapshotPlaces{std::move(own), std::move(copies), where.token};
}

grpc::Status AgentService::ListSnapshots(grpc::ServerContext*, const v1::ListSnapshotsRequest*,
                                         v1::ListSnapshotsResponse* out) {
  if (snapshots_ == nullptr) return noScheduler();
  auto places = snapshotPlaces();
  if (!places) return toStatus(places.error());
  auto listing = places->own.list();
  if (!listing) return toStatus(listing.error());
  out->set_dir(places->own.path());
  for (auto& r : listing->good) *out->add_good() = std::move(r);
  for (auto& r : listing->bad) *out->add_bad() = std::move(r);
  auto copies = places->copies.list();
  if (!copies) return toStatus(copies.error());
  for (auto& r : *copies) *out->add_copies() = std::move(r);
  v1::SnapshotReport report;
  using ReportDone = std::function<void(grpc::Status, v1::SnapshotReport)>;
  auto s = onLoop<v1::SnapshotReport>(
      io_, 10s, [this](ReportDone done) { done(grpc::Status::OK, snapshots_->report()); }, &report);
  if (!s.ok()) return s;
  *out->mutable_report() = std::move(report);
  return grpc::Status::OK;
}

grpc::Status AgentService::FetchSnapshot(grpc::ServerContext* ctx,
                                         const v1::FetchSnapshotRequest* request,
                                         grpc::ServerWriter<v1::FetchSnapshotChunk>* writer) {
  // A snapshot holds every key of the cluster: only who may change the member may read it.
  if (auto s = allowMutation(ctx, "FetchSnapshot"); !s.ok()) return s;
  if (snapshots_ == nullptr) return noScheduler();
  const std::string& name = request->name();
  auto places = snapshotPlaces();
  if (!places) return toStatus(places.error());
  // The member's own file, or a copy of another member's: a name as ListSnapshots gave it.
  const std::string& own = supervisor_.config().member.name;
  const v1::SnapshotRecord* record = nullptr;
  std::optional<SnapshotListing> listing;
  std::optional<SnapshotDir> dir;
  if (listedName(name, own)) {
    dir = places->own;
  } else if (name.find('/') == std::string::npos) {
    // A copy of another member's snapshot, in copies/<member>/.
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(places->copies.root(), ec)) {
      const std::string member = entry.path().filename().string();
      if (member != own && listedName(name, member) && entry.is_directory(ec)) {
        dir = places->copies.dirOf(member);
        break;
      }
    }
  }
  if (!dir) {
    return {grpc::StatusCode::INVALID_ARGUMENT,
            "\"" + name + "\" is not a snapshot this agent keeps (names come from ListSnapshots: " +
                own + "-<time>.db, or a copy of another member's)"};
  }
  auto listed = dir->list();
  if (!listed) return toStatus(listed.error());
  listing = std::move(*listed);
  for (const auto* list : {&listing->good, &listing->bad}) {
    for (const auto& r : *list) {
      if (r.name() == name) record = &r;
    }
  }
  if (record == nullptr) {
    return {grpc::StatusCode::NOT_FOUND,
            "no snapshot " + name + " in " + dir->path() + " (removed by the retention?)"};
  }
  // Opened once: the retention may remove the name meanwhile, the open file stays readable.
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(dir->file(name).c_str(), "rbe"),
                                             &std::fclose);
  if (!file) {
    return {grpc::StatusCode::NOT_FOUND,
            "cannot open " + dir->file(name) + ": " + errnoText(errno)};
  }
  v1::FetchSnapshotChunk msg;
  *msg.mutable_record() = *record;
  std::string buffer(kFetchChunk, '\0');
  bool first = true;
  while (true) {
    const std::size_t n = std::fread(buffer.data(), 1, buffer.size(), file.get());
    if (n == 0 && !first) break;
    msg.set_chunk(buffer.data(), n);
    if (!writer->Write(msg)) return {grpc::StatusCode::CANCELLED, "the caller went away"};
    msg.clear_record();
    first = false;
    if (n < buffer.size()) break;
  }
  if (std::ferror(file.get()) != 0) {
    return {grpc::StatusCode::INTERNAL, "cannot read " + dir->file(name)};
  }
  return grpc::Status::OK;
}

grpc::Status AgentService::TakeSnapshot(grpc::ServerContext* ctx, const v1::TakeSnapshotRequest*,
                                        v1::TakeSnapshotResponse* out) {
  if (auto s = allowMutation(ctx, "TakeSnapshot"); !s.ok()) return s;
  if (snapshots_ == nullptr) return noScheduler();
  using RecordDone = std::function<void(grpc::Status, v1::SnapshotRecord)>;
  return onLoop<v1::SnapshotRecord>(
      io_, 600s,
      [this](RecordDone done) {
        snapshots_->takeNow([done](Result<v1::SnapshotRecord> r) {
          if (!r) {
            done(toStatus(r.error()), {});
            return;
          }
          done(grpc::Status::OK, std::move(*r));
        });
      },
      out->mutable_record(), ctx);
}

grpc::Status AgentService::StoreSnapshotCopy(
    grpc::ServerContext* ctx, grpc::ServerReader<v1::StoreSnapshotCopyRequest>* reader,
    v1::StoreSnapshotCopyResponse* out) {
  if (auto s = allowSnapshotCopy(ctx); !s.ok()) return s;
  if (snapshots_ == nullptr) return noScheduler();
  v1::StoreSnapshotCopyRequest first;
  if (!reader->Read(&first)) {
    return {grpc::StatusCode::INVALID_ARGUMENT, "the copy sent no message"};
  }
  auto places = snapshotPlaces();
  if (!places) return toStatus(places.error());
  const v1::SnapshotRecord& offered = first.record();
  if (auto ok = checkCopyOffer(offered, supervisor_.config().member.name, places->cluster_token);
      !ok) {
    return toStatus(ok.error());
  }
  if (auto kept = places->copies.find(offered); kept) {
    *out->mutable_record() = *kept;
    return {grpc::StatusCode::ALREADY_EXISTS,
            "a copy of " + offered.name() + " with that sha256 is kept here already"};
  }
  if (places->copies.keep() == 0) {
    return {grpc::StatusCode::FAILED_PRECONDITION,
            "this agent keeps no copies of other members' snapshots ([snapshot] keep_copies = 0)"};
  }
  // One copy of a member at a time (a retry may overlap a slow first attempt).
  {
    std::lock_guard lock(copies_mutex_);
    if (!copies_receiving_.insert(offered.member_name()).second) {
      return {grpc::StatusCode::ABORTED, "a copy of member " + offered.member_name() +
                                             "'s snapshot is being received already"};
    }
  }
  struct Release {
    AgentService* service;
    std::string member;
    ~Release() {
      std::lock_guard lock(service->copies_mutex_);
      service->copies_receiving_.erase(member);
    }
  } release{this, offered.member_name()};
  auto receiving = places->copies.receive(offered);
  if (!receiving) return toStatus(receiving.error());
  auto take = [&](const std::string& chunk) -> Result<void> {
    if (chunk.size() > kMaxUploadChunk) {
      return fail(Errc::kInvalidArgument, "a chunk of " + std::to_string(chunk.size()) +
                                              " bytes: at most " + std::to_string(kMaxUploadChunk) +
                                              " per message");
    }
    return (*receiving)->write(chunk);
  };
  if (auto r = take(first.chunk()); !r) return toStatus(r.error());
  v1::StoreSnapshotCopyRequest msg;
  while (reader->Read(&msg)) {
    if (auto r = take(msg.chunk()); !r) return toStatus(r.error());
  }
  auto kept = (*receiving)->commit();
  if (!kept) return toStatus(kept.error());
  *out->mutable_record() = std::move(*kept);
  return grpc::Status::OK;
}

}  // namespace etcdagent::agent
