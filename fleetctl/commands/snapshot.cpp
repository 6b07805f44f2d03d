// snapshot save / status: etcdctl's snapshot commands (restore writes etcd's WAL and raft state
// and stays with etcdctl).

#include "fleetctl/commands/snapshot.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <optional>

#include "common/encoding.hpp"
#include "common/file_util.hpp"
#include "etcd/snapshot/status.hpp"
#include "etcd/snapshot_stream.hpp"
#include "fleet/snapshot_source.hpp"
#include "fleetctl/cli/interrupt.hpp"
#include "fleetctl/commands/fleet_io.hpp"
#include "fleetctl/commands/snapshot_fleet.hpp"
#include "fleetctl/commands/util.hpp"
#include "fleetctl/output/maintenance.hpp"

namespace etcdagent::fleet {

// ---- writer ---------------------------------------------------------------------------------

namespace {

// etcdctl's words for each failed step of writing the file (snapshot.SaveWithVersion).
Error etcdctlWording(DurableFile::Step step, const std::string& part, const std::string& path,
                     int err) {
  switch (step) {
    case DurableFile::Step::kCreate:
      // Go's *PathError inside, then what to check.
      return {Errc::kIo, "could not open " + part + " (open " + part + ": " + goErrnoText(err) +
                             "); check that the directory exists and is writable"};
    case DurableFile::Step::kWrite:
      return {Errc::kIo, "could not write " + part + " (" + errnoText(err) + ")"};
    case DurableFile::Step::kSync:
      return {Errc::kIo, "could not fsync " + part + " (" + errnoText(err) + ")"};
    case DurableFile::Step::kClose:
      return {Errc::kIo, "could not close " + part + " (" + errnoText(err) + ")"};
    case DurableFile::Step::kRename:
      return {Errc::kIo, "could not rename " + part + " to " + path + " (" + errnoText(err) + ")"};
  }
  return {Errc::kIo, part + ": " + errnoText(err)};
}

}  // namespace

Result<std::unique_ptr<SnapshotFileWriter>> SnapshotFileWriter::create(std::string path) {
  // etcdctl: os.OpenFile(partpath, O_WRONLY|O_CREATE|O_TRUNC, 0600). A .part left behind by a
  // crashed run is simply overwritten.
  auto file = DurableFile::create(std::move(path), 0600, etcdctlWording);
  if (!file) return fail(file.error());
  return std::unique_ptr<SnapshotFileWriter>(new SnapshotFileWriter(std::move(*file)));
}

Result<void> SnapshotFileWriter::write(std::string_view chunk) {
  digest_.update(chunk);
  return file_.write(chunk);
}

Result<void> SnapshotFileWriter::commit() {
  if (!file_.open()) return fail(Errc::kInternal, "snapshot file already closed");
  if (auto r = digest_.finish(); !r) {
    file_.abort();
    return r;
  }
  return file_.commit();
}

// ---- commands -------------------------------------------------------------------------------

namespace {

// Progress on a terminal only, and only when there is enough to wait for.
class SaveProgress {
 public:
  explicit SaveProgress(std::ostream& err) : err_(err), enabled_(::isatty(STDERR_FILENO) == 1) {}

  void update(std::uint64_t received, std::uint64_t remaining) {
    if (!enabled_ || received + remaining < kMinSize) return;
    auto now = std::chrono::steady_clock::now();
    if (shown_ && now - last_ < std::chrono::milliseconds(200) && remaining != 0) return;
    last_ = now;
    shown_ = true;
    const double total = static_cast<double>(received + remaining);
    char buf[128];
    std::snprintf(buf, sizeof buf, "\rDownloading snapshot: %s / %s (%.0f%%)   ",
                  humanizeBytes(received).c_str(), humanizeBytes(received + remaining).c_str(),
                  100.0 * static_cast<double>(received) / total);
    err_ << buf << std::flush;
  }
  void done() {
    if (shown_) err_ << "\n" << std::flush;
  }

