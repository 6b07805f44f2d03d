#include "fleetctl/commands/txn_reader.hpp"

#include <cctype>
#include <cstdint>
#include <limits>
#include <optional>

#include "common/encoding.hpp"
#include "fleetctl/commands/commands.hpp"
#include "fleetctl/commands/util.hpp"

namespace etcdagent::fleet {
namespace {

using etcdserverpb::Compare;
using etcdserverpb::RequestOp;

std::unexpected<CommandError> invalidInput(std::string message) {
  return std::unexpected(CommandError{exitcode::kInvalidInput, std::move(message)});
}
std::unexpected<CommandError> badArgsError(std::string message) {
  return std::unexpected(CommandError{exitcode::kBadArgs, std::move(message)});
}
std::unexpected<CommandError> badFeature(std::string message) {
  return std::unexpected(CommandError{exitcode::kBadFeature, std::move(message)});
}

// ---- UTF-8 and Go's notion of white space ----------------------------------------------------

// Decodes the rune at s[i]; invalid bytes decode as U+FFFD of width 1 (as Go's decoders do).
char32_t decodeRune(std::string_view s, std::size_t i, std::size_t* width) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  auto cont = [&](std::size_t k) {
    return i + k < s.size() && (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
  };
  auto at = [&](std::size_t k) { return static_cast<char32_t>(s[i + k] & 0x3F); };
  *width = 1;
  if (b0 < 0x80) return b0;
  if (b0 >= 0xC2 && b0 <= 0xDF && cont(1)) {
    *width = 2;
    return (static_cast<char32_t>(b0 & 0x1F) << 6) | at(1);
  }
  if (b0 >= 0xE0 && b0 <= 0xEF && cont(1) && cont(2)) {
    char32_t r = (static_cast<char32_t>(b0 & 0x0F) << 12) | (at(1) << 6) | at(2);
    if (r >= 0x800 && (r < 0xD800 || r > 0xDFFF)) {
      *width = 3;
      return r;
    }
    return 0xFFFD;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4 && cont(1) && cont(2) && cont(3)) {
    char32_t r = (static_cast<char32_t>(b0 & 0x07) << 18) | (at(1) << 12) | (at(2) << 6) | at(3);
    if (r >= 0x10000 && r <= 0x10FFFF) {
      *width = 4;
      return r;
    }
  }
  return 0xFFFD;
}

void appendRune(std::string& out, char32_t r) {
  if (r < 0x80) {
    out += static_cast<char>(r);
  } else if (r < 0x800) {
    out += static_cast<char>(0xC0 | (r >> 6));
    out += static_cast<char>(0x80 | (r & 0x3F));
  } else if (r < 0x10000) {
    out += static_cast<char>(0xE0 | (r >> 12));
    out += static_cast<char>(0x80 | ((r >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (r & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (r >> 18));
    out += static_cast<char>(0x80 | ((r >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((r >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (r & 0x3F));
  }
}

// unicode.IsSpace (and fmt's scanner, which uses the same set).
bool isGoSpace(char32_t r) {
  return (r >= 0x09 && r <= 0x0D) || r == 0x20 || r == 0x85 || r == 0xA0 || r == 0x1680 ||
         (r >= 0x2000 && r <= 0x200A) || r == 0x2028 || r == 0x2029 || r == 0x202F || r == 0x205F ||
         r == 0x3000;
}

// RE2's \s, which argify's regular expression uses: ASCII only, and no \v.
bool isReSpace(char c) {
  return c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == ' ';
}

// ---- Go string literals ------------------------------------------------------------------------

int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// strconv.Unquote of a double-quoted literal (quotes included, valid UTF-8).
std::optional<std::string> unquoteDouble(std::string_view lit) {
  if (lit.size() < 2 || lit.front() != '"' || lit.back() != '"') return std::nullopt;
  std::string_view body = lit.substr(1, lit.size() - 2);
  std::string out;
  for (std::size_t i = 0; i < body.size();) {
    const char c = body[i];
    if (c == '\n' || c == '"') return std::nullopt;
    if (c != '\\') {
      out += c;
      ++i;
      continue;
    }
    if (++i >= body.size()) return std::nullopt;
    const char e = body[i++];
    switch (e) {
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'v': out += '\v'; break;
      case '\\': out += '\\'; break;
      case '"': out += '"'; break;
      case 'x':
      case 'u':
      case 'U': {
        const std::size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        if (i + n > body.size()) return std::nullopt;
        std::uint32_t v = 0;
        for (std::size_t k = 0; k < n; ++k) {
          int d = hexDigit(body[i + k]);
          if (d < 0) return std::nullopt;
          v = v * 16 + static_cast<std::uint32_t>(d);
        }
        i += n;
        if (e == 'x') {
          out += static_cast<char>(v);
        } else {
          if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return std::nullopt;
          appendRune(out, v);
        }
        break;
      }
      default: {
        if (e < '0' || e > '7' || i + 2 > body.size()) return std::nullopt;
        std::uint32_t v = static_cast<std::uint32_t>(e - '0');
        for (std::size_t k = 0; k < 2; ++k) {
          const char d = body[i + k];
          if (d < '0' || d > '7') return std::nullopt;
          v = v * 8 + static_cast<std::uint32_t>(d - '0');
        }
        if (v > 255) return std::nullopt;
        i += 2;
        out += static_cast<char>(v);
      }
    }
  }
  return out;
}

// ---- Go's fmt scanner, as far as "%q) %s %q" and "%q" need it ----------------------------------

// A scan error. `message` is fmt's error text.
struct ScanError {
  std::string message;
};

class Scanner {
 public:
  explicit Scanner(std::string_view in) : in_(in) {}

  [[nodiscard]] bool atEnd() const { return pos_ >= in_.size(); }

  // ss.SkipSpace (input lines never hold a newline here).
  void skipSpace() {
    while (!atEnd()) {
      std::size_t w = 0;
      if (!isGoSpace(decodeRune(in_, pos_, &w))) return;
      pos_ += w;
    }
  }

  // A format space: at least one input space (or the end), then any more.
  std::expected<void, ScanError> formatSpace() {
    if (atEnd()) return {};
    std::size_t w = 0;
    if (!isGoSpace(decodeRune(in_, pos_, &w))) {
      return std::unexpected(ScanError{"expected space in input to match format"});
    }
    skipSpace();
    return {};
  }

  // A literal format character.
  std::expected<void, ScanError> literal(char c) {
    if (atEnd()) return std::unexpected(ScanError{"unexpected EOF"});
    if (in_[pos_] != c) return std::unexpected(ScanError{"input does not match format"});
    ++pos_;
    return {};
  }

  // %s: the next space-delimited word.
  std::expected<std::string, ScanError> word() {
    skipSpace();
    if (atEnd()) return std::unexpected(ScanError{"unexpected EOF"});
    const std::size_t start = pos_;
    while (!atEnd()) {
      std::size_t w = 0;
      if (isGoSpace(decodeRune(in_, pos_, &w))) break;
      pos_ += w;
    }
    return std::string(in_.substr(start, pos_ - start));
  }

  // %q: a "double-quoted" (Go escapes) or `back-quoted` string.
  std::expected<std::string, ScanError> quoted() {
    skipSpace();
    if (atEnd()) return std::unexpected(ScanError{"unexpected EOF"});
    const char quote = in_[pos_];
    if (quote != '"' && quote != '`') return std::unexpected(ScanError{"expected quoted string"});
    ++pos_;
    // fmt reads rune by rune: invalid UTF-8 becomes U+FFFD on the way.
    std::string buf(1, quote);
    for (bool escaped = false;;) {
      if (atEnd()) return std::unexpected(ScanError{"unexpected EOF"});
      std::size_t w = 0;
      const char32_t r = decodeRune(in_, pos_, &w);
      pos_ += w;
      appendRune(buf, r);
      if (quote == '`') {
        if (r == '`') return buf.substr(1, buf.size() - 2);
        continue;
      }
      if (escaped) {
        escaped = false;
      } else if (r == '\\') {
        escaped = true;
      } else if (r == '"') {
        break;
      }
    }
    auto text = unquoteDouble(buf);
    if (!text) return std::unexpected(ScanError{"invalid syntax"});
    return *text;
  }

 private:
  std::string_view in_;
  std::size_t pos_ = 0;
};

// ---- compares ----------------------------------------------------------------------------------

std::optional<Compare::CompareResult> compareResult(std::string_view op) {
  if (op == "=") return Compare::EQUAL;
  if (op == "!=") return Compare::NOT_EQUAL;
  if (op == ">") return Compare::GREATER;
  if (op == "<") return Compare::LESS;
  return std::nullopt;
}

// ---- requests ----------------------------------------------------------------------------------

// The put/get/del commands' own flags, so a request line accepts exactly what the command does.
const Command* kvCommand(std::string_view name) {
  static const std::vector<Command> commands = kvCommands();
  for (const auto& c : commands) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string upper(std::string_view s) {
  std::string out;
  for (char c : s) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// etcdctl's getPutOp.
InputResult<RequestOp> putOp(const FlagSet& f, const std::vector<std::string>& args) {
  const bool ignoreValue = f.getBool("ignore-value");
  if (args.empty()) {
    return badArgsError("put command needs 1 argument and input from stdin or 2 arguments");
  }
  if (ignoreValue && args.size() > 1) {
    return badArgsError("put command needs only 1 argument when 'ignore-value' is set");
  }
  // etcdctl would read the value from what is left of stdin, which the transaction reader has
  // already consumed: a missing value is always this error.
  if (!ignoreValue && args.size() < 2) {
    return badArgsError("put command needs 1 argument and input from stdin or 2 arguments");
  }
  auto lease = goParseInt(f.getString("lease"), 16);
  if (!lease) return badArgsError("bad lease ID (" + lease.error() + "), expecting ID in Hex");

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

}  // namespace

// etcdctl's getGetOp.
InputResult<etcdserverpb::RangeRequest> rangeRequestFromArgs(const FlagSet& f,
                                                             const std::vector<std::string>& args) {
  const bool prefix = f.getBool("prefix");
  const bool fromKey = f.getBool("from-key");
  if (args.empty()) {
    return badArgsError(
        "get command needs one argument as key and an optional argument as range_end");
  }
  if (prefix && fromKey) {
    return badArgsError("`--prefix` and `--from-key` cannot be set at the same time, choose one");
  }
  if (f.getBool("keys-only") && f.getBool("count-only")) {
    return badArgsError(
        "`--keys-only` and `--count-only` cannot be set at the same time, choose one");
  }
  etcdserverpb::RangeRequest request;
  auto* req = &request;
  const std::string consistency = f.getString("consistency");
  if (consistency == "s") {
    req->set_serializable(true);
  } else if (consistency != "l") {
    return badFeature("unknown consistency flag " + goQuote(consistency));
  }
  std::string key = args[0];
  if (args.size() > 1) {
    if (prefix || fromKey) {
      return badArgsError(
          "too many arguments, only accept one argument when `--prefix` or `--from-key` is set.");
    }
    req->set_range_end(args[1]);
  }
  req->set_limit(f.getInt("limit"));
  if (f.getInt("rev") > 0) req->set_revision(f.getInt("rev"));

  using R = etcdserverpb::RangeRequest;
  R::SortOrder order = R::NONE;
  const std::string orderText = upper(f.getString("order"));
  if (orderText == "ASCEND") {
    order = R::ASCEND;
  } else if (orderText == "DESCEND") {
    order = R::DESCEND;
  } else if (!orderText.empty()) {
    return badFeature("bad sort order " + f.getString("order"));
  }
  R::SortTarget target = R::KEY;
  const std::string targetText = upper(f.getString("sort-by"));
  if (targetText == "CREATE") {
    target = R::CREATE;
  } else if (targetText == "MODIFY") {
    target = R::MOD;
  } else if (targetText == "VALUE") {
    target = R::VALUE;
  } else if (targetText == "VERSION") {
    target = R::VERSION;
  } else if (!targetText.empty() && targetText != "KEY") {
    return badFeature("bad sort target " + f.getString("sort-by"));
  }
  // clientv3.WithSort: ascending by key is the server's own order and is sent as NONE.
  if (target == R::KEY && order == R::ASCEND) order = R::NONE;
  req->set_sort_order(order);
  req->set_sort_target(target);

  if (prefix) {
    if (key.empty()) {
      key = std::string(1, '\0');
      req->set_range_end(std::string(1, '\0'));
    } else {
      req->set_range_end(prefixRangeEnd(key));
    }
  }
  if (fromKey) {
    if (key.empty()) key = std::string(1, '\0');
    req->set_range_end(std::string(1, '\0'));
  }
  req->set_key(key);
  req->set_keys_only(f.getBool("keys-only"));
  req->set_count_only(f.getBool("count-only"));
  return request;
}

// etcdctl's getDelOp.
InputResult<etcdserverpb::DeleteRangeRequest> deleteRequestFromArgs(
    const FlagSet& f, const std::vector<std::string>& args) {
  const bool prefix = f.getBool("prefix");
  const bool fromKey = f.getBool("from-key");
  if (args.empty() || args.size() > 2) {
    return badArgsError(
        "del command needs one argument as key and an optional argument as range_end");
  }
  if (prefix && fromKey) {
    return badArgsError("`--prefix` and `--from-key` cannot be set at the same time, choose one");
  }
  etcdserverpb::DeleteRangeRequest request;
  auto* req = &request;
  std::string key = args[0];
  if (args.size() > 1) {
    if (prefix || fromKey) {
      return badArgsError(
          "too many arguments, only accept one argument when `--prefix` or `--from-key` is set.");
    }
    req->set_range_end(args[1]);
  }
  if (prefix) {
    if (key.empty()) {
      key = std::string(1, '\0');
      req->set_range_end(std::string(1, '\0'));
    } else {
      req->set_range_end(prefixRangeEnd(key));
    }
  }
  req->set_prev_kv(f.getBool("prev-kv"));
  if (fromKey) {
    if (key.empty()) key = std::string(1, '\0');
    req->set_range_end(std::string(1, '\0'));
  }
  req->set_key(key);
  return request;
}

namespace {

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

std::string_view goTrimSpace(std::string_view s) {
  std::size_t start = 0;
  while (start < s.size()) {
    std::size_t w = 0;
    if (!isGoSpace(decodeRune(s, start, &w))) break;
    start += w;
  }
  s.remove_prefix(start);
  // Trailing: find the last non-space rune by decoding forward.
  std::size_t end = 0;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t w = 0;
    const bool space = isGoSpace(decodeRune(s, i, &w));
    i += w;
    if (!space) end = i;
  }
  return s.substr(0, end);
}

std::expected<std::int64_t, std::string> goParseInt(std::string_view text, int base) {
  const std::string prefix = "strconv.ParseInt: parsing " + goQuote(text) + ": ";
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return std::unexpected(prefix + "invalid syntax");
  std::uint64_t value = 0;
  bool overflow = false;
  for (char c : s) {
    int d = hexDigit(c);
    if (d < 0 || d >= base) return std::unexpected(prefix + "invalid syntax");
    if (value > (std::numeric_limits<std::uint64_t>::max() - static_cast<std::uint64_t>(d)) /
                    static_cast<std::uint64_t>(base)) {
      overflow = true;
    } else {
      value = value * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(d);
    }
  }
  const std::uint64_t limit =
      negative ? std::uint64_t{1} << 63 : (std::uint64_t{1} << 63) - 1;  // |INT64_MIN|, INT64_MAX
  if (overflow || value > limit) return std::unexpected(prefix + "value out of range");
  if (negative) return static_cast<std::int64_t>(~value + 1);
  return static_cast<std::int64_t>(value);
}

InputResult<std::vector<std::string>> argify(std::string_view line) {
  // The regular expression "(?:[^"\\]|\\.)*"|'[^']*'|[^'"\s]\S*[^'"\s]? applied leftmost-first:
  // at each position the first alternative that matches wins; where none does, the scan moves
  // on by one byte (so an unterminated quote is skipped).
  std::vector<std::string> raw;
  const std::size_t n = line.size();
  for (std::size_t pos = 0; pos < n;) {
    const char c = line[pos];
    if (c == '"') {
      std::size_t j = pos + 1;
      bool closed = false;
      while (j < n) {
        if (line[j] == '\\') {
          if (j + 1 >= n) break;
          j += 2;
          continue;
        }
        if (line[j] == '"') {
          closed = true;
          break;
        }
        ++j;
      }
      if (closed) {
        raw.emplace_back(line.substr(pos, j + 1 - pos));
        pos = j + 1;
      } else {
        ++pos;
      }
      continue;
    }
    if (c == '\'') {
      const std::size_t close = line.find('\'', pos + 1);
      if (close != std::string_view::npos) {
        raw.emplace_back(line.substr(pos, close + 1 - pos));
        pos = close + 1;
      } else {
        ++pos;
      }
      continue;
    }
    if (isReSpace(c)) {
      ++pos;
      continue;
    }
    std::size_t j = pos + 1;
    while (j < n && !isReSpace(line[j])) ++j;
    raw.emplace_back(line.substr(pos, j - pos));
    pos = j;
  }

  std::vector<std::string> args;
  for (auto& token : raw) {
    if (token[0] == '\'') {
      args.push_back(token.substr(1, token.size() - 2));
    } else if (token[0] == '"') {
      Scanner scan(token);
      auto text = scan.quoted();
      if (!text) return invalidInput(text.error().message);
      args.push_back(std::move(*text));
    } else {
      args.push_back(std::move(token));
    }
  }
  return args;
}

InputResult<Compare> parseCompare(std::string_view line) {
  const std::string text(line);
  const auto paren = line.find('(');
  if (paren == std::string_view::npos) return invalidInput("malformed comparison: " + text);
  const std::string target(line.substr(0, paren));

  // fmt.Sscanf(rest, "%q) %s %q", &key, &op, &val): stops at the first mismatch; whatever was
  // scanned until then shows in the error.
  std::string key, op, val;
  int scanned = 0;
  {
    Scanner scan(line.substr(paren + 1));
    auto step = [&]() -> std::expected<void, ScanError> {
      auto k = scan.quoted();
      if (!k) return std::unexpected(k.error());
      key = std::move(*k);
      ++scanned;
      if (auto r = scan.literal(')'); !r) return r;
      if (auto r = scan.formatSpace(); !r) return r;
      auto o = scan.word();
      if (!o) return std::unexpected(o.error());
      op = std::move(*o);
      ++scanned;
      if (auto r = scan.formatSpace(); !r) return r;
      auto v = scan.quoted();
      if (!v) return std::unexpected(v.error());
      val = std::move(*v);
      ++scanned;
      return {};
    };
    (void)step();
  }
  if (scanned != 3) {
    return invalidInput("malformed comparison: " + text + "; got " + target + "(" + goQuote(key) +
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
    return invalidInput("malformed comparison: " + text + " (unknown target " + target + ")");
  }
  if (!number) return invalidInput("invalid txn compare request: " + text);
  auto result = compareResult(op);
  if (!result) {
    return invalidInput("invalid txn compare request: " + text + " (unknown operator " + op +
                        "; use =, !=, < or >)");
  }
  cmp.set_result(*result);
  return cmp;
}

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
