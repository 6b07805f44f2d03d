#include "common/snapshot_intake.hpp"

namespace etcdagent {

SnapshotIntake::SnapshotIntake(bool compressed, std::uint64_t announced_size)
    : announced_(announced_size) {
  if (compressed) decoder_.emplace();
}

Result<void> SnapshotIntake::take(std::string_view plain, const ByteSink& out) {
  if (digest_.size() + plain.size() > announced_) {
    return fail(Errc::kInvalidArgument,
                "it is longer than the " + std::to_string(announced_) + " bytes its record gives");
  }
  digest_.update(plain);
  return out ? out(plain) : Result<void>{};
}

Result<void> SnapshotIntake::update(std::string_view stored, const ByteSink& plain) {
  if (!decoder_) return take(stored, plain);
  return decoder_->feed(stored, [&](std::string_view chunk) { return take(chunk, plain); });
}

Result<void> SnapshotIntake::finish() {
  if (decoder_) {
    if (auto r = decoder_->finish(); !r) return r;
  }
  if (digest_.size() != announced_) {
    return fail(Errc::kInvalidArgument, "it ended after " + std::to_string(digest_.size()) +
                                            " of the " + std::to_string(announced_) +
                                            " bytes its record gives");
  }
  return digest_.finish();
}

}  // namespace etcdagent
