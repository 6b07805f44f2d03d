// The cluster family: member ... (member.cpp), endpoint ... (endpoint.cpp) and move-leader, plus
// the argument checks they share, worded as etcdctl's Go libraries word them.

#include "fleetctl/commands/cluster.hpp"

#include <algorithm>
#include <cctype>
#include <optional>

#include "common/encoding.hpp"
#include "common/strings.hpp"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"
#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/util.hpp"
#include "fleetctl/output/cluster.hpp"

namespace etcdagent::fleet {
namespace {

using etcdserverpb::Cluster;
using etcdserverpb::Maintenance;

bool isAlpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool isDigit(char c) {
  return c >= '0' && c <= '9';
}
bool isHex(char c) {
  return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
int unhex(char c) {
  if (isDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

// --- A subset of Go's net/url.Parse: what types.NewURLs needs (scheme, host, path) and its
// errors for the inputs people actually mistype. Its unescaping is urlUnescape (common/encoding):
// only its validation matters here, the decoded text is not used except for the host, which
// SplitHostPort checks.

bool validOptionalPort(std::string_view port) {
  if (port.empty()) return true;
  if (port[0] != ':') return false;
  for (char c : port.substr(1)) {
    if (!isDigit(c)) return false;
  }
  return true;
}

Result<std::string> parseHost(std::string_view host) {
  if (host.starts_with('[')) {
    auto close = host.rfind(']');
    if (close == std::string_view::npos) return fail(Errc::kInvalidArgument, "missing ']' in host");
    auto colonPort = host.substr(close + 1);
    if (!validOptionalPort(colonPort)) {
      return fail(Errc::kInvalidArgument, "invalid port " + goQuote(colonPort) + " after host");
    }
  } else if (auto colon = host.rfind(':'); colon != std::string_view::npos) {
    auto colonPort = host.substr(colon);
    if (!validOptionalPort(colonPort)) {
      return fail(Errc::kInvalidArgument, "invalid port " + goQuote(colonPort) + " after host");
    }
  }
  return urlUnescape(host, UrlPart::kHost);
}

bool validUserinfo(std::string_view s) {
  static constexpr std::string_view kAllowed = "-._:~!$&'()*+,;=%@";
  for (char c : s) {
    if (!isAlpha(c) && !isDigit(c) && kAllowed.find(c) == std::string_view::npos) return false;
  }
  return true;
}

struct GoUrl {
  std::string scheme;
  std::string host;
  std::string path;
};

Result<GoUrl> goUrlParse(std::string_view raw) {
  std::string_view u = raw;
  std::optional<std::string_view> fragment;
  if (auto hash = raw.find('#'); hash != std::string_view::npos) {
    u = raw.substr(0, hash);
    fragment = raw.substr(hash + 1);
  }
  auto error = [&](std::string_view url, const std::string& why) {
    return fail(Errc::kInvalidArgument, "parse " + goQuote(url) + ": " + why);
  };
  for (char c : u) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return error(u, "net/url: invalid control character in URL");
  }
  GoUrl url;
  if (u == "*") {
    url.path = "*";
    return url;
  }
  // getScheme
  std::string_view rest = u;
  for (std::size_t i = 0; i < u.size(); ++i) {
    const char c = u[i];
    if (isAlpha(c)) continue;
    if (isDigit(c) || c == '+' || c == '-' || c == '.') {
      if (i == 0) break;
      continue;
    }
    if (c == ':') {
      if (i == 0) return error(u, "missing protocol scheme");
      for (char s : u.substr(0, i))
        url.scheme += static_cast<char>(std::tolower(static_cast<unsigned char>(s)));
      rest = u.substr(i + 1);
    }
    break;
  }
  if (rest.ends_with('?') && std::count(rest.begin(), rest.end(), '?') == 1) {
    rest.remove_suffix(1);
  } else if (auto q = rest.find('?'); q != std::string_view::npos) {
    rest = rest.substr(0, q);
  }
  if (!rest.starts_with('/')) {
    if (!url.scheme.empty()) return url;  // opaque: "localhost:2380" has scheme "localhost"
    auto segment = rest.substr(0, rest.find('/'));
    if (segment.find(':') != std::string_view::npos)
      return error(u, "first path segment in URL cannot contain colon");
  }
  if ((!url.scheme.empty() || !rest.starts_with("///")) && rest.starts_with("//")) {
    std::string_view authority = rest.substr(2);
    rest = {};
    if (auto slash = authority.find('/'); slash != std::string_view::npos) {
      rest = authority.substr(slash);
      authority = authority.substr(0, slash);
    }
    auto at = authority.rfind('@');
    auto host = parseHost(at == std::string_view::npos ? authority : authority.substr(at + 1));
    if (!host) return error(u, host.error().message);
    if (at != std::string_view::npos) {
      auto userinfo = authority.substr(0, at);
      if (!validUserinfo(userinfo)) return error(u, "net/url: invalid userinfo");
      if (auto r = urlUnescape(userinfo, UrlPart::kPath); !r) return error(u, r.error().message);
    }
    url.host = *host;
  }
  auto path = urlUnescape(rest, UrlPart::kPath);
  if (!path) return error(u, path.error().message);
  url.path = *path;
  if (fragment) {
    if (auto r = urlUnescape(*fragment, UrlPart::kPath); !r) return error(raw, r.error().message);
  }
  return url;
}

// net.SplitHostPort's acceptance (its error text is not shown: NewURLs replaces it).
bool splitsHostPort(std::string_view hp) {
  auto colon = hp.rfind(':');
  if (colon == std::string_view::npos) return false;
  std::size_t j = 0;
  std::size_t k = 0;
  if (hp.starts_with('[')) {
    auto end = hp.find(']');
    if (end == std::string_view::npos) return false;
    if (end + 1 == hp.size()) return false;
    if (end + 1 != colon) return false;
    j = 1;
    k = end + 1;
  } else if (hp.substr(0, colon).find(':') != std::string_view::npos) {
    return false;
  }
  if (hp.substr(j).find('[') != std::string_view::npos) return false;
  if (hp.substr(k).find(']') != std::string_view::npos) return false;
  return true;
}

// --- move-leader

CommandResult runMoveLeader(Context& ctx) {
  const auto& args = ctx.args();
  if (args.size() != 1) return badArgs("move-leader command needs 1 argument");
  auto target = parseHexUint(args[0]);
  if (!target) return badArgs(target.error().message);
  if (auto r = requireFormat(ctx, printMoveLeader); !r) return r;

  FLEET_TRY_CLIENT(client, ctx);
  // As etcdctl: ask each endpoint for its status and send MoveLeader to the one that leads; only
  // the leader can hand leadership over.
  const auto& endpoints = client.config().endpoints;
  std::unique_ptr<etcd::Client> leader;
  std::uint64_t leaderId = 0;
  for (const auto& ep : endpoints) {
    auto one = client.forEndpoint(ep);
    if (!one) return commandError(one.error());
    auto status = (*one)->call<&Maintenance::Stub::Status>(etcdserverpb::StatusRequest{},
                                                           {etcd::Retry::kRepeatable});
    if (!status) return commandError(status.error());
    if (status->has_header() && status->header().member_id() == status->leader()) {
      leader = std::move(*one);
      leaderId = status->leader();
      break;
    }
  }
  if (!leader) {
    // Go's %v of the endpoint slice: "[a b]".
    std::string list;
    for (const auto& ep : endpoints) list += (list.empty() ? "" : " ") + ep;
    return badArgs("no leader endpoint given at [" + list + "]");
  }
  etcdserverpb::MoveLeaderRequest req;
  req.set_targetid(*target);
  auto resp = leader->call<&Maintenance::Stub::MoveLeader>(req);
  if (!resp) return commandError(resp.error());
  printMoveLeader(ctx.output(), leaderId, *target, *resp);
  return {};
}

}  // namespace

Result<std::uint64_t> parseHexUint(std::string_view text) {
  auto error = [&](const char* why) {
    return fail(Errc::kInvalidArgument, "strconv.ParseUint: parsing " + goQuote(text) + ": " + why);
  };
  if (text.empty()) return error("invalid syntax");
  std::uint64_t n = 0;
  for (char c : text) {
    if (!isHex(c)) return error("invalid syntax");
    // Go reports overflow as soon as it happens, before looking at later characters.
    if (n > (~std::uint64_t{0} >> 4)) return error("value out of range");
    n = n << 4 | static_cast<std::uint64_t>(unhex(c));
  }
  return n;
}

Result<void> validatePeerUrls(const std::vector<std::string>& urls) {
  if (urls.empty()) return fail(Errc::kInvalidArgument, "no valid URLs given");
  for (const auto& text : urls) {
    const std::string in(trimSpace(text));
    auto u = goUrlParse(in);
    if (!u) return fail(u.error());
    if (u->scheme != "http" && u->scheme != "https" && u->scheme != "unix" &&
        u->scheme != "unixs") {
      return fail(Errc::kInvalidArgument, "URL scheme must be http, https, unix, or unixs: " + in);
    }
    if (!splitsHostPort(u->host)) {
      return fail(Errc::kInvalidArgument,
                  "URL address does not have the form \"host:port\": " + in);
    }
    if (!u->path.empty()) return fail(Errc::kInvalidArgument, "URL must not contain a path: " + in);
  }
  return {};
}

std::expected<std::vector<std::string>, CommandError> endpointsFor(Context& ctx) {
  if (!ctx.flags().getBool("cluster")) return ctx.global().client.endpoints;
  auto client = ctx.client();
  if (!client) return std::unexpected(client.error());
  auto members = (*client)->call<&Cluster::Stub::MemberList>(etcdserverpb::MemberListRequest{},
                                                             {etcd::Retry::kRepeatable});
  if (!members) {
    return std::unexpected(CommandError{
        exitcode::kError,
        "failed to fetch endpoints from etcd cluster member list: " + members.error().message});
  }
  std::vector<std::string> out;
  // Members that have not started have no client URLs and so are not checked (as in etcdctl).
  for (const auto& m : members->members()) {
    for (const auto& u : m.clienturls()) out.push_back(u);
  }
  return out;
}

std::vector<Command> clusterCommands() {
  std::vector<Command> out;
  out.push_back({
      .name = "member",
      .usage = "member <subcommand>",
      .summary = "Membership related commands",
      .children = memberCommands(),
  });
  out.push_back({
      .name = "endpoint",
      .usage = "endpoint <subcommand>",
      .summary = "Endpoint related commands",
      .flags =
          [](FlagSet& f) {
            f.boolean("cluster", 0, false, "use all endpoints from the cluster member list");
          },
      .children = endpointCommands(),
  });
  out.push_back({
      .name = "move-leader",
      .usage = "move-leader <transferee-member-id>",
      .summary = "Transfers leadership to another etcd cluster member.",
      .run = runMoveLeader,
  });
  return out;
}

}  // namespace etcdagent::fleet
