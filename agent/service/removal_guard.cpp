#include "agent/service/removal_guard.hpp"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "etcd/client.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "etcd/probe_keys.hpp"

namespace etcdagent::agent {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::size_t kMaxEndpoints = 8;
constexpr milliseconds kStep{1500};

bool listsMember(const ClusterView& view, const WipeFacts& facts) {
  if (facts.member_id != 0) return membership::findById(view.members, facts.member_id) != nullptr;
  return std::any_of(facts.peer_urls.begin(), facts.peer_urls.end(), [&](const std::string& u) {
    return membership::findByPeerUrl(view.members, u) != nullptr;
  });
}

std::string who(const WipeFacts& facts) {
  return "member " + facts.member_name +
         (facts.member_id != 0 ? " (" + hexId(facts.member_id) + ")" : std::string());
}

std::string answers(const std::vector<ClusterView>& views) {
  if (views.empty()) return "no member of the cluster is known to this agent";
  std::string out;
  for (const auto& v : views) {
    out += (out.empty() ? "" : "; ") + v.endpoint + ": " +
           (v.error.empty() ? std::string("answered") : v.error);
  }
  return out;
}

milliseconds left(Clock::time_point deadline) {
  return std::max(milliseconds(0),
                  std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
}

// A linearizable read, then MemberList, on one client URL.
ClusterView askEndpoint(const std::string& endpoint, milliseconds timeout,
                        const etcd::TlsConfig& tls) {
  ClusterView view{.endpoint = endpoint};
  etcd::ClientConfig cfg;
  cfg.endpoints = {endpoint};
  if (endpoint.starts_with("https://")) cfg.tls = tls;
  cfg.dial_timeout = std::min(timeout, milliseconds(1000));
  cfg.command_timeout = timeout;
  auto client = etcd::Client::create(cfg);
  if (!client) {
    view.error = client.error().message;
    return view;
  }
  etcdserverpb::RangeRequest read;
  read.set_key(std::string(etcd::kRemovalCheckKey));
  read.set_count_only(true);  // serializable=false: linearizable
  auto r = (*client)->call<&etcdserverpb::KV::Stub::Range>(read, {etcd::Retry::kOnce, timeout});
  // etcd checks permissions after the read index: an auth refusal still proves quorum.
  const bool auth_refused =
      !r && (r.error().code == Errc::kPermissionDenied || r.error().code == Errc::kUnauthenticated);
  if (!r && !auth_refused) {
    view.reached = r.error().code != Errc::kUnavailable;
    view.error = "no quorum-backed answer (" + r.error().message + ")";
    return view;
  }
  view.reached = true;
  auto members = membership::listMembers(**client);
  if (!members) {
    view.error = members.error().message;
    return view;
  }
  view.quorum = true;
  view.members = std::move(*members);
  return view;
}

// The request and its bounded run on `stream` (TCP, or TLS over TCP): the body of a 200 answer.
template <class Stream, class Connected>
std::string runGetMembers(boost::asio::io_context& io, Stream& stream, const std::string& host,
                          const std::string& port, const std::string& host_header,
                          milliseconds timeout, Connected connected) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  beast::flat_buffer buffer;
  http::request<http::empty_body> req{http::verb::get, "/members", 11};
  req.set(http::field::host, host_header);
  http::response<http::string_body> res;
  boost::asio::ip::tcp::resolver resolver(io);
  std::string body;
  beast::get_lowest_layer(stream).expires_after(timeout);
  resolver.async_resolve(host, port, [&](beast::error_code ec, auto results) {
    if (ec) return;
    beast::get_lowest_layer(stream).async_connect(results, [&](beast::error_code ec2, auto) {
      if (ec2) return;
      connected([&] {
        http::async_write(stream, req, [&](beast::error_code ec3, std::size_t) {
          if (ec3) return;
          http::async_read(stream, buffer, res, [&](beast::error_code ec4, std::size_t) {
            if (!ec4 && res.result() == http::status::ok) body = res.body();
          });
        });
      });
    });
  });
  io.run_for(timeout + milliseconds(100));
  // Whatever is still pending (a slow resolve) ends now, before the locals it refers to go.
  beast::error_code ignored;
  resolver.cancel();
  beast::get_lowest_layer(stream).socket().close(ignored);
  io.restart();
  io.run();
  return body;
}

// GET <peer URL>/members (etcd's peer API), bounded by `timeout`; "" when it did not answer. An
// https:// peer is asked over TLS with the agent's peer certificate, verifying the member's
// against the fleet CA for the host dialled.
std::string getPeerMembers(const std::string& peer_url, milliseconds timeout,
                           const etcd::TlsConfig& tls) {
  namespace beast = boost::beast;
  std::string_view rest(peer_url);
  const bool https = rest.starts_with("https://");
  if (!https && !rest.starts_with("http://")) return {};
  rest.remove_prefix(https ? 8 : 7);
  rest = rest.substr(0, rest.find('/'));
  const auto colon = rest.rfind(':');
  if (colon == std::string_view::npos) return {};
  std::string host(rest.substr(0, colon));
  const std::string port(rest.substr(colon + 1));
  if (host.starts_with('[') && host.ends_with(']')) host = host.substr(1, host.size() - 2);
  boost::asio::io_context io;
  if (!https) {
    beast::tcp_stream stream(io);
    return runGetMembers(io, stream, host, port, std::string(rest), timeout,
                         [](const auto& next) { next(); });
  }
  namespace ssl = boost::asio::ssl;
  ssl::context ctx(ssl::context::tls_client);
  beast::error_code ec;
  ctx.load_verify_file(tls.ca_file, ec);
  if (!ec) ctx.use_certificate_chain_file(tls.cert_file, ec);
  if (!ec) ctx.use_private_key_file(tls.key_file, ssl::context::pem, ec);
  if (ec) return {};
  ctx.set_verify_mode(ssl::verify_peer);
  ssl::stream<beast::tcp_stream> stream(io, ctx);
  stream.set_verify_callback(ssl::host_name_verification(host));
  return runGetMembers(
      io, stream, host, port, std::string(rest), timeout, [&stream](const auto& next) {
        stream.async_handshake(ssl::stream_base::client, [next](beast::error_code hs) {
          if (!hs) next();
        });
      });
}

}  // namespace

