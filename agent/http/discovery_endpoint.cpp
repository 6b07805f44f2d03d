#include "agent/http/discovery_endpoint.hpp"

#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <ctime>
#include <memory>

#include "agent/bootstrap/discovery_store.hpp"
#include "common/duration.hpp"

namespace etcdagent::agent {
namespace {

HttpResponse toHttp(const DiscoveryResponse& r) {
  HttpResponse out;
  out.status = r.status;
  out.content_type = "application/json";
  out.body = r.body;
  out.headers.emplace_back("X-Etcd-Index", std::to_string(r.etcd_index));
  return out;
}

}  // namespace

DiscoveryEndpoint::DiscoveryEndpoint(boost::asio::io_context& io, std::string dir,
                                     std::chrono::milliseconds wait_timeout)
    : io_(io),
      dir_(std::move(dir)),
      wait_timeout_(wait_timeout),
      registry_([this](const v1::DiscoveryTokenState& s) { return saveDiscoveryToken(dir_, s); }) {}

std::vector<std::string> DiscoveryEndpoint::load() {
  std::vector<std::string> problems;
  auto loaded = loadDiscoveryTokens(dir_);
  if (!loaded) return {loaded.error().message};
  for (const auto& t : loaded->unreadable_tokens) registry_.reserve(t);
  for (const auto& e : loaded->errors) problems.push_back(e.message);
  for (auto& t : loaded->tokens) {
    const std::string token = t.token();
    if (auto r = registry_.restore(std::move(t)); !r) {
      registry_.reserve(token);
      problems.push_back(dir_ + "/" + token + ".json: " + r.error().message);
    }
  }
  return problems;
}

void DiscoveryEndpoint::attach(HttpServer& server) {
  server.routeAsync("/", [this](const HttpRequest& r, HttpServer::Respond respond) {
    serve(r, std::move(respond));
  });
}

void DiscoveryEndpoint::serve(const HttpRequest& request, HttpServer::Respond respond) {
  const DiscoveryRequest asked{request.method, request.path, request.query, request.body};
  auto answer = [respond = std::move(respond)](const DiscoveryResponse& r) { respond(toHttp(r)); };
  if (!access_) {
    handle(asked, wait_timeout_, std::move(answer));
    return;
  }
  HttpDiscoveryFacts facts;
  facts.serves_registry = access_->serves_registry();
  if (!facts.serves_registry) {
    facts.own_plan = access_->own_plan();
    facts.caller = access_->caller(request.peer);
    facts.caller_privileged = access_->privileged(facts.caller);
    facts.asked_coordinator = request.authority;
  }
  auto route = routeHttpDiscovery(asked, facts);
  switch (route.kind) {
    case HttpDiscoveryRoute::Kind::kRegistry:
      handle(asked, wait_timeout_, std::move(answer));
      return;
    case HttpDiscoveryRoute::Kind::kRefused: answer(route.refusal); return;
    case HttpDiscoveryRoute::Kind::kRelay:
      if (access_->relay == nullptr) {
        answer(relayFailureResponse("discovery relay: this agent does not relay"));
        return;
      }
      access_->relay->forward(route.target,
                              toRelayRequest(request.method, request.target, request.body),
                              std::move(answer));
      return;
  }
}

void DiscoveryEndpoint::handle(const DiscoveryRequest& request, std::chrono::milliseconds max_wait,
                               DiscoveryRegistry::Reply reply) {
  auto timer = std::make_shared<boost::asio::steady_timer>(io_);
  auto answer = [timer, reply = std::move(reply)](DiscoveryResponse r) {
    timer->cancel();
    reply(std::move(r));
  };
  auto parked = registry_.handle(request, answer);
  if (!parked) return;
  timer->expires_after(std::min(max_wait, wait_timeout_));
  // The timer does not own itself: the registry's stored reply holds it until the wait ends.
  timer->async_wait([this, id = *parked](const boost::system::error_code& ec) {
    if (!ec) registry_.expire(id);
  });
}

Result<v1::NewDiscoveryTokenResponse> DiscoveryEndpoint::newToken(unsigned size,
                                                                  const std::string& base_url) {
  auto state = registry_.createToken(size, nowRfc3339());
  if (!state) return fail(state.error());
  v1::NewDiscoveryTokenResponse out;
  out.set_token(state->token());
  out.set_size(state->size());
  out.set_url(base_url + "/" + state->token());
  return out;
}

std::string discoveryBaseUrl(const std::string& http_listen, const std::string& advertise_host,
                             unsigned short port) {
  std::string host = http_listen.substr(0, http_listen.rfind(':'));
  if (host.starts_with('[') && host.ends_with(']')) host = host.substr(1, host.size() - 2);
  if (host.empty() || host == "0.0.0.0" || host == "::") host = advertise_host;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return "http://" + host + ":" + std::to_string(port);
}

}  // namespace etcdagent::agent
