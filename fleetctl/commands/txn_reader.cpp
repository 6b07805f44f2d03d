#include "fleetctl/commands/txn_reader.hpp"

#include <string>
#include <vector>

#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/kv_request.hpp"
#include "fleetctl/commands/txn_compare.hpp"
#include "fleetctl/input/argify.hpp"
#include "fleetctl/input/go_text.hpp"

namespace etcdagent::fleet {
namespace {

using etcdserverpb::RequestOp;

std::unexpected<CommandError> invalidInput(std::string message) {
  return std::unexpected(CommandError{exitcode::kInvalidInput, std::move(message)});
}

// The put/get/del commands' own flags, so a request line accepts exactly what the command does.
const Command* kvCommand(std::string_view name) {
  static const std::vector<Command> commands = kvCommands();
  for (const auto& c : commands) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// etcdctl's getPutOp.
InputResult<RequestOp> putOp(const FlagSet& f, const std::vector<std::string>& args) {
  const bool ignoreValue = f.getBool("ignore-value");
  if (args.empty()) {
    return badArgs("put command needs 1 argument and input from stdin or 2 arguments");
  }
  if (ignoreValue && args.size() > 1) {
    return badArgs("put command needs only 1 argument when 'ignore-value' is set");
  }
  // etcdctl would read the value from what is left of stdin, which the transaction reader has
  // already consumed: a missing value is always this error.
  if (!ignoreValue && args.size() < 2) {
    return badArgs("put command needs 1 argument and input from stdin or 2 arguments");
  }
  auto lease = goParseInt(f.getString("lease"), 16);
  if (!lease) return badArgs("bad lease ID (" + lease.error() + "), expecting ID in Hex");

  RequestOp op;
  auto* put = op.mutable_request_put();
  put->set_key(args[0]);
  if (!ignoreValue) put->set_value(args[1]);
  put->set_lease(*lease);
  put->set_prev_kv(f.getBool("prev-kv"));
  put->set_ignore_value(ignoreValue);
  put->set_ignore_lease(f.getBool("ignore-lease"));
  return op;
}

InputResult<RequestOp> getOp(const FlagSet& f, const std::vector<std::string>& args) {
  auto req = rangeRequestFromArgs(f, args);
  if (!req) return std::unexpected(req.error());
  RequestOp op;
  *op.mutable_request_range() = std::move(*req);
  return op;
}

InputResult<RequestOp> delOp(const FlagSet& f, const std::vector<std::string>& args) {
  auto req = deleteRequestFromArgs(f, args);
  if (!req) return std::unexpected(req.error());
  RequestOp op;
  *op.mutable_request_delete_range() = std::move(*req);
  return op;
}

// bufio.Reader.ReadString('\n') then strings.TrimSpace: input that ends without a newline is
// etcdctl's "EOF" error, even when the last line has text.
InputResult<std::string> readLine(std::istream& in) {
  std::string line;
  if (!std::getline(in, line) || in.eof()) return invalidInput("EOF");
  return std::string(goTrimSpace(line));
}

}  // namespace

InputResult<RequestOp> parseRequestOp(std::string_view line) {
  const std::string text(line);
  auto args = argify(line);
  if (!args) return std::unexpected(args.error());
  if (args->size() < 2) return invalidInput("invalid txn compare request: " + text);

  const std::string& name = (*args)[0];
  const Command* cmd =
      (name == "put" || name == "get" || name == "del") ? kvCommand(name) : nullptr;
  if (cmd == nullptr) return invalidInput("invalid txn request: " + text);
  FlagSet flags;
  if (cmd->flags) cmd->flags(flags);
  auto positional = parseArgs(std::vector<std::string>(args->begin() + 1, args->end()), {&flags});
  if (!positional) return invalidInput("invalid txn request: " + text);

  if (name == "put") return putOp(flags, *positional);
  if (name == "get") return getOp(flags, *positional);
  return delOp(flags, *positional);
}

InputResult<etcdserverpb::TxnRequest> readTxn(std::istream& in,
                                              const std::function<void(std::string_view)>& prompt) {
  etcdserverpb::TxnRequest txn;
  auto ask = [&](std::string_view text) {
    if (prompt) prompt(text);
  };

  ask(kTxnPromptCompares);
  for (;;) {
    auto line = readLine(in);
    if (!line) return std::unexpected(line.error());
    if (line->empty()) break;
    auto cmp = parseCompare(*line);
    if (!cmp) return std::unexpected(cmp.error());
    *txn.add_compare() = std::move(*cmp);
  }
  for (auto [text, ops] : {std::pair{kTxnPromptSuccess, txn.mutable_success()},
                           std::pair{kTxnPromptFailure, txn.mutable_failure()}}) {
    ask(text);
    for (;;) {
      auto line = readLine(in);
      if (!line) return std::unexpected(line.error());
      if (line->empty()) break;
      auto op = parseRequestOp(*line);
      if (!op) return std::unexpected(op.error());
      *ops->Add() = std::move(*op);
    }
  }
  return txn;
}

}  // namespace etcdagent::fleet
