// The agent API's snapshot calls (AgentService, agent_service.hpp): ListSnapshots, FetchSnapshot,
// TakeSnapshot. They translate; the scheduler (agent/maintenance) decides and does the work.

#include <cerrno>
#include <cstdio>
#include <memory>

#include "agent/service/agent_service.hpp"
#include "agent/service/on_loop.hpp"
#include "common/file_util.hpp"

namespace etcdagent::agent {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kFetchChunk = 1U << 20;

grpc::Status noScheduler() {
  return {grpc::StatusCode::UNAVAILABLE, "the agent's snapshot scheduler is not running"};
}

// A name ListSnapshots gave: the member's own file, no directory part.
bool listedName(const std::string& name, const std::string& member) {
  return name.starts_with(member + "-") && name.find('/') == std::string::npos &&
         (name.ends_with(".db") || name.ends_with(".bad"));
}

}  // namespace

Result<SnapshotDir> AgentService::snapshotDir() {
  struct Where {
    std::string root;
    std::string token;
  };
  Where where;
  using WhereDone = std::function<void(grpc::Status, Where)>;
  auto s = onLoop<Where>(
      io_, 10s,
      [this](WhereDone done) {
        const auto& plan = supervisor_.state();
        done(grpc::Status::OK,
             Where{snapshots_->settings().dir,
                   plan ? plan->plan().cluster_token() : supervisor_.config().cluster.token});
      },
      &where);
  if (!s.ok()) return fail(Errc::kUnavailable, s.error_message());
  return SnapshotDir(where.root, where.token, supervisor_.config().member.name);
}

grpc::Status AgentService::ListSnapshots(grpc::ServerContext*, const v1::ListSnapshotsRequest*,
                                         v1::ListSnapshotsResponse* out) {
  if (snapshots_ == nullptr) return noScheduler();
  auto dir = snapshotDir();
  if (!dir) return toStatus(dir.error());
  auto listing = dir->list();
  if (!listing) return toStatus(listing.error());
  out->set_dir(dir->path());
  for (auto& r : listing->good) *out->add_good() = std::move(r);
  for (auto& r : listing->bad) *out->add_bad() = std::move(r);
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
  if (!listedName(name, supervisor_.config().member.name)) {
    return {grpc::StatusCode::INVALID_ARGUMENT,
            "\"" + name + "\" is not a snapshot of member " + supervisor_.config().member.name +
                " (names come from ListSnapshots: " + supervisor_.config().member.name +
                "-<time>.db)"};
  }
  auto dir = snapshotDir();
  if (!dir) return toStatus(dir.error());
  auto listing = dir->list();
  if (!listing) return toStatus(listing.error());
  const v1::SnapshotRecord* record = nullptr;
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

}  // namespace etcdagent::agent