bool needsClusterCheck(const WipeFacts& facts) {
  return facts.has_plan && facts.started_once;
}

Result<void> decideWipe(const WipeFacts& facts) {
  if (!needsClusterCheck(facts)) return {};  // rule 1
  for (const auto& v : facts.views) {
    if (!v.quorum) continue;
    if (listsMember(v, facts)) {  // rule 2a
      return fail(Errc::kFailedPrecondition,
                  who(facts) + " is still a member of its cluster (" + v.endpoint +
                      " lists it, with quorum): refusing to wipe its data. Remove it from the "
                      "cluster first: etcd-fleet member remove " +
                      facts.member_name + " (checks quorum, then wipes it)");
    }
    return {};  // rule 2b
  }
  if (facts.reported_removed) return {};  // rule 3a
  const bool anyone = std::any_of(facts.views.begin(), facts.views.end(),
                                  [](const ClusterView& v) { return v.reached; });
  if (!facts.etcd_running && !anyone) return {};  // rule 3b
  return fail(Errc::kFailedPrecondition,
              "cannot confirm that " + who(facts) +
                  " was removed from its cluster, so its data is kept: no quorum-backed member "
                  "answered (" +
                  answers(facts.views) + "). Remove it with etcd-fleet member remove " +
                  facts.member_name +
                  " once the cluster has quorum, or stop it (etcd-fleet member stop) if the "
                  "whole cluster is gone");
}

std::vector<ClusterView> EtcdClusterAsker::ask(const std::vector<std::string>& own_client_urls,
                                               const std::vector<std::string>& peer_urls,
                                               milliseconds budget) {
  const auto deadline = Clock::now() + budget;
  std::vector<ClusterView> views;
  std::vector<std::string> asked;
  auto tryEndpoint = [&](const std::string& ep) {
    if (std::find(asked.begin(), asked.end(), ep) != asked.end() || asked.size() >= kMaxEndpoints ||
        left(deadline).count() == 0) {
      return false;
    }
    asked.push_back(ep);
    views.push_back(askEndpoint(ep, std::min(kStep, left(deadline)), client_));
    return views.back().quorum;
  };
  for (const auto& ep : own_client_urls) {
    if (tryEndpoint(ep)) return views;
  }
  for (const auto& peer : peer_urls) {
    if (left(deadline).count() == 0) break;
    const auto body = getPeerMembers(peer, std::min(kStep, left(deadline)), peer_);
    if (body.empty()) {
      views.push_back({.endpoint = peer, .error = "its peer port did not answer GET /members"});
      continue;
    }
    // That member is alive: the cluster is not gone, whatever its client URLs answer.
    views.push_back({.endpoint = peer,
                     .reached = true,
                     .error = "answered on its peer port, without a quorum-backed client answer"});
    for (const auto& ep : clientUrlsFromPeerMembers(body)) {
      if (tryEndpoint(ep)) return views;
    }
  }
  return views;
}

std::vector<std::string> otherPeerUrls(const std::string& initial_cluster,
                                       const std::string& self) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < initial_cluster.size() && out.size() < kMaxEndpoints) {
    auto comma = initial_cluster.find(',', i);
    if (comma == std::string::npos) comma = initial_cluster.size();
    const std::string entry = initial_cluster.substr(i, comma - i);
    const auto eq = entry.find('=');
    if (eq != std::string::npos && entry.substr(0, eq) != self) out.push_back(entry.substr(eq + 1));
    i = comma + 1;
  }
  return out;
}

std::vector<std::string> clientUrlsFromPeerMembers(const std::string& json) {
  google::protobuf::ListValue list;
  if (!google::protobuf::util::JsonStringToMessage(json, &list).ok()) return {};
  std::vector<std::string> out;
  for (const auto& member : list.values()) {
    if (!member.has_struct_value()) continue;
    const auto& fields = member.struct_value().fields();
    auto urls = fields.find("clientURLs");
    if (urls == fields.end() || !urls->second.has_list_value()) continue;
    for (const auto& u : urls->second.list_value().values()) {
      if (u.has_string_value() && out.size() < kMaxEndpoints) out.push_back(u.string_value());
    }
  }
  return out;
}

}  // namespace etcdagent::agent
