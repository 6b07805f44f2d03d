#include "fleetctl/commands/watch_session.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>

#include "fleetctl/commands/watch_exec.hpp"
#include "fleetctl/output/watch.hpp"

namespace etcdagent::fleet {

using etcdserverpb::WatchRequest;
using etcdserverpb::WatchResponse;

void WatchCancelState::cancel() {
  std::lock_guard lock(mu);
  cancelled = true;
  if (context != nullptr) context->TryCancel();
}

void WatchCancelState::wake() const {
  std::uint64_t one = 1;
  if (::write(wake_fd, &one, sizeof one) < 0) {
    // an eventfd below its maximum cannot fail
  }
}

WatchSession::WatchSession(Context& ctx, etcd::Client& client, bool interactive)
    : ctx_(ctx), client_(client), interactive_(interactive), state_(new WatchCancelState) {
  state_->wake_fd = ::eventfd(0, EFD_CLOEXEC);
}

WatchSession::~WatchSession() {
  {
    std::lock_guard lock(state_->mu);
    state_->context = nullptr;
  }
  ::close(state_->wake_fd);
}

Result<void> WatchSession::open() {
  auto conn = client_.connect();
  if (!conn) return std::unexpected(conn.error());
  context_ = std::make_unique<grpc::ClientContext>();
  if (auto r = client_.authorize(*context_); !r) return std::unexpected(r.error());
  // clientv3.WithRequireLeader, as etcdctl watches: etcd ends the watch rather than serve it
  // from a member cut off from the leader.
  context_->AddMetadata("hasleader", "true");
  channel_ = conn->channel;
  endpoint_ = conn->endpoint;
  stub_ = etcdserverpb::Watch::NewStub(channel_);
  {
    std::lock_guard lock(state_->mu);
    state_->context = context_.get();
    if (state_->cancelled) context_->TryCancel();
  }
  stream_ = stub_->Watch(context_.get());
  return {};
}

bool WatchSession::create(const etcdserverpb::WatchCreateRequest& create, WatchTarget target) {
  {
    std::lock_guard lock(mu_);
    pending_.push_back(std::move(target));
  }
  WatchRequest req;
  *req.mutable_create_request() = create;
  return stream_->Write(req);
}

bool WatchSession::requestProgress() {
  WatchRequest req;
  req.mutable_progress_request();
  return stream_->Write(req);
}

void WatchSession::readLoop() {
  WatchResponse resp;
  while (stream_->Read(&resp)) {
    if (!handle(resp)) {
      state_->cancel();
      break;
    }
  }
  if (ending_ == WatchEnding::kNone) ending_ = WatchEnding::kStreamEnded;
  state_->wake();
}

void WatchSession::reset() {
  std::lock_guard lock(mu_);
  ending_ = WatchEnding::kNone;
  responses_ = 0;
  pending_.clear();
  watches_.clear();
}

void WatchSession::printError(const std::string& line) {
  std::lock_guard lock(mu_);
  ctx_.err() << line << "\n";
  ctx_.err().flush();
}

bool WatchSession::handle(const WatchResponse& resp) {
  std::lock_guard lock(mu_);
  ++responses_;
  // Where a resumed watch must start (clientv3 keeps the same): after the last event seen, or
  // after the revision the watch was created at.
  if (resp.events_size() > 0) {
    next_rev_ = resp.events(resp.events_size() - 1).kv().mod_revision() + 1;
  } else if (resp.created() || isProgressNotify(resp)) {
    next_rev_ = std::max(next_rev_, resp.header().revision() + 1);
  }
  const Output o = ctx_.output();
  if (resp.created()) {
    // clientv3 does not pass the creation notice on: nothing is printed for it.
    WatchTarget target;
    if (!pending_.empty()) {
      target = std::move(pending_.front());
      pending_.pop_front();
    }
    if (!resp.canceled()) {
      watches_[resp.watch_id()] = std::move(target);
      return true;
    }
  }
  if (resp.canceled()) {
    ctx_.err() << "watch was canceled (" << watchCancelReason(resp) << ")\n";
    ctx_.err().flush();
    // clientv3 hands a compaction notice to the watcher, which prints it.
    if (resp.compact_revision() != 0) printWatchResponse(o, resp);
    ctx_.out().flush();
    watches_.erase(resp.watch_id());
    if (interactive_) return true;
    ending_ = WatchEnding::kServerCancelled;
    return false;
  }
  // A progress notice for the whole stream reaches every watch.
  std::vector<const WatchTarget*> targets;
  if (resp.watch_id() == -1 && isProgressNotify(resp)) {
    for (const auto& [id, w] : watches_) targets.push_back(&w);
  } else if (auto it = watches_.find(resp.watch_id()); it != watches_.end()) {
    targets.push_back(&it->second);
  } else {
    return true;  // a watch we no longer follow
  }
  for (const WatchTarget* w : targets) {
    if (isProgressNotify(resp))
      ctx_.out() << "progress notify: " << resp.header().revision() << "\n";
    printWatchResponse(o, resp);
    ctx_.out().flush();
    if (w->exec_args.empty()) continue;
    if (auto r = runWatchExec(w->exec_args, resp); !r) {
      exec_error_ = r.error();
      ending_ = WatchEnding::kExecFailed;
      return false;
    }
  }
  return true;
}

}  // namespace etcdagent::fleet
