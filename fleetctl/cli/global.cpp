#include "fleetctl/cli/global.hpp"

#include <fcntl.h>
#include <termios.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>

#include "common/file_util.hpp"
#include "fleet/inventory.hpp"
#include "tls/fleet_pki.hpp"

namespace etcdagent::fleet {

void defineGlobalFlags(FlagSet& f) {
  f.string("cacert", 0, "",
           "verify certificates of TLS-enabled secure servers using this CA bundle")
      .string("cert", 0, "", "identify secure client using this TLS certificate file")
      .positiveDuration("command-timeout", 0, "5s",
                        "timeout for short running command (excluding dial timeout)")
      .boolean("debug", 0, false, "print gRPC's own log lines (dropped otherwise)")
      .positiveDuration("dial-timeout", 0, "2s", "dial timeout for client connections")
      .string("discovery-srv", 'd', "",
              "domain name to query for SRV records describing cluster endpoints")
      .string("discovery-srv-name", 0, "", "service name to query when using DNS discovery")
      .stringSlice("endpoints", 0, {"127.0.0.1:2379"},
                   "gRPC endpoints (default: the fleet inventory's members, else 127.0.0.1:2379)")
      .string("fleet", 0, "",
              "the fleet inventory written by bootstrap (default "
              "~/.config/etcd-fleet/fleet.toml)")
      .boolean("hex", 0, false, "print byte strings as hex encoded strings")
      .boolean("insecure-discovery", 0, true,
               "accept insecure SRV records describing cluster endpoints")
      .boolean("insecure-skip-tls-verify", 0, false,
               "skip server certificate verification (CAUTION: this option should be enabled only "
               "for testing "
               "purposes)")
      .boolean("insecure-transport", 0, true, "disable transport security for client connections")
      .positiveDuration("keepalive-time", 0, "2s", "keepalive time for client connections")
      .positiveDuration("keepalive-timeout", 0, "6s", "keepalive timeout for client connections")
      .string("key", 0, "", "identify secure client using this TLS key file")
      .string("password", 0, "",
              "password for authentication (if this option is used, --user option shouldn't "
              "include password)")
      .string("user", 0, "",
              "username[:password] for authentication (prompt if password is not supplied)")
      .string("write-out", 'w', "simple", "set the output format (fields, json, simple, table)");
}

Result<std::vector<std::string>> applyEnvironment(
    FlagSet& flags, const std::function<const char*(const char*)>& getenv) {
  std::vector<std::string> warnings;
  for (const auto& flag : flags.flags()) {
    std::string suffix;
    for (char c : flag.name)
      suffix += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    for (const std::string prefix : {"ETCD_FLEET_", "ETCDCTL_"}) {
      const std::string var = prefix + suffix;
      const char* value = getenv(var.c_str());
      if (value == nullptr) continue;
      if (flag.changed) {
        warnings.push_back("recognized environment variable " + var +
                           ", but unused: shadowed by corresponding flag");
        break;
      }
      if (auto r = flags.set(flag.name, value); !r) {
        return fail(Errc::kInvalidArgument,
                    "environment variable " + var + ": " + r.error().message);
      }
      break;
    }
  }
  return warnings;
}

Error inventoryError(const Error& error) {
  return {Errc::kFailedPrecondition,
          error.message +
              "; repair or remove that file, or pass --endpoints (etcd commands) or "
              "--fleet FILE"};
}

Result<GlobalOptions> globalOptions(const FlagSet& f,
                                    const std::function<Result<std::string>()>& prompt,
                                    const std::function<const char*(const char*)>& getenv) {
  GlobalOptions g;
  auto format = parseOutputFormat(f.getString("write-out"));
  if (!format) return fail(format.error());
  g.format = *format;
  g.hex = f.getBool("hex");
  g.debug = f.getBool("debug");
  auto& c = g.client;
  c.endpoints = f.getStringSlice("endpoints");
  g.fleet_path = f.getString("fleet");
  if (g.fleet_path.empty()) g.fleet_path = defaultInventoryPath(getenv);
  g.endpoints_set = f.changed("endpoints");
  if (!g.endpoints_set) {
    // No --endpoints: the members of the bootstrapped fleet, so later commands need no flags.
    auto inventory = loadInventory(g.fleet_path);
    if (!inventory) return fail(inventoryError(inventory.error()));
    if (*inventory && !(*inventory)->clientEndpoints().empty()) {
      c.endpoints = (*inventory)->clientEndpoints();
    }
  }
  c.dial_timeout = f.getDuration("dial-timeout");
  c.command_timeout = f.getDuration("command-timeout");
  g.command_timeout_set = f.changed("command-timeout");
  c.keepalive_time = f.getDuration("keepalive-time");
  c.keepalive_timeout = f.getDuration("keepalive-timeout");
  c.tls.ca_file = f.getString("cacert");
  c.tls.cert_file = f.getString("cert");
  c.tls.key_file = f.getString("key");
  c.tls.insecure_skip_verify = f.getBool("insecure-skip-tls-verify");
  if (!c.tls.any()) {
    // A fleet with a CA: its TLS members are reached with etcd-fleet's own client certificate
    // (pki/fleet.crt under the fleet CA) when no --cacert/--cert/--key (or ETCDCTL_*) is given.
    const tls::FleetPkiPaths pki = tls::fleetPkiPaths(g.fleet_path);
    std::error_code ec;
    if (std::filesystem::exists(pki.ca_cert, ec)) {
      c.tls = {.ca_file = pki.ca_cert,
               .cert_file = pki.fleet_cert,
               .key_file = pki.fleet_key,
               .insecure_skip_verify = c.tls.insecure_skip_verify,
               .only_for_https = true,
               .cert_problem = tls::fleetCertProblem(pki, std::chrono::system_clock::now())};
    }
  }
  c.insecure_transport = f.getBool("insecure-transport");
  if (!f.getString("discovery-srv").empty()) {
    return fail(Errc::kInvalidArgument,
                "--discovery-srv is not supported by etcd-fleet; list the members with --endpoints "
                "(or use the fleet inventory)");
  }

  const std::string user = f.getString("user");
  const std::string password = f.getString("password");
  if (!user.empty()) {
    // etcdctl: with --password the --user value is the whole name (names may contain ':');
    // otherwise "name:password" is split at the first colon, or the password is asked for.
    auto colon = user.find(':');
    if (!password.empty()) {
      c.user = user;
      c.password = password;
    } else if (colon != std::string::npos) {
      c.user = user.substr(0, colon);
      c.password = user.substr(colon + 1);
    } else {
      c.user = user;
      auto p = prompt();
      if (!p) return fail(p.error());
      c.password = *p;
    }
  } else if (!password.empty()) {
    return fail(Errc::kInvalidArgument, "--password needs --user");
  }
  return g;
}

Result<std::string> promptPassword() {
  auto password = readPasswordFromTerminal("Password: ");
  if (!password && password.error().code == Errc::kUnavailable) {
    return fail(Errc::kInvalidArgument,
                "a password is needed and there is no terminal to ask on; pass --user "
                "NAME:PASSWORD or --password");
  }
  return password;
}

Result<std::string> readPasswordFromTerminal(std::string_view prompt) {
  UniqueFd tty(::open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY));
  if (!tty.valid()) return fail(Errc::kUnavailable, "there is no terminal to ask on");
  if (::write(tty.get(), prompt.data(), prompt.size()) < 0)
    return fail(Errc::kIo, "cannot write to the terminal");
  termios old{};
  bool restore = ::tcgetattr(tty.get(), &old) == 0;
  if (restore) {
    termios quiet = old;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    ::tcsetattr(tty.get(), TCSAFLUSH, &quiet);
  }
  std::string password;
  char c = 0;
  while (::read(tty.get(), &c, 1) == 1 && c != '\n') password += c;
  if (restore) ::tcsetattr(tty.get(), TCSAFLUSH, &old);
  if (::write(tty.get(), "\n", 1) < 0) {
    // nothing useful to do: the password was read
  }
  return password;
}

}  // namespace etcdagent::fleet
