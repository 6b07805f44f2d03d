#include "agent/bootstrap/discovery_store.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <filesystem>

#include "common/file_util.hpp"
#include "common/proto_json.hpp"

namespace etcdagent::agent {

std::string discoveryTokenToJson(const v1::DiscoveryTokenState& state) {
  return renderStateJson(state, /*every_field=*/false);
}

Result<v1::DiscoveryTokenState> discoveryTokenFromJson(const std::string& text,
                                                       const std::string& source) {
  v1::DiscoveryTokenState state;
  if (auto parsed = parseStateJson(text, state); !parsed) {
    return fail(Errc::kInvalidArgument, source + ": not a valid discovery token file (" +
                                            parsed.error().message +
                                            "); the token stays unusable until it is repaired");
  }
  if (state.version() > 1) {
    return fail(Errc::kFailedPrecondition, source + ": written by a newer etcd-agent (version " +
                                               std::to_string(state.version()) +
                                               "); upgrade this agent");
  }
  return state;
}

Result<LoadedDiscoveryTokens> loadDiscoveryTokens(const std::string& dir) {
  LoadedDiscoveryTokens out;
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return out;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return fail(Errc::kIo, "cannot list " + dir + ": " + ec.message());
  for (const auto& entry : it) {
    const auto& p = entry.path();
    if (p.extension() != ".json") continue;  // NAME.json.part of an interrupted write
    const std::string token = p.stem().string();
    auto text = readFile(p.string());
    if (!text) {
      out.unreadable_tokens.push_back(token);
      out.errors.push_back(text.error());
      continue;
    }
    auto state = discoveryTokenFromJson(*text, p.string());
    if (!state) {
      out.unreadable_tokens.push_back(token);
      out.errors.push_back(state.error());
      continue;
    }
    if (state->token() != token) {
      out.unreadable_tokens.push_back(token);
      out.errors.push_back(
          Error{Errc::kInvalidArgument,
                p.string() + ": holds token " + state->token() + ", not the one its name says"});
      continue;
    }
    out.tokens.push_back(std::move(*state));
  }
  return out;
}

Result<void> saveDiscoveryToken(const std::string& dir, const v1::DiscoveryTokenState& state) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || ::chmod(dir.c_str(), 0700) != 0) {
    return fail(Errc::kIo, "cannot create " + dir + ": " + (ec ? ec.message() : errnoText(errno)) +
                               " (check member.data_root and its permissions)");
  }
  return writeFileAtomic(dir + "/" + state.token() + ".json", discoveryTokenToJson(state), 0600);
}

}  // namespace etcdagent::agent
