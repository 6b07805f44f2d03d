#include "agent/bootstrap/state_store.hpp"

#include <sys/stat.h>

#include <cerrno>

#include "common/file_util.hpp"
#include "common/proto_json.hpp"

namespace etcdagent::agent {

std::string stateToJson(const v1::MemberState& state) {
  return renderStateJson(state, /*every_field=*/false);
}

Result<v1::MemberState> stateFromJson(const std::string& text, const std::string& source) {
  v1::MemberState state;
  if (auto parsed = parseStateJson(text, state); !parsed) {
    return fail(Errc::kInvalidArgument,
                source + ": not a valid state file (" + parsed.error().message +
                    "); move it aside to make the agent wait for a new plan, but only if the "
                    "member's data is not needed");
  }
  if (state.version() > 1) {
    return fail(Errc::kFailedPrecondition,
                source + ": written by a newer etcd-agent (state version " +
                    std::to_string(state.version()) + "); upgrade this agent");
  }
  return state;
}

Result<std::optional<v1::MemberState>> loadState(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::optional<v1::MemberState>{};
    return fail(Errc::kIo, "cannot stat " + path + ": " + errnoText(errno));
  }
  auto text = readFile(path);
  if (!text) return fail(text.error());
  auto state = stateFromJson(*text, path);
  if (!state) return fail(state.error());
  return std::optional<v1::MemberState>(std::move(*state));
}

Result<void> saveState(const std::string& path, const v1::MemberState& state) {
  return writeFileAtomic(path, stateToJson(state), 0600);
}

}  // namespace etcdagent::agent
