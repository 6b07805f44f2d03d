#include <cstdlib>
#include <iostream>
#include <sstream>

#include "etcd/grpc_log.hpp"
#include "fleetctl/cli/command.hpp"
#include "fleetctl/cli/global.hpp"

namespace etcdagent::fleet {
namespace {

constexpr std::string_view kProgram = "etcd-fleet";

const Command* findChild(const Command& cmd, std::string_view name) {
  for (const auto& c : cmd.children) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// "member add" -> lists every runnable command under `cmd` with its full path.
void listCommands(const Command& cmd, const std::string& prefix,
                  std::vector<std::pair<std::string, std::string>>& out) {
  for (const auto& c : cmd.children) {
    std::string path = prefix.empty() ? c.name : prefix + " " + c.name;
    if (c.run) out.emplace_back(path, c.summary);
    listCommands(c, path, out);
  }
}

std::string usageFor(const std::vector<const Command*>& path, const FlagSet& local,
                     const FlagSet& global) {
  const Command& cmd = *path.back();
  std::string full;
  for (std::size_t i = 1; i < path.size(); ++i) full += (full.empty() ? "" : " ") + path[i]->name;
  std::ostringstream os;
  os << "NAME:\n\t" << (full.empty() ? std::string(kProgram) : full) << " - " << cmd.summary
     << "\n\n";
  os << "USAGE:\n\t" << kProgram << " "
     << (cmd.usage.empty() ? full + (cmd.children.empty() ? "" : " <subcommand>") : cmd.usage)
     << " [flags]\n\n";
  if (!cmd.description.empty()) os << "DESCRIPTION:\n" << cmd.description << "\n\n";
  if (!cmd.children.empty()) {
    std::vector<std::pair<std::string, std::string>> list;
    listCommands(cmd, path.size() > 1 ? full : std::string(), list);
    os << "COMMANDS:\n";
    for (const auto& [name, summary] : list) {
      os << "\t" << name
         << (name.size() < 8    ? "\t\t\t"
             : name.size() < 16 ? "\t\t"
                                : "\t")
         << summary << "\n";
    }
    os << "\n";
  }
  os << "OPTIONS:\n" << local.usageText() << "\n";
  if (path.size() > 1) os << "GLOBAL OPTIONS:\n" << global.usageText() << "\n";
  return os.str();
}

bool takesValue(const FlagSet& a, const FlagSet& b, const std::string& token) {
  if (token.find('=') != std::string::npos) return false;
  const Flag* f = nullptr;
  if (token.starts_with("--")) {
    f = a.find(token.substr(2));
    if (!f) f = b.find(token.substr(2));
  } else if (token.size() == 2) {
    for (const auto* set : {&a, &b}) {
      for (const auto& flag : set->flags()) {
        if (flag.shorthand == token[1]) f = &flag;
      }
    }
  }
  return f != nullptr && f->type != FlagType::kBool;
}

}  // namespace

std::unexpected<CommandError> commandError(const Error& error) {
  return commandError(exitcode::kError, error.message);
}

Context::Context(GlobalOptions global, const FlagSet& flags, std::vector<std::string> args,
                 std::ostream& out, std::ostream& err, std::istream& in)
    : global_(std::move(global)),
      flags_(flags),
      args_(std::move(args)),
      out_(out),
      err_(err),
      in_(in) {}

Context::~Context() = default;

std::expected<etcd::Client*, CommandError> Context::client() {
  if (!client_) {
    auto c = etcd::Client::create(global_.client);
    if (!c) return std::unexpected(CommandError{exitcode::kBadConnection, c.error().message});
    // etcdctl authenticates while it connects: a wrong password (or no reachable endpoint)
    // then fails with exit code 2 before the command sends anything.
    grpc::ClientContext probe;
    if (auto r = (*c)->authorize(probe); !r) {
      return std::unexpected(CommandError{exitcode::kBadConnection, r.error().message});
    }
    client_ = std::move(*c);
  }
  return client_.get();
}

int runCli(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err,
           std::istream& in, const CliFinish& finish) {
  static const Command root = rootCommand();
  FlagSet global;
  defineGlobalFlags(global);

  // Find the command: leading non-flag words that name sub-commands (as cobra does).
  std::vector<const Command*> path{&root};
  std::vector<std::string> rest;
  FlagSet probe;  // the current command's flags, to know which flags take a value
  bool descending = true;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") {
      descending = false;
      rest.insert(rest.end(), argv.begin() + static_cast<std::ptrdiff_t>(i), argv.end());
      break;
    }
    if (a.starts_with("-") && a.size() > 1) {
      rest.push_back(a);
      if (takesValue(probe, global, a) && i + 1 < argv.size()) rest.push_back(argv[++i]);
      continue;
    }
    if (descending) {
      if (const Command* child = findChild(*path.back(), a)) {
        path.push_back(child);
        probe = FlagSet();
        if (child->flags) child->flags(probe);
        continue;
      }
      descending = false;
    }
    rest.push_back(a);
  }
  const Command& cmd = *path.back();

  FlagSet local;
  if (cmd.flags) cmd.flags(local);
  local.boolean("help", 'h', false,
                "help for " + (cmd.name.empty() ? std::string(kProgram) : cmd.name));
  if (path.size() == 1) local.boolean("version", 0, false, "print the version and exit");

  auto positional = parseArgs(rest, {&local, &global});
  if (!positional) {
    out << usageFor(path, local, global);
    err << "Error: " << positional.error().message << "\n";
    return exitcode::kError;
  }
  if (local.getBool("help") || (!cmd.run && positional->empty())) {
    out << usageFor(path, local, global);
    return exitcode::kSuccess;
  }
  if (!cmd.run) {
    err << "Error: unknown command \"" << positional->front() << "\" for \"" << kProgram
        << (path.size() > 1 ? " " + cmd.name : std::string()) << "\"\nRun '" << kProgram
        << " --help' for usage.\n";
    return exitcode::kError;
  }

  auto warnings = applyEnvironment(global, [](const char* name) { return std::getenv(name); });
  if (!warnings) {
    err << "Error: " << warnings.error().message << "\n";
    return exitcode::kInvalidInput;
  }
  for (const auto& w : *warnings) err << "[WARNING] " << w << "\n";

  auto options =
      globalOptions(global, promptPassword, [](const char* name) { return std::getenv(name); });
  if (!options) {
    err << "Error: " << options.error().message << "\n";
    // Bad flags are etcdctl's 128; a damaged fleet inventory is a plain failure.
    return options.error().code == Errc::kFailedPrecondition ? exitcode::kError
                                                             : exitcode::kBadArgs;
  }

  etcd::routeGrpcLog(options->debug);
  Context ctx(std::move(*options), local, std::move(*positional), out, err, in);
  ctx.setArgv(argv);
  auto result = cmd.run(ctx);
  int code = exitcode::kSuccess;
  if (!result && result.error().print_usage) out << usageFor(path, local, global);
  out.flush();
  if (!result) {
    err << "Error: " << result.error().message << "\n";
    code = result.error().exit_code;
  }
  err.flush();
  if (finish) finish(code);
  return code;
}

}  // namespace etcdagent::fleet
