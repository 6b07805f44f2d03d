#include "agent/bootstrap/state_store.hpp"

#include <google/protobuf/util/json_util.h>
#include <sys/stat.h>

#include <cerrno>

#include "common/file_util.hpp"

namespace etcdagent::agent {

std::string stateToJson(const v1::MemberState& state) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(state, &out, options);
  return out;
}

Result<v1::MemberState> stateFromJson(const std::string& text, const std::string& source) {
  v1::MemberState state;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;  // written by a newer agent: keep what we know
  auto status = google::protobuf::util::JsonStringToMessage(text, &state, options);
  if (!status.ok()) {
    return fail(Errc::kInvalidArgument,
                source + ": not a valid state file (" + std::string(status.message()) +
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
