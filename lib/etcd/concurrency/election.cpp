#include "etcd/concurrency/election.hpp"

namespace etcdagent::etcd {

Acquired<Leadership> campaign(Client& client, const Session& session, const std::string& name,
                              const std::string& value, Waker& waker) {
  v3electionpb::CampaignRequest req;
  req.set_name(name);
  req.set_lease(session.lease());
  req.set_value(value);
  auto won = callUntilWoken<&v3electionpb::Election::Stub::Campaign>(client, req, waker);
  if (!won) return std::unexpected(AcquireError{AcquireError::Stage::kWaiting, won.error()});
  Leadership out;
  out.leader = won->leader();
  auto range = confirmHeld(client, out.leader.key(), session.lease());
  if (!range) {
    (void)resign(client, out.leader);
    return std::unexpected(AcquireError{AcquireError::Stage::kConfirming, range.error()});
  }
  out.range = std::move(*range);
  return out;
}

Result<void> resign(Client& client, const v3electionpb::LeaderKey& leader) {
  v3electionpb::ResignRequest req;
  *req.mutable_leader() = leader;
  auto resp = client.call<&v3electionpb::Election::Stub::Resign>(req);
  if (!resp) return fail(resp.error().context("resign from election " + leader.name()));
  return {};
}

ElectionObserver::ElectionObserver(Client& client, Client::Connection conn, Waker& waker)
    : client_(client),
      conn_(std::move(conn)),
      registration_(waker, context_),
      stub_(conn_.channel) {}

Result<std::unique_ptr<ElectionObserver>> ElectionObserver::start(Client& client,
                                                                  const std::string& name,
                                                                  Waker& waker) {
  auto conn = client.connect();
  if (!conn) return fail(conn.error());
  std::unique_ptr<ElectionObserver> observer(new ElectionObserver(client, std::move(*conn), waker));
  if (auto auth = client.authorize(observer->context_); !auth) {
    observer->finished_ = true;  // no stream was started
    return fail(auth.error());
  }
  v3electionpb::LeaderRequest req;
  req.set_name(name);
  observer->stream_ = observer->stub_.Observe(&observer->context_, req);
  return observer;
}

ElectionObserver::~ElectionObserver() {
  if (finished_) return;
  context_.TryCancel();
  while (next()) {
  }
  (void)finish();
}

std::optional<etcdserverpb::RangeResponse> ElectionObserver::next() {
  v3electionpb::LeaderResponse resp;
  if (finished_ || !stream_->Read(&resp)) return std::nullopt;
  etcdserverpb::RangeResponse leader;
  *leader.mutable_header() = resp.header();
  *leader.add_kvs() = resp.kv();
  return leader;
}

Result<void> ElectionObserver::finish() {
  if (finished_) return fail(Errc::kInternal, "the observation of the election has ended already");
  finished_ = true;
  const grpc::Status status = stream_->Finish();
  if (!status.ok()) return fail(client_.errorFor(status, conn_.endpoint));
  return {};
}

}  // namespace etcdagent::etcd
