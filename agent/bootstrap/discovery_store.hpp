#pragma once

// Where the coordinator keeps its tokens: <data_root>/discovery/<token>.json (mode 0600, the
// directory 0700), one file per token ever created, written atomically. Tokens are never deleted,
// so the directory is also the list of tokens that must never be handed out again.

#include <string>
#include <vector>

#include "common/error.hpp"
#include "etcdagent/v1/agent.pb.h"

namespace etcdagent::agent {

std::string discoveryTokenToJson(const v1::DiscoveryTokenState& state);
Result<v1::DiscoveryTokenState> discoveryTokenFromJson(const std::string& text,
                                                       const std::string& source);

struct LoadedDiscoveryTokens {
  std::vector<v1::DiscoveryTokenState> tokens;
  std::vector<std::string> unreadable_tokens;  // files that exist but did not parse
  std::vector<Error> errors;                   // one per unreadable file, naming it
};

// Reads every <token>.json in `dir`; a missing directory is an empty registry.
Result<LoadedDiscoveryTokens> loadDiscoveryTokens(const std::string& dir);

// Writes `dir`/<token>.json atomically (creating `dir` with mode 0700 first).
Result<void> saveDiscoveryToken(const std::string& dir, const v1::DiscoveryTokenState& state);

}  // namespace etcdagent::agent
