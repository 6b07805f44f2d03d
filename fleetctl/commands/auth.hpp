#pragma once

// The auth, user and role command families (auth.cpp, user.cpp, role.cpp) and their pure parts,
// which the unit tests drive from strings.

#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include "etcd/authpb/auth.pb.h"
#include "fleetctl/cli/command.hpp"

namespace etcdagent::fleet {

Command userCommand();       // user.cpp
Command roleCommand();       // role.cpp
Command authSetupCommand();  // auth_setup.cpp: `auth setup`, etcd-fleet's own

// etcdctl's permission types: read, write, readwrite, in any case.
Result<authpb::Permission::Type> parsePermissionType(std::string_view text);

struct KeyRange {
  std::string key;
  std::string range_end;  // "" = the single key; "\0" = open ended
};

// The key range of `role grant-permission` / `revoke-permission` from "<key> [endkey]" and
// --prefix / --from-key, as etcdctl 3.4 computes it. An empty key stands for the whole key
// space's start ("\0"); with --prefix or --from-key it is every key.
Result<KeyRange> permissionRange(const std::vector<std::string>& keyArgs, bool prefix,
                                 bool fromKey);

// Where `user add` gets the password from.
enum class PasswordSource {
  kGiven,   // "name:password" or --new-user-password
  kStdin,   // --interactive=false: the first word on standard input
  kPrompt,  // asked twice on the terminal
  kNone,    // --no-password
};

struct UserAddPlan {
  std::string name;
  std::string password;  // with kGiven
  PasswordSource source = PasswordSource::kPrompt;
};

// etcdctl 3.4's rules: --no-password wins, then --new-user-password (the argument is the whole
// name), then "name:password" split at the first colon, then stdin or the terminal.
Result<UserAddPlan> planUserAdd(std::string_view arg, std::string_view newUserPassword,
                                bool noPassword, bool interactive);

// Go's fmt.Scanf("%s", &s) on standard input, which etcdctl uses for --interactive=false: the
// first word, after spaces; empty when the first line is empty. Reads no further than the word.
std::string scanWord(std::istream& in);

}  // namespace etcdagent::fleet