 private:
  static constexpr std::uint64_t kMinSize = 8ull << 20;
  std::ostream& err_;
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_;
};

// How long each member gets to answer when the source is picked from the inventory.
constexpr std::chrono::milliseconds kSourceTimeout{2000};

std::unexpected<CommandError> saveFailed(std::string message) {
  // etcdctl exits with ExitInterrupted (5) whenever snapshot save fails.
  return commandError(exitcode::kInterrupted, std::move(message));
}

// The one endpoint to stream from: --endpoints must name one (etcdctl's rule); without
// --endpoints, a healthy member of the fleet inventory, named on stderr.
std::expected<std::string, CommandError> snapshotEndpoint(Context& ctx) {
  const auto& endpoints = ctx.global().client.endpoints;
  if (endpoints.size() == 1) return endpoints.front();
  if (ctx.global().endpoints_set) {
    std::string list;
    for (const auto& e : endpoints) list += (list.empty() ? "" : " ") + e;
    return saveFailed("snapshot must be requested to one selected node, not multiple [" + list +
                      "]");
  }
  StreamProgress progress(ctx.err(), ctx.err(), "warning: ");
  auto seams = FleetSeams::open(ctx, progress);
  if (!seams) return saveFailed(seams.error().message);
  auto source = pickSnapshotSource((*seams)->env(), endpoints, kSourceTimeout);
  if (!source) return saveFailed(source.error().message);
  ctx.err() << "snapshot save: from member " << (source->name.empty() ? "" : source->name + " ")
            << "(" << membership::hexId(source->id) << ") at " << source->endpoint
            << ", healthy (no --endpoints: picked from the fleet inventory "
            << ctx.global().fleet_path << ")\n";
  return source->endpoint;
}

CommandResult runSnapshotSave(Context& ctx) {
  if (ctx.flags().changed("host")) return runSnapshotSaveOnAgent(ctx);
  if (ctx.args().size() != 1) return badArgs("snapshot save expects one argument");
  const std::string path = ctx.args()[0];
  auto endpoint = snapshotEndpoint(ctx);
  if (!endpoint) return std::unexpected(endpoint.error());

  // The stream's context outlives the guard (declared first, emplaced later): the guard's
  // destructor joins its thread, so no callback can cancel a destroyed context.
  std::optional<grpc::ClientContext> stream_ctx;
  InterruptGuard guard;  // before the client starts gRPC's threads
  auto writer = SnapshotFileWriter::create(path);
  if (!writer) return saveFailed(writer.error().message);

  FLEET_TRY_CLIENT(all, ctx);
  // The member picked from the inventory gets a client of its own; --endpoints named it already.
  std::unique_ptr<etcd::Client> picked;
  if (ctx.global().client.endpoints.size() != 1) {
    auto one = all.forEndpoint(*endpoint);
    if (!one) return saveFailed(one.error().message);
    picked = std::move(*one);
  }
  etcd::Client& client = picked ? *picked : all;
  stream_ctx.emplace();
  // etcdctl: no deadline unless --command-timeout is given (a large snapshot takes long).
  std::optional<Duration> timeout;
  if (ctx.global().command_timeout_set) {
    timeout = ctx.global().client.command_timeout;
    stream_ctx->set_deadline(std::chrono::system_clock::now() + *timeout);
  }
  grpc::ClientContext* cancel_target = &*stream_ctx;
  auto handle = guard.onInterrupt([cancel_target] { cancel_target->TryCancel(); });

  SaveProgress progress(ctx.err());
  std::optional<Error> write_error;
  auto streamed = etcd::streamSnapshot(
      client, *stream_ctx,
      [&](std::string_view chunk, std::uint64_t remaining) -> Result<void> {
        if (auto w = (*writer)->write(chunk); !w) {
          write_error = w.error();
          return w;
        }
        progress.update((*writer)->size(), remaining);
        return {};
      },
      timeout.value_or(Duration{}));
  guard.remove(handle);
  progress.done();

  if (guard.interrupted()) {
    (*writer)->abort();
    return saveFailed("snapshot save interrupted (signal " + std::to_string(guard.signal()) +
                      "); removed " + (*writer)->partPath() + ", " + path + " was not written");
  }
  if (write_error) return saveFailed(write_error->message);
  if (!streamed) {
    (*writer)->abort();
    return saveFailed(streamed.error().message + " (nothing was saved)");
  }
  if (auto r = (*writer)->commit(); !r) {
    return saveFailed("snapshot from " + *endpoint + " not saved: " + r.error().message +
                      "; try again");
  }
  ctx.out() << "Snapshot saved at " << path << "\n";
  return {};
}

CommandResult runSnapshotStatus(Context& ctx) {
  if (ctx.args().size() != 1) return badArgs("snapshot status requires exactly one argument");
  if (auto r = requireFormat(ctx, printSnapshotStatus); !r) return r;
  const std::string& path = ctx.args()[0];
  struct stat sb {};
  if (::stat(path.c_str(), &sb) != 0) {
    return commandError(exitcode::kError, "stat " + path + ": " + goErrnoText(errno));
  }
  // etcdctl prints a status for a damaged copy; we check the sha256 trailer first.
  auto checked = etcd::checkSnapshotFile(path);
  if (!checked) return commandError(exitcode::kError, checked.error().message);
  printSnapshotStatus(ctx.output(), checked->status);
  if (!checked->has_trailer) {
    ctx.err() << "Note: " << path
              << " has no sha256 trailer (a bbolt database as copied from a member's data dir, "
                 "not a file of snapshot save): only bbolt's structure was checked, not its "
                 "content\n";
  }
  return {};
}

}  // namespace

Command snapshotCommand() {
  Command save{
      .name = "save",
      .usage = "snapshot save <filename> | snapshot save --host HOST <filename>",
      .summary = "Stores an etcd node backend snapshot to a given file",
      .description =
          "\tWith --host, the member's agent takes the snapshot (verified and kept in "
          "its snapshot\n\tdirectory, like a scheduled one) and etcd-fleet downloads "
          "it.",
      .flags =
          [](FlagSet& f) {
            f.stringSlice("host", 0, {},
                          "the member (name or host) whose agent takes the snapshot");
          },
      .run = runSnapshotSave,
  };
  Command status{
      .name = "status",
      .usage = "snapshot status <filename>",
      .summary = "Gets backend snapshot status of a given file",
      .description =
          "\tWhen --write-out is set to simple, this command prints out comma-separated "
          "status lists for each endpoint.\n"
          "\tThe items in the lists are hash, revision, total keys, total size.\n"
          "\tA file of snapshot save ends with the sha256 of its database: a file whose sha256\n"
          "\tdoes not match (a damaged copy), or whose size fits neither a snapshot nor a bbolt\n"
          "\tdatabase (truncated), is refused. A bbolt file without it (copied from a member's\n"
          "\tdata dir) is read with a note on stderr.",
      .run = runSnapshotStatus,
  };
  return Command{
      .name = "snapshot",
      .usage = "snapshot <subcommand>",
      .summary = "Manages etcd node snapshots",
      .children = {std::move(save), std::move(status), snapshotListCommand(),
                   snapshotFetchCommand()},
  };
}

}  // namespace etcdagent::fleet
