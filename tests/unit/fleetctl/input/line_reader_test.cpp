// Lines of the operator's input: from a stream, from a descriptor, and cut short by a wake-up.

#include "fleetctl/input/line_reader.hpp"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <sstream>
#include <thread>

namespace etcdagent::fleet {
namespace {

using Status = LineReader::Status;

class LineReaderOnADescriptor : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::pipe(pipe_), 0);
    wake_ = ::eventfd(0, EFD_CLOEXEC);
    ASSERT_GE(wake_, 0);
  }
  void TearDown() override {
    ::close(pipe_[0]);
    if (pipe_[1] >= 0) ::close(pipe_[1]);
    ::close(wake_);
  }
  void write(std::string_view text) const {
    ASSERT_EQ(::write(pipe_[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  }
  void closeWriter() {
    ::close(pipe_[1]);
    pipe_[1] = -1;
  }
  void wake() const {
    std::uint64_t one = 1;
    ASSERT_EQ(::write(wake_, &one, sizeof one), static_cast<ssize_t>(sizeof one));
  }
  int pipe_[2] = {-1, -1};
  int wake_ = -1;
};

TEST(LineReader, AStreamsLastLineWithoutNewlineIsTheEnd) {
  std::istringstream in("a\nb");
  LineReader lines(in, -1);
  std::string line;
  ASSERT_EQ(lines.next(line), Status::kLine);
  EXPECT_EQ(line, "a");
  EXPECT_EQ(lines.next(line), Status::kEof);
}

TEST_F(LineReaderOnADescriptor, LinesMayArriveInPieces) {
  LineReader lines(pipe_[0], wake_);
  std::string line;
  write("one\ntw");
  ASSERT_EQ(lines.next(line), Status::kLine);
  EXPECT_EQ(line, "one");
  write("o\n\n");
  ASSERT_EQ(lines.next(line), Status::kLine);
  EXPECT_EQ(line, "two");
  ASSERT_EQ(lines.next(line), Status::kLine);
  EXPECT_EQ(line, "");
  write("cut");
  closeWriter();
  EXPECT_EQ(lines.next(line), Status::kEof);  // bufio's ReadString: no '\n', no line
}

TEST_F(LineReaderOnADescriptor, AWakeUpEndsAWaitForInput) {
  LineReader lines(pipe_[0], wake_);
  std::thread waker([this] { wake(); });
  std::string line;
  EXPECT_EQ(lines.next(line), Status::kWoken);
  waker.join();
}

TEST_F(LineReaderOnADescriptor, LinesAlreadyReadComeBeforeAWakeUp) {
  LineReader lines(pipe_[0], wake_);
  write("a\nb\n");
  std::string line;
  ASSERT_EQ(lines.next(line), Status::kLine);  // reads both lines at once
  wake();
  ASSERT_EQ(lines.next(line), Status::kLine);
  EXPECT_EQ(line, "b");
  EXPECT_EQ(lines.next(line), Status::kWoken);
}

}  // namespace
}  // namespace etcdagent::fleet
