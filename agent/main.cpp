// etcd-agent: parse arguments, load the config, check what a start needs (the same checks for a
// start and for --check-config), and hand it to the Agent (agent/daemon/agent.hpp) or to
// --check-config; map the outcome to an exit code.

#include <iostream>
#include <optional>
#include <string>

#include "agent/config/agent_config.hpp"
#include "agent/daemon/agent.hpp"
#include "agent/daemon/check_config.hpp"
#include "agent/enroll/enrollment.hpp"
#include "common/version.hpp"
#include "tls/openssl_lifetime.hpp"

namespace {

using namespace etcdagent::agent;

void usage() {
  std::cout << "Usage: etcd-agent [--config FILE] [--insecure] [--check-config] [--version]\n"
               "       etcd-agent enroll TOKEN [--config FILE]\n\n"
               "Supervises one etcd member on this host (see etcd-agent(8)).\n\n"
               "  enroll TOKEN     save an enrollment token (etcd-fleet token create) in\n"
               "                   [enroll] token_file, where the agent takes it\n"
               "  --config FILE    configuration (default /etc/etcd-agent/agent.toml)\n"
               "  --insecure       serve the agent API in plaintext until enrolled (loopback\n"
               "                   api_listen only; agent.insecure)\n"
               "  --check-config   validate the configuration, print the etcd command line, exit\n"
               "  --version        print the version and exit\n";
}

}  // namespace

// `etcd-agent enroll TOKEN`: the token, checked, into [enroll] token_file (0600). The token is
// never echoed: it is a secret.
int enroll(const std::string& token_text, const std::string& config_path) {
  auto config = loadAgentConfig(config_path);
  if (!config) {
    std::cerr << "etcd-agent: " << config.error().message << "\n";
    return kExitConfig;
  }
  auto token = etcdagent::fleet::parseEnrollToken(token_text);
  if (!token) {
    std::cerr << "etcd-agent: enroll: " << token.error().message << "\n";
    return 2;
  }
  const std::string& path = config->enroll.token_file;
  if (auto written = writeEnrollToken(path, *token, config->member.data_root); !written) {
    std::cerr << "etcd-agent: enroll: " << written.error().message << "\n";
    return 1;
  }
  std::cout << "saved token " << token->id << " (fleet CA sha256:" << token->ca_hash << ") in "
            << path << "\nthe agent takes it within a second (one serving plaintext, with "
            << "insecure, at its next restart) and waits for `etcd-fleet enroll --hosts "
            << config->agent.api_listen << "` (or bootstrap) where the fleet's CA is\n";
  return 0;
}

int main(int argc, char** argv) {
  etcdagent::tls::keepOpenSslUntilExit();
  std::string config_path(kDefaultConfigPath);
  bool check = false;
  bool insecure = false;
  std::optional<std::string> enroll_token;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i == 1 && a == "enroll") {
      if (i + 1 >= argc) {
        std::cerr << "etcd-agent: enroll needs the token: etcd-agent enroll TOKEN\n";
        return 2;
      }
      enroll_token = argv[++i];
    } else if (a == "--config" && i + 1 < argc) {
      config_path = argv[++i];
    } else if (a.starts_with("--config=")) {
      config_path = a.substr(9);
    } else if (a == "--insecure") {
      insecure = true;
    } else if (a == "--check-config") {
      check = true;
    } else if (a == "--version") {
      std::cout << "etcd-agent " << etcdagent::kVersion << "\n";
      return 0;
    } else if (a == "--help" || a == "-h") {
      usage();
      return 0;
    } else {
      std::cerr << "etcd-agent: unknown argument \"" << a << "\"\n";
      usage();
      return 2;
    }
  }
  if (enroll_token) return enroll(*enroll_token, config_path);
  auto config = loadAgentConfig(config_path);
  if (!config) {
    std::cerr << "etcd-agent: " << config.error().message << "\n";
    return kExitConfig;
  }
  if (insecure) {
    if (!insecureListenAllowed(config->agent.api_listen)) {
      std::cerr << "etcd-agent: --" << insecureListenProblem(config->agent.api_listen) << "\n";
      return kExitConfig;
    }
    config->agent.insecure = true;
  }
  // Every "a human must act" refusal exits 78, which systemd does not restart (the units'
  // RestartPreventExitStatus=78).
  if (auto ready = checkStartConditions(*config); !ready) {
    std::cerr << "etcd-agent: " << ready.error().message << "\n";
    return kExitConfig;
  }
  if (check) return checkConfig(*config);
  Agent agent(std::move(*config));
  return agent.run();
}
