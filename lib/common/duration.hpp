#pragma once

// Go-style durations ("5s", "1m30s", "250ms", "2h") as etcd and etcdctl spell them.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace etcdagent {

using Duration = std::chrono::nanoseconds;

// Parses a Go time.Duration string. A bare "0" is accepted; other unit-less numbers are not.
Result<Duration> parseDuration(std::string_view text);

// Formats like Go's time.Duration.String(): "5s", "1m30s", "1.5s", "250ms", "0s".
std::string formatDuration(Duration d);

// The current UTC time as RFC 3339 ("2026-11-30T05:32:53Z"), for timestamps kept in state files.
std::string nowRfc3339();

// The RFC 3339 UTC timestamps of our state files ("2026-11-30T05:32:53Z", whole seconds), for
// times passed in rather than read from the clock (tests move time without sleeping).
std::string formatRfc3339(std::chrono::system_clock::time_point t);
// nullopt for anything else (another zone, fractions, trailing text).
std::optional<std::chrono::system_clock::time_point> parseRfc3339(const std::string& text);

}  // namespace etcdagent
