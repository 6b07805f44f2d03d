#include "agent/maintenance/upload_command.hpp"

#include <unistd.h>

#include <array>
#include <optional>

namespace etcdagent::agent {
namespace {

constexpr std::array<std::string_view, 5> kPlaceholders = {"file", "name", "member", "cluster",
                                                           "sha256"};

bool blank(char c) {
  return c == ' ' || c == '\t' || c == '\n';
}

// The placeholders of one word must all be known.
Result<void> checkPlaceholders(std::string_view word, bool& names_file) {
  for (std::size_t open = word.find('{'); open != std::string_view::npos;
       open = word.find('{', open + 1)) {
    const auto close = word.find('}', open);
    const std::string_view inside = close == std::string_view::npos
                                        ? word.substr(open)
                                        : word.substr(open + 1, close - open - 1);
    bool known = false;
    for (auto p : kPlaceholders) known = known || (close != std::string_view::npos && inside == p);
    if (!known) {
      return fail(
          Errc::kInvalidArgument,
          "unknown placeholder \"" +
              std::string(close == std::string_view::npos ? inside
                                                          : word.substr(open, close - open + 1)) +
              "\" (known: {file}, {name}, {member}, {cluster}, {sha256})");
    }
    names_file = names_file || inside == "file";
  }
  return {};
}

}  // namespace

Result<UploadCommand> parseUploadCommand(std::string_view text) {
  UploadCommand out{.text = std::string(text), .words = {}};
  std::optional<std::string>
      word;  // the word being read; engaged once a character (or "") began it
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote == '\'') {
      if (c == '\'')
        quote = 0;
      else
        word->push_back(c);
      continue;
    }
    if (c == '\\') {
      if (i + 1 == text.size()) return fail(Errc::kInvalidArgument, "a backslash ends the command");
      const char next = text[++i];
      // Inside "...", a backslash escapes only what the shell lets it escape.
      if (quote == '"' && next != '"' && next != '\\' && next != '$' && next != '`') {
        if (!word) word.emplace();
        word->push_back('\\');
      }
      if (!word) word.emplace();
      word->push_back(next);
      continue;
    }
    if (quote == '"') {
      if (c == '"')
        quote = 0;
      else
        word->push_back(c);
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      if (!word) word.emplace();
      continue;
    }
    if (blank(c)) {
      if (word) out.words.push_back(std::move(*std::exchange(word, std::nullopt)));
      continue;
    }
    if (!word) word.emplace();
    word->push_back(c);
  }
  if (quote != 0) {
    return fail(Errc::kInvalidArgument,
                std::string("unterminated ") + (quote == '"' ? "double" : "single") + " quote");
  }
  if (word) out.words.push_back(std::move(*word));
  if (out.words.empty() || out.words.front().empty()) {
    return fail(Errc::kInvalidArgument, "no program to run");
  }
  bool names_file = false;
  for (const auto& w : out.words) {
    if (auto r = checkPlaceholders(w, names_file); !r) return fail(r.error());
  }
  if (out.words.front().find('{') != std::string::npos) {
    return fail(Errc::kInvalidArgument, "the program itself cannot be a placeholder");
  }
  if (!names_file) {
    return fail(Errc::kInvalidArgument,
                "the command never names the snapshot: put {file} where the file goes");
  }
  return out;
}

Result<std::string> resolveProgram(const std::string& program, std::string_view search_path) {
  if (program.find('/') != std::string::npos) {
    if (!program.starts_with('/')) {
      return fail(
          Errc::kInvalidArgument,
          "\"" + program + "\": give the program's absolute path, or a name to find in PATH");
    }
    if (::access(program.c_str(), X_OK) != 0) {
      return fail(Errc::kNotFound, program + " is not an executable file");
    }
    return program;
  }
  const std::string_view dirs = search_path.empty()
                                    ? "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
                                    : search_path;
  std::size_t begin = 0;
  while (begin <= dirs.size()) {
    const auto end = std::min(dirs.find(':', begin), dirs.size());
    const std::string dir(dirs.substr(begin, end - begin));
    if (dir.starts_with('/')) {
      const std::string candidate = dir + "/" + program;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    begin = end + 1;
  }
  return fail(Errc::kNotFound, "no program \"" + program + "\" in PATH (" + std::string(dirs) +
                                   "); install it or give its absolute path");
}

std::vector<std::string> expandUploadCommand(const UploadCommand& command, const std::string& path,
                                             const v1::SnapshotRecord& record) {
  std::vector<std::string> argv;
  argv.reserve(command.words.size());
  for (const auto& w : command.words) {
    std::string out;
    for (std::size_t i = 0; i < w.size(); ++i) {
      const auto close = w[i] == '{' ? w.find('}', i) : std::string::npos;
      if (close == std::string::npos) {
        out.push_back(w[i]);
        continue;
      }
      const std::string_view key = std::string_view(w).substr(i + 1, close - i - 1);
      if (key == "file")
        out += path;
      else if (key == "name")
        out += record.name();
      else if (key == "member")
        out += record.member_name();
      else if (key == "cluster")
        out += record.cluster_token();
      else if (key == "sha256")
        out += record.sha256();
      else
        out.append(w, i, close - i + 1);  // parseUploadCommand lets none through
      i = close;
    }
    argv.push_back(std::move(out));
  }
  return argv;
}

}  // namespace etcdagent::agent
