// DurableFile: NAME appears only whole; the .part never outlives a failure or an abandoned write.

#include "common/durable_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

namespace etcdagent {
namespace {

namespace fs = std::filesystem;

class DurableFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/durable-file-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  [[nodiscard]] std::string file(const std::string& name) const { return dir_ + "/" + name; }
  static std::string contents(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  static unsigned mode(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    return st.st_mode & 0777;
  }

  std::string dir_;
};

TEST_F(DurableFileTest, CommitReplacesTheFileWithTheWholeContentInItsMode) {
  std::ofstream(file("f")) << "old";
  auto f = DurableFile::create(file("f"), 0640);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->partPath(), file("f.part"));
  ASSERT_TRUE(f->write("new "));
  ASSERT_TRUE(f->write("content"));
  EXPECT_EQ(contents(file("f")), "old");  // untouched until the commit
  ASSERT_TRUE(f->commit());
  EXPECT_FALSE(f->open());
  EXPECT_EQ(contents(file("f")), "new content");
  EXPECT_EQ(mode(file("f")), 0640u);
  EXPECT_FALSE(fs::exists(file("f.part")));
}

TEST_F(DurableFileTest, TheModeHoldsOverAStalePartAndTheUmask) {
  std::ofstream(file("f.part")) << std::string(10000, 'x');
  ::chmod(file("f.part").c_str(), 0666);
  const mode_t old_umask = ::umask(0077);
  auto f = DurableFile::create(file("f"), 0644);
  ::umask(old_umask);
  ASSERT_TRUE(f);
  ASSERT_TRUE(f->write("short"));
  ASSERT_TRUE(f->commit());
  EXPECT_EQ(contents(file("f")), "short");
  EXPECT_EQ(mode(file("f")), 0644u);
}

TEST_F(DurableFileTest, AbortAndDestructionRemoveThePartAndKeepTheOldFile) {
  std::ofstream(file("f")) << "old";
  {
    auto f = DurableFile::create(file("f"), 0600);
    ASSERT_TRUE(f);
    ASSERT_TRUE(f->write("half"));
    EXPECT_TRUE(fs::exists(file("f.part")));
  }
  EXPECT_FALSE(fs::exists(file("f.part")));
  EXPECT_EQ(contents(file("f")), "old");

  auto g = DurableFile::create(file("f"), 0600);
  ASSERT_TRUE(g);
  g->abort();
  g->abort();  // idempotent
  EXPECT_FALSE(fs::exists(file("f.part")));
  EXPECT_FALSE(g->commit());
  EXPECT_EQ(contents(file("f")), "old");
}

TEST_F(DurableFileTest, AMovedFileIsOwnedByItsNewObjectOnly) {
  auto f = DurableFile::create(file("f"), 0600);
  ASSERT_TRUE(f);
  DurableFile moved = std::move(*f);
  ASSERT_TRUE(moved.write("data"));
  ASSERT_TRUE(moved.commit());
  EXPECT_EQ(contents(file("f")), "data");
}

TEST_F(DurableFileTest, FailuresNameTheFileAndTheReason) {
  auto missing = DurableFile::create(file("no-dir/f"), 0600);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message,
            "cannot create " + file("no-dir/f.part") + ": No such file or directory");

  fs::create_directory(file("d"));  // a directory cannot be renamed over
  auto f = DurableFile::create(file("d"), 0600);
  ASSERT_TRUE(f);
  ASSERT_TRUE(f->write("x"));
  auto r = f->commit();
  ASSERT_FALSE(r);
  EXPECT_EQ(
      r.error().message.rfind("cannot rename " + file("d.part") + " to " + file("d") + ": ", 0), 0u)
      << r.error().message;
  EXPECT_FALSE(fs::exists(file("d.part")));
  EXPECT_TRUE(fs::is_directory(file("d")));
}

TEST_F(DurableFileTest, ACallerMayWordTheFailuresItself) {
  auto wording = [](DurableFile::Step step, const std::string& part, const std::string&, int err) {
    return Error{Errc::kIo, std::string(step == DurableFile::Step::kCreate ? "open" : "other") +
                                " " + part + " errno " + std::to_string(err)};
  };
  auto f = DurableFile::create(file("no-dir/f"), 0600, wording);
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().message,
            "open " + file("no-dir/f.part") + " errno " + std::to_string(ENOENT));
}

TEST_F(DurableFileTest, WriteFileAtomicIsBuiltOnIt) {
  ASSERT_TRUE(writeFileAtomic(file("state.json"), "{}", 0600));
  EXPECT_EQ(contents(file("state.json")), "{}");
  EXPECT_EQ(mode(file("state.json")), 0600u);
  EXPECT_FALSE(fs::exists(file("state.json.part")));
  EXPECT_FALSE(writeFileAtomic(file("no-dir/x"), "{}"));
  EXPECT_FALSE(fs::exists(file("no-dir")));
}

}  // namespace
}  // namespace etcdagent
