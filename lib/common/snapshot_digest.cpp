#include "common/snapshot_digest.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <array>

#include "common/encoding.hpp"

namespace etcdagent {

struct Sha256::State {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  State() { EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr); }
  ~State() { EVP_MD_CTX_free(ctx); }
  State(const State&) = delete;
  State& operator=(const State&) = delete;
};

Sha256::Sha256() : state_(std::make_unique<State>()) {}
Sha256::~Sha256() = default;

void Sha256::update(std::string_view bytes) {
  EVP_DigestUpdate(state_->ctx, bytes.data(), bytes.size());
}

std::string Sha256::peek() const {
  EVP_MD_CTX* copy = EVP_MD_CTX_new();
  EVP_MD_CTX_copy_ex(copy, state_->ctx);
  std::array<unsigned char, EVP_MAX_MD_SIZE> sum{};
  unsigned int len = 0;
  EVP_DigestFinal_ex(copy, sum.data(), &len);
  EVP_MD_CTX_free(copy);
  return {reinterpret_cast<const char*>(sum.data()), len};
}

std::string Sha256::finish() {
  std::array<unsigned char, EVP_MAX_MD_SIZE> sum{};
  unsigned int len = 0;
  EVP_DigestFinal_ex(state_->ctx, sum.data(), &len);
  return {reinterpret_cast<const char*>(sum.data()), len};
}

void SnapshotDigest::update(std::string_view chunk) {
  size_ += chunk.size();
  // Everything but the last 32 bytes seen so far is data: hash it, keep the rest as the tail.
  if (tail_.size() + chunk.size() <= kSnapshotHashSize) {
    tail_.append(chunk);
    return;
  }
  const std::size_t total = tail_.size() + chunk.size();
  const std::size_t hash_now = total - kSnapshotHashSize;
  const std::size_t from_tail = std::min(hash_now, tail_.size());
  hash_.update(std::string_view(tail_).substr(0, from_tail));
  hash_.update(chunk.substr(0, hash_now - from_tail));
  std::string rest = tail_.substr(from_tail);
  rest.append(chunk.substr(hash_now - from_tail));
  tail_ = std::move(rest);
}

Result<void> SnapshotDigest::finish() {
  // The data's digest now; the tail then completes the whole stream's.
  const std::string data_sum = hash_.peek();
  hash_.update(tail_);
  file_sha256_hex_ = hexEncode(hash_.finish());
  if (size_ < kSnapshotHashSize) {
    return fail(Errc::kInternal, "the snapshot is too short (" + std::to_string(size_) +
                                     " bytes) to end with its sha256 checksum");
  }
  if (data_sum != tail_) {
    return fail(Errc::kInternal, "the snapshot's sha256 checksum does not match its " +
                                     std::to_string(size_ - kSnapshotHashSize) +
                                     " bytes of data (corrupted)");
  }
  return {};
}

Result<void> verifySnapshotBytes(std::string_view bytes) {
  SnapshotDigest d;
  d.update(bytes);
  return d.finish();
}

std::string sha256(std::string_view bytes) {
  Sha256 sha;
  sha.update(bytes);
  return sha.finish();
}

}  // namespace etcdagent
