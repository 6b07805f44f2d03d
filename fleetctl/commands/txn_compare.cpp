#include "fleetctl/commands/txn_compare.hpp"

#include <optional>

#include "common/encoding.hpp"
#include "fleetctl/input/go_scanner.hpp"
#include "fleetctl/input/go_text.hpp"

namespace etcdagent::fleet {
namespace {

using etcdserverpb::Compare;

std::unexpected<CommandError> invalidCompare(std::string message) {
  return std::unexpected(CommandError{exitcode::kInvalidInput, std::move(message)});
}

std::optional<Compare::CompareResult> compareResult(std::string_view op) {
  if (op == "=") return Compare::EQUAL;
  if (op == "!=") return Compare::NOT_EQUAL;
  if (op == ">") return Compare::GREATER;
  if (op == "<") return Compare::LESS;
  return std::nullopt;
}

// What fmt.Sscanf(rest, "%q) %s %q", &key, &op, &val) leaves: it stops at the first mismatch,
// and whatever was scanned until then shows in the error.
struct Scanned {
  std::string key, op, val;
  int count = 0;
};

Scanned scanComparison(std::string_view rest) {
  Scanned s;
  GoScanner scan(rest);
  auto k = scan.quoted();
  if (!k) return s;
  s.key = std::move(*k);
  ++s.count;
  if (!scan.literal(')') || !scan.formatSpace()) return s;
  auto o = scan.word();
  if (!o) return s;
  s.op = std::move(*o);
  ++s.count;
  if (!scan.formatSpace()) return s;
  auto v = scan.quoted();
  if (!v) return s;
  s.val = std::move(*v);
  ++s.count;
  return s;
}

}  // namespace

InputResult<Compare> parseCompare(std::string_view line) {
  const std::string text(line);
  const auto paren = line.find('(');
  if (paren == std::string_view::npos) return invalidCompare("malformed comparison: " + text);
  const std::string target(line.substr(0, paren));

  auto [key, op, val, scanned] = scanComparison(line.substr(paren + 1));
  if (scanned != 3) {
    return invalidCompare("malformed comparison: " + text + "; got " + target + "(" + goQuote(key) +
                          ") " + op + " " + goQuote(val));
  }

  Compare cmp;
  cmp.set_key(key);
  std::expected<std::int64_t, std::string> number = 0;
  if (target == "ver" || target == "version") {
    cmp.set_target(Compare::VERSION);
    number = goParseInt(val, 10);
    if (number) cmp.set_version(*number);
  } else if (target == "c" || target == "create") {
    cmp.set_target(Compare::CREATE);
    number = goParseInt(val, 10);
    if (number) cmp.set_create_revision(*number);
  } else if (target == "m" || target == "mod") {
    cmp.set_target(Compare::MOD);
    number = goParseInt(val, 10);
    if (number) cmp.set_mod_revision(*number);
  } else if (target == "val" || target == "value") {
    cmp.set_target(Compare::VALUE);
    cmp.set_value(val);
  } else if (target == "lease") {
    // Lease IDs are hexadecimal everywhere in etcdctl (etcdctl 3.4 itself crashes here).
    cmp.set_target(Compare::LEASE);
    number = goParseInt(val, 16);
    if (number) cmp.set_lease(*number);
  } else {
    return invalidCompare("malformed comparison: " + text + " (unknown target " + target + ")");
  }
  if (!number) return invalidCompare("invalid txn compare request: " + text);
  auto result = compareResult(op);
  if (!result) {
    return invalidCompare("invalid txn compare request: " + text + " (unknown operator " + op +
                          "; use =, !=, < or >)");
  }
  cmp.set_result(*result);
  return cmp;
}

}  // namespace etcdagent::fleet
