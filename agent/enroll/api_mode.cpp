#include "agent/enroll/api_mode.hpp"

namespace etcdagent::agent {

ApiMode decideApiMode(const ApiModeFacts& facts) {
  if (facts.enrolled) return ApiMode::kMutualTls;
  if (facts.token_waiting) return ApiMode::kEnrollment;
  if (facts.insecure) return ApiMode::kPlaintext;
  return ApiMode::kAwaitingToken;
}

std::string apiModeName(ApiMode mode) {
  switch (mode) {
    case ApiMode::kMutualTls: return "mutual TLS";
    case ApiMode::kEnrollment: return "enrollment TLS";
    case ApiMode::kPlaintext: return "plaintext";
    case ApiMode::kAwaitingToken: return "awaiting an enrollment token";
  }
  return "?";
}

std::string apiModeNote(ApiMode mode, const std::string& token_file, const std::string& token_id,
                        const std::string& api_listen) {
  switch (mode) {
    case ApiMode::kEnrollment:
      return "waiting for enrollment (token " + token_id + "): run `etcd-fleet enroll --hosts " +
             api_listen + "` (or bootstrap) where the fleet's CA is";
    case ApiMode::kAwaitingToken:
      return "waiting for enrollment: put a token in " + token_file +
             " (etcd-fleet token create, then etcd-agent enroll TOKEN on this host)";
    case ApiMode::kMutualTls:
    case ApiMode::kPlaintext: return "";
  }
  return "";
}

std::string apiModeWarning(ApiMode mode, const ApiModeFacts& facts, const std::string& api_listen) {
  if (mode == ApiMode::kPlaintext) {
    return "insecure: the agent API on " + api_listen +
           " is plaintext and unauthenticated: every user of this host can read it, and the "
           "member can be changed by anyone who runs as root or the agent's user; enroll the "
           "host for mutual TLS";
  }
  if (mode == ApiMode::kMutualTls && facts.insecure) {
    return "insecure is ignored: this agent is enrolled and serves its API over mutual TLS only";
  }
  return "";
}

}  // namespace etcdagent::agent
