#include "agent/bootstrap/discovery_registry.hpp"

#include <sys/random.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <ctime>

#include "common/duration.hpp"
#include "common/encoding.hpp"

namespace etcdagent::agent {
namespace {

std::string leafJson(const std::string& key, const std::string& value, std::uint64_t index) {
  const std::string i = std::to_string(index);
  return "{\"key\":" + jsonQuote(key) + ",\"value\":" + jsonQuote(value) +
         ",\"modifiedIndex\":" + i + ",\"createdIndex\":" + i + "}";
}

std::string dirJson(const std::string& key, const std::vector<std::string>& nodes,
                    std::uint64_t index) {
  std::string out = "{\"key\":" + jsonQuote(key) + ",\"dir\":true";
  if (!nodes.empty()) {
    out += ",\"nodes\":[";
    for (std::size_t i = 0; i < nodes.size(); ++i) out += (i ? "," : "") + nodes[i];
    out += "]";
  }
  const std::string i = std::to_string(index);
  return out + ",\"modifiedIndex\":" + i + ",\"createdIndex\":" + i + "}";
}

std::string actionJson(const std::string& action, const std::string& node) {
  return "{\"action\":" + jsonQuote(action) + ",\"node\":" + node + "}";
}

// The value of `name` in a form body ("value=m1%3Dhttp%3A%2F%2F...&x=y").
std::optional<std::string> formValue(std::string_view body, std::string_view name) {
  while (!body.empty()) {
    auto amp = body.find('&');
    auto pair = body.substr(0, amp);
    auto eq = pair.find('=');
    // Form decoding ('+' is a space); a malformed escape is taken as sent.
    if (urlUnescapeLenient(pair.substr(0, eq), UrlPart::kQuery) == name) {
      return eq == std::string_view::npos
                 ? ""
                 : urlUnescapeLenient(pair.substr(eq + 1), UrlPart::kQuery);
    }
    if (amp == std::string_view::npos) break;
    body.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

std::optional<std::uint64_t> parseIndex(const std::string& s) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

bool isHexToken(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

// A registrant's key: etcd sends its member ID in hex; anything path-like or hidden is refused.
bool validMemberKey(const std::string& s) {
  return !s.empty() && s.size() <= 64 && s[0] != '_' && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

std::vector<std::string> splitPath(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t i = 0;
  while (i < path.size()) {
    auto j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) parts.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return parts;
}

constexpr std::uint64_t kSizeIndex = 1;
constexpr std::size_t kMaxValueBytes = 4096;  // _config/size is written when the token is created

}  // namespace

std::string randomDiscoveryToken() {
  unsigned char bytes[16];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return "";  // the caller refuses an empty token
    got += static_cast<std::size_t>(n);
  }
  std::string out;
  char buf[3];
  for (unsigned char b : bytes) {
    std::snprintf(buf, sizeof buf, "%02x", b);
    out += buf;
  }
  return out;
}

DiscoveryResponse discoveryError(int status, int code, const std::string& message,
                                 const std::string& cause, std::uint64_t index) {
  return {status,
          "{\"errorCode\":" + std::to_string(code) + ",\"message\":" + jsonQuote(message) +
              ",\"cause\":" + jsonQuote(cause) + ",\"index\":" + std::to_string(index) + "}",
          index};
}

DiscoveryRegistry::DiscoveryRegistry(Persist persist, RandomToken random, DiscoveryLimits limits,
                                     WallClock now)
    : persist_(std::move(persist)),
      random_(std::move(random)),
      limits_(limits),
      now_(std::move(now)) {}

std::chrono::system_clock::time_point DiscoveryRegistry::expiresAt(
    const v1::DiscoveryTokenState& t) const {
  auto born = born_.find(t.token());
  const auto start = born == born_.end() ? std::chrono::system_clock::time_point{} : born->second;
  const bool complete = static_cast<unsigned>(t.nodes_size()) >= t.size();
  return start + (complete ? limits_.complete_ttl : limits_.incomplete_ttl);
}

void DiscoveryRegistry::expireTokens() {
  const auto now = now_();
  std::vector<std::string> gone;
  for (const auto& [token, state] : tokens_) {
    if (now >= expiresAt(state)) gone.push_back(token);
  }
  for (const auto& token : gone) {
    // Parked waits on it end now (etcd's client asks again and hears 404).
    std::vector<WaitId> waits;
    for (const auto& [id, w] : waits_) {
      if (w.token == token) waits.push_back(id);
    }
    for (auto id : waits) expire(id);
    tokens_.erase(token);
    born_.erase(token);
    reserved_.insert(token);
  }
}

std::string DiscoveryRegistry::exhausted() const {
  auto soonest = std::chrono::system_clock::time_point::max();
  for (const auto& [token, state] : tokens_) soonest = std::min(soonest, expiresAt(state));
  const auto secs = [](std::chrono::seconds d) { return formatDuration(d); };
  return "this agent holds " + std::to_string(tokens_.size()) + " live discovery tokens (at most " +
         std::to_string(limits_.max_live_tokens) + "); a token is dropped " +
         secs(limits_.incomplete_ttl) + " after its creation unless its cluster completed, then " +
         secs(limits_.complete_ttl) + " after it. The next one expires at " +
         formatRfc3339(soonest) + "; try again then, or use a token you created already";
}

Result<void> DiscoveryRegistry::restore(v1::DiscoveryTokenState state) {
  const std::string what = "discovery token " + state.token();
  if (!isHexToken(state.token())) {
    return fail(Errc::kInvalidArgument, what + ": the token is not lowercase hex");
  }
  if (state.size() < 1 || state.size() > kMaxDiscoverySize) {
    return fail(Errc::kInvalidArgument,
                what + ": size " + std::to_string(state.size()) + " is out of range");
  }
  if (tokens_.contains(state.token())) {
    return fail(Errc::kAlreadyExists, what + " is loaded twice");
  }
  std::uint64_t last = kSizeIndex;
  for (const auto& n : state.nodes()) {
    if (!validMemberKey(n.key()) || n.created_index() <= last) {
      return fail(Errc::kInvalidArgument,
                  what + ": registration \"" + n.key() + "\" is malformed or out of order");
    }
    last = n.created_index();
  }
  if (state.index() < last) state.set_index(last);
  auto born = parseRfc3339(state.created_at());
  if (!born) {
    reserved_.insert(state.token());  // an age we cannot tell: never served again
    return {};
  }
  const std::string token = state.token();
  reserved_.erase(token);
  born_[token] = *born;
  tokens_.emplace(token, std::move(state));
  if (now_() >= expiresAt(tokens_.at(token))) {
    tokens_.erase(token);
    born_.erase(token);
    reserved_.insert(token);
  }
  return {};
}

Result<v1::DiscoveryTokenState> DiscoveryRegistry::createToken(unsigned size,
                                                               const std::string& created_at) {
  if (size < 1 || size > kMaxDiscoverySize) {
    return fail(Errc::kInvalidArgument, "a discovery cluster size must be between 1 and " +
                                            std::to_string(kMaxDiscoverySize) + ", not " +
                                            std::to_string(size));
  }
  expireTokens();
  if (tokens_.size() >= limits_.max_live_tokens) {
    return fail(Errc::kResourceExhausted, exhausted());
  }
  // 128 random bits do not collide in practice; the check makes "never reused" a guarantee.
  std::string token;
  for (int attempt = 0; attempt < 8 && token.empty(); ++attempt) {
    token = random_();
    if (!isHexToken(token) || tokens_.contains(token) || reserved_.contains(token)) token.clear();
  }
  if (token.empty()) {
    return fail(Errc::kInternal,
                "could not draw a fresh random discovery token (getrandom failed?); try again");
  }
  v1::DiscoveryTokenState state;
  state.set_version(1);
  state.set_token(token);
  state.set_size(size);
  const auto now = now_();
  state.set_created_at(created_at.empty() ? formatRfc3339(now) : created_at);
  state.set_index(kSizeIndex);
  if (persist_) {
    if (auto r = persist_(state); !r) return fail(r.error());
  }
  tokens_.emplace(token, state);
  born_[token] = now;
  return state;
}

const v1::DiscoveryTokenState* DiscoveryRegistry::find(const std::string& token) const {
  auto it = tokens_.find(token);
  return it == tokens_.end() ? nullptr : &it->second;
}

std::vector<DiscoveryRegistry::Event> DiscoveryRegistry::history(
    const v1::DiscoveryTokenState& t) const {
  std::vector<Event> events;
  const std::string dir = "/" + t.token();
  events.push_back({"create", dir + "/_config/size", std::to_string(t.size()), kSizeIndex});
  for (const auto& n : t.nodes()) {
    events.push_back({"create", dir + "/" + n.key(), n.value(), n.created_index()});
  }
  return events;
}

std::optional<DiscoveryRegistry::WaitId> DiscoveryRegistry::handle(const DiscoveryRequest& request,
                                                                   Reply reply) {
  expireTokens();
  const auto parts = splitPath(request.path);
  if (parts.empty()) {
    reply(discoveryError(403, 102, "Not a file", "/", 0));  // the root is not a token
    return std::nullopt;
  }
  auto it = tokens_.find(parts[0]);
  if (it == tokens_.end()) {
    // Unknown tokens are not created on the fly (as etcd would): only NewDiscoveryToken does.
    reply(discoveryError(404, 100, "Key not found", "/" + parts[0], 0));
    return std::nullopt;
  }
  auto& t = it->second;
  std::string key = "/" + t.token();
  for (std::size_t i = 1; i < parts.size(); ++i) key += "/" + parts[i];

  if (request.method == "GET" || request.method == "HEAD") {
    auto q = request.query.find("wait");
    if (q != request.query.end() && q->second == "true") return wait(t, key, request, reply);
    auto r = request.query.find("recursive");
    reply(get(t, key, r != request.query.end() && r->second == "true"));
    return std::nullopt;
  }
  if (request.method == "PUT") {
    reply(put(t, key, request));
    return std::nullopt;
  }
  reply(discoveryError(405, 107, "Method Not Allowed",
                       request.method + " " + key + ": a discovery token takes GET and PUT only",
                       t.index()));
  return std::nullopt;
}

DiscoveryResponse DiscoveryRegistry::get(const v1::DiscoveryTokenState& t, const std::string& key,
                                         bool recursive) const {
  const std::string dir = "/" + t.token();
  const std::string size_node =
      leafJson(dir + "/_config/size", std::to_string(t.size()), kSizeIndex);
  auto config_dir = [&](bool with_children) {
    return dirJson(dir + "/_config",
                   with_children ? std::vector{size_node} : std::vector<std::string>{}, kSizeIndex);
  };
  std::string node;
  if (key == dir) {
    std::vector<std::string> children{config_dir(recursive)};
    for (const auto& n : t.nodes()) {
      children.push_back(leafJson(dir + "/" + n.key(), n.value(), n.created_index()));
    }
    node = dirJson(dir, children, kSizeIndex);
  } else if (key == dir + "/_config") {
    node = config_dir(true);
  } else if (key == dir + "/_config/size") {
    node = size_node;
  } else {
    for (const auto& n : t.nodes()) {
      if (key == dir + "/" + n.key()) node = leafJson(key, n.value(), n.created_index());
    }
  }
  if (node.empty()) return discoveryError(404, 100, "Key not found", key, t.index());
  return {200, actionJson("get", node), t.index()};
}

DiscoveryResponse DiscoveryRegistry::put(v1::DiscoveryTokenState& t, const std::string& key,
                                         const DiscoveryRequest& request) {
  const std::string dir = "/" + t.token();
  if (key == dir) return discoveryError(403, 102, "Not a file", key, t.index());
  const std::string id = key.substr(dir.size() + 1);
  if (id.starts_with("_config")) {
    return discoveryError(403, 107, "Root is read only",
                          key + ": the token's configuration is set when it is created", t.index());
  }
  if (!validMemberKey(id)) {
    return discoveryError(403, 104, "Not a directory",
                          key + ": register with a single key below the token (the member ID)",
                          t.index());
  }
  for (const auto& n : t.nodes()) {
    // Registrations are write-once: etcd's client asks with prevExist=false and reads 105 as
    // "this member ID has registered already".
    if (n.key() == id) return discoveryError(412, 105, "Key already exists", key, t.index());
  }
  auto prev = request.query.find("prevExist");
  if (prev != request.query.end() && prev->second == "true") {
    return discoveryError(404, 100, "Key not found", key, t.index());
  }
  if (static_cast<unsigned>(t.nodes_size()) >= t.size()) {
    return discoveryError(412, 101, "Compare failed",
                          key + ": the cluster is full (" + std::to_string(t.size()) + " of " +
                              std::to_string(t.size()) +
                              " members registered); create a new token for another cluster",
                          t.index());
  }
  auto value = formValue(request.body, "value");
  if (!value) {
    auto q = request.query.find("value");
    if (q != request.query.end()) value = q->second;
  }
  if (!value) {
    return discoveryError(400, 200, "Value is Required in POST form", key, t.index());
  }
  // "name=peerURL[,name=peerURL]" is short; the cap keeps 99 registrants' files small.
  if (value->size() > kMaxValueBytes) {
    return discoveryError(
        400, 209, "Invalid field",
        key + ": a registration is at most " + std::to_string(kMaxValueBytes) + " bytes",
        t.index());
  }

  v1::DiscoveryTokenState next = t;
  next.set_index(t.index() + 1);
  auto* n = next.add_nodes();
  n->set_key(id);
  n->set_value(*value);
  n->set_created_index(next.index());
  if (persist_) {
    if (auto r = persist_(next); !r) {
      return discoveryError(
          500, 300, "Raft Internal Error",
          "the coordinator could not record the registration: " + r.error().message, t.index());
    }
  }
  t = std::move(next);
  const std::uint64_t index = t.index();
  DiscoveryResponse created{201, actionJson("create", leafJson(key, *value, index)), index};

  // Answer the parked waits this registration satisfies (their replies may park new waits, so
  // collect first).
  std::vector<Reply> ready;
  for (auto w = waits_.begin(); w != waits_.end();) {
    const bool matches =
        w->second.token == t.token() && index >= w->second.min_index &&
        (key == w->second.key || (w->second.recursive && key.starts_with(w->second.key + "/")));
    if (matches) {
      ready.push_back(std::move(w->second.reply));
      w = waits_.erase(w);
    } else {
      ++w;
    }
  }
  for (auto& r : ready) r({200, actionJson("create", leafJson(key, *value, index)), index});
  return created;
}

std::optional<DiscoveryRegistry::WaitId> DiscoveryRegistry::wait(const v1::DiscoveryTokenState& t,
                                                                 const std::string& key,
                                                                 const DiscoveryRequest& request,
                                                                 Reply& reply) {
  auto r = request.query.find("recursive");
  const bool recursive = r != request.query.end() && r->second == "true";
  std::uint64_t min_index = t.index() + 1;  // no waitIndex: the next event
  if (auto w = request.query.find("waitIndex"); w != request.query.end()) {
    auto parsed = parseIndex(w->second);
    if (!parsed) {
      reply(discoveryError(400, 203, "The given index in POST form is not a number",
                           "waitIndex=" + w->second, t.index()));
      return std::nullopt;
    }
    min_index = std::max<std::uint64_t>(*parsed, 1);
  }
  // The whole history of a token is kept, so every waitIndex can be replayed.
  for (const auto& e : history(t)) {
    if (e.index >= min_index && (e.key == key || (recursive && e.key.starts_with(key + "/")))) {
      reply({200, actionJson(e.action, leafJson(e.key, e.value, e.index)), t.index()});
      return std::nullopt;
    }
  }
  const WaitId id = next_wait_++;
  waits_.emplace(id, Wait{t.token(), key, recursive, min_index, std::move(reply)});
  return id;
}

void DiscoveryRegistry::expire(WaitId id) {
  auto it = waits_.find(id);
  if (it == waits_.end()) return;
  auto reply = std::move(it->second.reply);
  const auto* t = find(it->second.token);
  waits_.erase(it);
  reply({200, "", t ? t->index() : 0});
}

}  // namespace etcdagent::agent
