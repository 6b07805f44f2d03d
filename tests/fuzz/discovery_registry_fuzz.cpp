// The coordinator's discovery protocol (agent/bootstrap/discovery_registry), driven as etcd's
// discovery clients drive it: the input is a script, one request per line,
//   METHOD TARGET [BODY]        e.g. "PUT /@T/5?prevExist=false value=m1%3Dhttp://127.0.0.1:2380"
// ("@T" is the token created at the start, of the size the first byte picks). A line "!" expires
// the oldest parked long-poll; a line "!persist" makes the next write of a token fail, as a full
// disk would. Every request is answered exactly once: at once, when a registration matches, or
// empty at its expiry.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <memory>
#include <string>
#include <string_view>

#include "agent/bootstrap/discovery_registry.hpp"
#include "agent/http/http_server.hpp"

namespace {

constexpr std::size_t kMaxLines = 64;
constexpr std::string_view kToken = "0123456789abcdef0123456789abcdef";

std::string replaceAll(std::string s, std::string_view from, std::string_view to) {
  for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

std::string_view nextWord(std::string_view& line) {
  const auto sp = line.find(' ');
  const auto word = line.substr(0, sp);
  line.remove_prefix(sp == std::string_view::npos ? line.size() : sp + 1);
  return word;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace etcdagent;
  using namespace etcdagent::agent;
  if (size == 0) return 0;
  bool fail_next_persist = false;
  DiscoveryRegistry registry(
      [&fail_next_persist](const v1::DiscoveryTokenState&) -> Result<void> {
        if (!fail_next_persist) return {};
        fail_next_persist = false;
        return fail(Errc::kIo, "fuzz: no space left on device");
      },
      [] { return std::string(kToken); });
  if (!registry.createToken(1 + data[0] % 5, "2026-01-01T00:00:00Z")) std::abort();

  const std::string script =
      replaceAll(std::string(reinterpret_cast<const char*>(data) + 1, size - 1), "@T", kToken);
  auto answers = std::make_shared<std::deque<int>>();  // replies per request
  std::deque<DiscoveryRegistry::WaitId> parked;
  std::string_view rest(script);
  for (std::size_t n = 0; n < kMaxLines && !rest.empty(); ++n) {
    const auto nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    if (line == "!persist") {
      fail_next_persist = true;
      continue;
    }
    if (line == "!") {
      if (!parked.empty()) registry.expire(parked.front());
      if (!parked.empty()) parked.pop_front();
      continue;
    }
    DiscoveryRequest req;
    req.method = std::string(nextWord(line));
    const std::string target(nextWord(line));
    parseTarget(target, req.path, req.query);
    req.body = std::string(line);
    const std::size_t id = answers->size();
    answers->push_back(0);
    auto wait = registry.handle(req, [answers, id](DiscoveryResponse r) {
      if (r.status < 100 || r.status > 599) std::abort();
      ++(*answers)[id];
    });
    if (wait) parked.push_back(*wait);
  }
  for (auto id : parked) registry.expire(id);
  for (int count : *answers) {
    if (count != 1) std::abort();  // a request never answered, or answered twice
  }
  if (registry.parkedWaits() != 0) std::abort();
  return 0;
}
