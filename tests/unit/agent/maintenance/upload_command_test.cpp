// [snapshot] upload_command: split like a shell splits words, placeholders checked and filled in,
// the program found in PATH.

#include "agent/maintenance/upload_command.hpp"

#include <gtest/gtest.h>

#include "common/file_util.hpp"
#include "tests/mocks/temp_dir.hpp"

namespace etcdagent::agent {
namespace {

using Words = std::vector<std::string>;

Words wordsOf(std::string_view text) {
  auto parsed = parseUploadCommand(text);
  EXPECT_TRUE(parsed) << text << ": " << parsed.error().message;
  return parsed ? parsed->words : Words{};
}

std::string errorOf(std::string_view text) {
  auto parsed = parseUploadCommand(text);
  EXPECT_FALSE(parsed) << text;
  return parsed ? "" : parsed.error().message;
}

TEST(UploadCommand, SplitsWordsAsAShellWould) {
  EXPECT_EQ(wordsOf("rclone copyto {file} remote:etcd/{name}"),
            (Words{"rclone", "copyto", "{file}", "remote:etcd/{name}"}));
  EXPECT_EQ(wordsOf("  cp\t{file}   '/mnt/my backups/'  "),
            (Words{"cp", "{file}", "/mnt/my backups/"}));
  EXPECT_EQ(wordsOf(R"(sh -c 'cp "$0" /b' {file})"),
            (Words{"sh", "-c", R"(cp "$0" /b)", "{file}"}));
  EXPECT_EQ(wordsOf(R"(up "a \"b\" \c" x\ y {file} '')"),
            (Words{"up", R"(a "b" \c)", "x y", "{file}", ""}));
}

TEST(UploadCommand, RefusesWhatCannotRun) {
  EXPECT_NE(errorOf("").find("no program"), std::string::npos);
  EXPECT_NE(errorOf("   ").find("no program"), std::string::npos);
  EXPECT_NE(errorOf("cp {file} 'x").find("unterminated single quote"), std::string::npos);
  EXPECT_NE(errorOf("cp {file} \"x").find("unterminated double quote"), std::string::npos);
  EXPECT_NE(errorOf("cp {file} x\\").find("backslash"), std::string::npos);
  EXPECT_NE(errorOf("cp {file} /b/{date}").find("\"{date}\""), std::string::npos);
  EXPECT_NE(errorOf("cp {file} /b/{name").find("\"{name\""), std::string::npos);
  EXPECT_NE(errorOf("cp {name} /b").find("put {file}"), std::string::npos);
  EXPECT_NE(errorOf("{file} x").find("program itself"), std::string::npos);
}

TEST(UploadCommand, FillsInThePlaceholders) {
  v1::SnapshotRecord r;
  r.set_name("m1-20261204T020000Z.db");
  r.set_member_name("m1");
  r.set_cluster_token("prod");
  r.set_sha256("abc123");
  auto command = parseUploadCommand("rclone copyto {file} s3:b/{cluster}/{member}/{name}.{sha256}");
  ASSERT_TRUE(command);
  EXPECT_EQ(expandUploadCommand(*command, "/var/lib/etcd-agent/snapshots/prod/" + r.name(), r),
            (Words{"rclone", "copyto", "/var/lib/etcd-agent/snapshots/prod/m1-20261204T020000Z.db",
                   "s3:b/prod/m1/m1-20261204T020000Z.db.abc123"}));
}

TEST(UploadCommand, FindsTheProgramInThePathGiven) {
  testing::UnitTempDir tmp;
  const std::string bin = tmp.path() + "/bin";
  ASSERT_TRUE(createPrivateDirectories(bin));
  ASSERT_TRUE(writeFileAtomic(bin + "/uploader", "#!/bin/sh\n", 0755));
  ASSERT_TRUE(writeFileAtomic(bin + "/not-executable", "#!/bin/sh\n", 0644));
  EXPECT_EQ(resolveProgram("uploader", "/nonexistent:" + bin).value_or(""), bin + "/uploader");
  EXPECT_EQ(resolveProgram(bin + "/uploader", "").value_or(""), bin + "/uploader");
  auto missing = resolveProgram("not-executable", bin);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("no program \"not-executable\" in PATH (" + bin + ")"),
            std::string::npos)
      << missing.error().message;
  EXPECT_FALSE(resolveProgram("bin/uploader", bin));  // relative paths depend on the cwd
  EXPECT_TRUE(resolveProgram("sh", ""));              // systemd's default PATH
}

}  // namespace
}  // namespace etcdagent::agent
