#include "fleetctl/commands/kv_request.hpp"

#include <cctype>

#include "common/encoding.hpp"
#include "fleetctl/commands/util.hpp"

namespace etcdagent::fleet {
namespace {

std::unexpected<CommandError> badFeature(std::string message) {
  return std::unexpected(CommandError{exitcode::kBadFeature, std::move(message)});
}

std::string upper(std::string_view s) {
  std::string out;
  for (char c : s) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

// etcdctl's getGetOp.
InputResult<etcdserverpb::RangeRequest> rangeRequestFromArgs(const FlagSet& f,
                                                             const std::vector<std::string>& args) {
  const bool prefix = f.getBool("prefix");
  const bool fromKey = f.getBool("from-key");
  if (args.empty()) {
    return badArgs("get command needs one argument as key and an optional argument as range_end");
  }
  if (prefix && fromKey) {
    return badArgs("`--prefix` and `--from-key` cannot be set at the same time, choose one");
  }
  if (f.getBool("keys-only") && f.getBool("count-only")) {
    return badArgs("`--keys-only` and `--count-only` cannot be set at the same time, choose one");
  }
  etcdserverpb::RangeRequest request;
  auto* req = &request;
  const std::string consistency = f.getString("consistency");
  if (consistency == "s") {
    req->set_serializable(true);
  } else if (consistency != "l") {
    return badFeature("unknown consistency flag " + goQuote(consistency));
  }
  std::string key = args[0];
  if (args.size() > 1) {
    if (prefix || fromKey) {
      return badArgs(
          "too many arguments, only accept one argument when `--prefix` or `--from-key` is set.");
    }
    req->set_range_end(args[1]);
  }
  req->set_limit(f.getInt("limit"));
  if (f.getInt("rev") > 0) req->set_revision(f.getInt("rev"));

  using R = etcdserverpb::RangeRequest;
  R::SortOrder order = R::NONE;
  const std::string orderText = upper(f.getString("order"));
  if (orderText == "ASCEND") {
    order = R::ASCEND;
  } else if (orderText == "DESCEND") {
    order = R::DESCEND;
  } else if (!orderText.empty()) {
    return badFeature("bad sort order " + f.getString("order"));
  }
  R::SortTarget target = R::KEY;
  const std::string targetText = upper(f.getString("sort-by"));
  if (targetText == "CREATE") {
    target = R::CREATE;
  } else if (targetText == "MODIFY") {
    target = R::MOD;
  } else if (targetText == "VALUE") {
    target = R::VALUE;
  } else if (targetText == "VERSION") {
    target = R::VERSION;
  } else if (!targetText.empty() && targetText != "KEY") {
    return badFeature("bad sort target " + f.getString("sort-by"));
  }
  // clientv3.WithSort: ascending by key is the server's own order and is sent as NONE.
  if (target == R::KEY && order == R::ASCEND) order = R::NONE;
  req->set_sort_order(order);
  req->set_sort_target(target);

  if (prefix) {
    if (key.empty()) {
      key = std::string(1, '\0');
      req->set_range_end(std::string(1, '\0'));
    } else {
      req->set_range_end(prefixRangeEnd(key));
    }
  }
  if (fromKey) {
    if (key.empty()) key = std::string(1, '\0');
    req->set_range_end(std::string(1, '\0'));
  }
  req->set_key(key);
  req->set_keys_only(f.getBool("keys-only"));
  req->set_count_only(f.getBool("count-only"));
  return request;
}

// etcdctl's getDelOp.
InputResult<etcdserverpb::DeleteRangeRequest> deleteRequestFromArgs(
    const FlagSet& f, const std::vector<std::string>& args) {
  const bool prefix = f.getBool("prefix");
  const bool fromKey = f.getBool("from-key");
  if (args.empty() || args.size() > 2) {
    return badArgs("del command needs one argument as key and an optional argument as range_end");
  }
  if (prefix && fromKey) {
    return badArgs("`--prefix` and `--from-key` cannot be set at the same time, choose one");
  }
  etcdserverpb::DeleteRangeRequest request;
  auto* req = &request;
  std::string key = args[0];
  if (args.size() > 1) {
    if (prefix || fromKey) {
      return badArgs(
          "too many arguments, only accept one argument when `--prefix` or `--from-key` is set.");
    }
    req->set_range_end(args[1]);
  }
  if (prefix) {
    if (key.empty()) {
      key = std::string(1, '\0');
      req->set_range_end(std::string(1, '\0'));
    } else {
      req->set_range_end(prefixRangeEnd(key));
    }
  }
  req->set_prev_kv(f.getBool("prev-kv"));
  if (fromKey) {
    if (key.empty()) key = std::string(1, '\0');
    req->set_range_end(std::string(1, '\0'));
  }
  req->set_key(key);
  return request;
}

}  // namespace etcdagent::fleet
