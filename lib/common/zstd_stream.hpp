#pragma once

// zstd for snapshot files ([snapshot] compress = "zstd" in agent.toml). A compressed snapshot,
// NAME.db.zst, is etcd's snapshot stream (the bbolt file and its sha256 trailer) in zstd frames
// with zstd's content checksum: what `zstd FILE` writes and `zstd -d` reads. Debian's libzstd.

#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "common/file_util.hpp"

namespace etcdagent {

// Where a stream's bytes go, chunk by chunk; a failure stops the stream.
using ByteSink = std::function<Result<void>(std::string_view)>;

// The zstd default: about as fast as the disk on this kind of machine, a bbolt file to ~1/3.
inline constexpr int kZstdLevel = 3;

// `head` starts with zstd's frame magic (28 b5 2f fd).
bool startsWithZstdFrame(std::string_view head);

// A snapshot file name that says it is compressed: "m1-20261204T020000Z.db.zst".
bool zstdName(std::string_view name);
// The name without its ".zst": NAME.db.zst -> NAME.db, NAME.bad.zst -> NAME.bad; another name
// as it is.
std::string_view uncompressedName(std::string_view name);

// Decompresses a stream fed in any chunking.
class ZstdDecoder {
 public:
  ZstdDecoder();
  ~ZstdDecoder();
  ZstdDecoder(ZstdDecoder&&) noexcept;
  ZstdDecoder& operator=(ZstdDecoder&&) noexcept;
  ZstdDecoder(const ZstdDecoder&) = delete;
  ZstdDecoder& operator=(const ZstdDecoder&) = delete;

  // Decompresses `in`, handing each decompressed chunk to `out`. Fails with zstd's words on bytes
  // that are not zstd or are damaged (its checksum), or with the sink's error.
  Result<void> feed(std::string_view in, const ByteSink& out);
  // Fails when the input so far stopped inside a frame (a truncated file), or was empty.
  [[nodiscard]] Result<void> finish() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Reads the file `path` in chunks of `chunk_size` bytes, handing each to `out`; `stop` cancels it
// (kCancelled).
Result<void> streamFile(const std::string& path, std::size_t chunk_size, const ByteSink& out,
                        std::stop_token stop = {});

// Compresses the file `from` at `level`, handing the compressed bytes to `out`; `stop` cancels it
// (kCancelled).
Result<void> compressFile(const std::string& from, int level, const ByteSink& out,
                          std::stop_token stop = {});

// Decompresses the file `from`, handing the decompressed bytes to `out`. Fails, naming `from`, on
// a damaged or truncated file.
Result<void> decompressFile(const std::string& from, const ByteSink& out,
                            std::stop_token stop = {});

// Decompresses the file `from` into a new file `to` (0600, fsynced; removed again on a failure).
Result<void> decompressFileTo(const std::string& from, const std::string& to,
                              std::stop_token stop = {});

// Decompresses the file `from` into a temporary file in `dir` that has no name (O_TMPFILE, or
// unlinked at once where the file system has no O_TMPFILE: a crash leaves nothing behind) and maps
// it. Fails, naming `from`, on a damaged or truncated file.
Result<MappedFile> inflateToTemp(const std::string& from, const std::string& dir);

}  // namespace etcdagent
