#pragma once

// Errors are values: every fallible operation returns Result<T>. The message is written for the
// operator: what failed, where, and what to try.

#include <expected>
#include <string>
#include <utility>

namespace etcdagent {

enum class Errc {
  kInvalidArgument,     // bad input from the user (flags, config, arguments)
  kUnavailable,         // an endpoint could not be reached
  kDeadlineExceeded,    // the operation did not finish in time
  kPermissionDenied,    // authenticated, but not allowed
  kUnauthenticated,     // wrong or missing credentials
  kNotFound,            // the thing asked about does not exist
  kAlreadyExists,       // it exists already
  kFailedPrecondition,  // refused because of the current state (quorum, pending learner, ...)
  kResourceExhausted,   // request too large, quota exceeded
  kCancelled,           // interrupted by the user (SIGINT/SIGTERM)
  kIo,                  // local file or process I/O failed
  kUnimplemented,       // the server does not know this call
  kInternal,            // anything else
};

struct Error {
  Errc code = Errc::kInternal;
  std::string message;

  Error() = default;
  Error(Errc c, std::string msg) : code(c), message(std::move(msg)) {}

  // Prefixes the message with context: Error{..,"refused"}.context("put foo") -> "put foo:
  // refused".
  [[nodiscard]] Error context(const std::string& what) const& {
    return {code, what + ": " + message};
  }
};

// A std::expected that cannot be dropped: ignoring the outcome of a fallible call is a compile
// error (-Werror), not silence. Where dropping it is right, say so with (void) and a comment.
template <class T>
class [[nodiscard]] Result : public std::expected<T, Error> {
  using Base = std::expected<T, Error>;

 public:
  using Base::Base;
  Result() = default;
  // What the monadic operations of std::expected return.
  Result(const Base& other) : Base(other) {}        // NOLINT(google-explicit-constructor)
  Result(Base&& other) : Base(std::move(other)) {}  // NOLINT(google-explicit-constructor)
};

// Shorthand for returning an error from a function that returns Result<T>.
inline std::unexpected<Error> fail(Errc code, std::string message) {
  return std::unexpected(Error{code, std::move(message)});
}
inline std::unexpected<Error> fail(Error e) {
  return std::unexpected(std::move(e));
}

}  // namespace etcdagent
