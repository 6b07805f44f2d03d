#pragma once

// The command tree of etcd-fleet, shaped like etcdctl's (cobra): a command has a name, a usage
// line, its own flags and either a run function or sub-commands. Global flags apply everywhere.

#include <expected>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "etcd/client.hpp"
#include "fleetctl/cli/flags.hpp"
#include "fleetctl/output/format.hpp"

namespace etcdagent::fleet {

// etcdctl's exit codes (etcdctl/ctlv3/command/error.go).
namespace exitcode {
inline constexpr int kSuccess = 0;
inline constexpr int kError = 1;
inline constexpr int kBadConnection = 2;
inline constexpr int kInvalidInput = 3;
inline constexpr int kBadFeature = 4;
inline constexpr int kInterrupted = 5;
inline constexpr int kIO = 6;
inline constexpr int kBadArgs = 128;
}  // namespace exitcode

// A failed command: printed as "Error: <message>" on stderr, then exit with `exit_code`.
struct CommandError {
  int exit_code = exitcode::kError;
  std::string message;
  bool print_usage = false;  // also print the command's usage (bad flags)
};
using CommandResult = std::expected<void, CommandError>;
// What a parser of a command's input (flags, arguments, stdin lines) makes of it, or the
// CommandError, with etcdctl's exit code, that the input deserves.
template <class T>
using InputResult = std::expected<T, CommandError>;

inline std::unexpected<CommandError> commandError(int code, std::string message) {
  return std::unexpected(CommandError{code, std::move(message)});
}
// Wrong number or shape of positional arguments.
inline std::unexpected<CommandError> badArgs(std::string message) {
  return commandError(exitcode::kBadArgs, std::move(message));
}
// An error from the client or the cluster.
std::unexpected<CommandError> commandError(const Error& error);

struct GlobalOptions {
  etcd::ClientConfig client;
  OutputFormat format = OutputFormat::kSimple;
  bool hex = false;
  bool debug = false;
  // --command-timeout given (flag or environment): snapshot save then has a deadline, as in
  // etcdctl.
  bool command_timeout_set = false;
  // The fleet inventory's path (--fleet, or the default under ~/.config/etcd-fleet).
  std::string fleet_path;
  // --endpoints (or ETCDCTL_ENDPOINTS / ETCD_FLEET_ENDPOINTS) was given: the inventory was not
  // used for the endpoints.
  bool endpoints_set = false;
};

// Everything a running command needs. The etcd client is created on first use, so commands
// that never talk to etcd (help, snapshot status, ...) never dial.
class Context {
 public:
  Context(GlobalOptions global, const FlagSet& flags, std::vector<std::string> args,
          std::ostream& out, std::ostream& err, std::istream& in);
  ~Context();

  GlobalOptions& global() { return global_; }
  const FlagSet& flags() const { return flags_; }
  const std::vector<std::string>& args() const { return args_; }
  std::ostream& out() { return out_; }
  std::ostream& err() { return err_; }
  std::istream& in() { return in_; }
  // The whole command line as the program got it (etcdctl's os.Args): `watch` looks for its
  // "--" separator there, which flag parsing drops.
  const std::vector<std::string>& argv() const { return argv_; }
  void setArgv(std::vector<std::string> argv) { argv_ = std::move(argv); }
  Output output() { return Output{out_, err_, global_.format, global_.hex}; }

  // The client for --endpoints. Errors are already CommandErrors (exit code 2 for a bad config).
  std::expected<etcd::Client*, CommandError> client();

 private:
  GlobalOptions global_;
  const FlagSet& flags_;
  std::vector<std::string> args_;
  std::ostream& out_;
  std::ostream& err_;
  std::istream& in_;
  std::unique_ptr<etcd::Client> client_;
  std::vector<std::string> argv_;
};

struct Command {
  std::string name;
  std::string usage;    // after the program name: "get [options] <key> [range_end]"
  std::string summary;  // one line, shown in lists
  std::string description;
  std::function<void(FlagSet&)> flags;  // registers the command's own flags
  std::function<CommandResult(Context&)> run;
  std::vector<Command> children;
};

// Builds the whole tree (commands/*.cpp contribute their families).
Command rootCommand();

// What runCli does once a command has run and its output and error are written, with the exit
// code, while the command's connections still exist: nothing (runCli then returns the code), or end
// the process right there (etcd-fleet's main).
using CliFinish = std::function<void(int exit_code)>;

// Parses argv, dispatches, prints errors; returns the process exit code.
int runCli(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err,
           std::istream& in, const CliFinish& finish = {});

}  // namespace etcdagent::fleet
