#include "common/zstd_stream.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

namespace etcdagent {
namespace {

Error zstdError(std::size_t code) {
  return Error{Errc::kInvalidArgument, std::string("zstd: ") + ZSTD_getErrorName(code)};
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using UniqueFile = std::unique_ptr<std::FILE, FileCloser>;

Result<UniqueFile> openForReading(const std::string& path) {
  UniqueFile file(std::fopen(path.c_str(), "rbe"));
  if (!file) {
    const int err = errno;
    return fail(err == ENOENT ? Errc::kNotFound : Errc::kIo,
                "cannot open " + path + ": " + errnoText(err));
  }
  return file;
}

Result<void> writeAll(int fd, std::string_view bytes, const std::string& what) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(Errc::kIo, "cannot write " + what + ": " + errnoText(errno));
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

// An unnamed file in `dir`.
Result<UniqueFd> anonymousFileIn(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  if (fd.valid()) return fd;
  // Older kernels' overlayfs and some network file systems have no O_TMPFILE.
  std::string name = dir + "/.inflate-XXXXXX";
  fd = UniqueFd(::mkostemp(name.data(), O_CLOEXEC));
  if (!fd.valid()) {
    return fail(Errc::kIo, "cannot create a temporary file in " + dir + ": " + errnoText(errno));
  }
  ::unlink(name.c_str());
  return fd;
}

}  // namespace

Result<void> streamFile(const std::string& path, std::size_t chunk_size, const ByteSink& out,
                        std::stop_token stop) {
  auto file = openForReading(path);
  if (!file) return fail(file.error());
  std::vector<char> buffer(chunk_size);
  for (;;) {
    if (stop.stop_requested()) return fail(Errc::kCancelled, "stopped while reading " + path);
    const std::size_t n = std::fread(buffer.data(), 1, buffer.size(), file->get());
    if (n > 0) {
      if (auto r = out({buffer.data(), n}); !r) return r;
    }
    if (n < buffer.size()) {
      if (std::ferror(file->get()) != 0) {
        return fail(Errc::kIo, "cannot read " + path + ": " + errnoText(errno));
      }
      return {};
    }
  }
}

bool startsWithZstdFrame(std::string_view head) {
  return head.size() >= 4 && static_cast<unsigned char>(head[0]) == 0x28 &&
         static_cast<unsigned char>(head[1]) == 0xb5 &&
         static_cast<unsigned char>(head[2]) == 0x2f && static_cast<unsigned char>(head[3]) == 0xfd;
}

bool zstdName(std::string_view name) {
  return name.ends_with(".zst");
}

std::string_view uncompressedName(std::string_view name) {
  return zstdName(name) ? name.substr(0, name.size() - std::string_view(".zst").size()) : name;
}

struct ZstdDecoder::State {
  // The buffer first: if it cannot be had, no context is left to free.
  std::vector<char> out = std::vector<char>(ZSTD_DStreamOutSize());
  ZSTD_DCtx* ctx = ZSTD_createDCtx();
  bool fed = false;
  std::size_t pending = 0;  // ZSTD_decompressStream's last hint: 0 at the end of a frame
  State() {
    if (ctx == nullptr) throw std::bad_alloc();
  }
  ~State() { ZSTD_freeDCtx(ctx); }
  State(const State&) = delete;
  State& operator=(const State&) = delete;
};

ZstdDecoder::ZstdDecoder() : state_(std::make_unique<State>()) {}
ZstdDecoder::~ZstdDecoder() = default;
ZstdDecoder::ZstdDecoder(ZstdDecoder&&) noexcept = default;
ZstdDecoder& ZstdDecoder::operator=(ZstdDecoder&&) noexcept = default;

Result<void> ZstdDecoder::feed(std::string_view in, const ByteSink& out) {
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  if (!in.empty()) state_->fed = true;
  // Until every input byte is taken and nothing is left to flush (a full output buffer may hold
  // more).
  for (;;) {
    ZSTD_outBuffer output{state_->out.data(), state_->out.size(), 0};
    const std::size_t r = ZSTD_decompressStream(state_->ctx, &output, &input);
    if (ZSTD_isError(r) != 0U) return fail(zstdError(r));
    state_->pending = r;
    if (output.pos > 0) {
      if (auto w = out({state_->out.data(), output.pos}); !w) return w;
    }
    if (input.pos == input.size && output.pos < output.size) return {};
  }
}

Result<void> ZstdDecoder::finish() const {
  if (!state_->fed) return fail(Errc::kInvalidArgument, "zstd: no data");
  if (state_->pending != 0) {
    return fail(Errc::kInvalidArgument, "zstd: the data ends inside a frame (truncated)");
  }
  return {};
}

Result<void> compressFile(const std::string& from, int level, const ByteSink& out,
                          std::stop_token stop) {
  std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> ctx(ZSTD_createCCtx(), &ZSTD_freeCCtx);
  if (!ctx) throw std::bad_alloc();
  for (auto [param, value] :
       {std::pair{ZSTD_c_compressionLevel, level}, std::pair{ZSTD_c_checksumFlag, 1}}) {
    if (auto r = ZSTD_CCtx_setParameter(ctx.get(), param, value); ZSTD_isError(r) != 0U) {
      return fail(zstdError(r));
    }
  }
  std::vector<char> buffer(ZSTD_CStreamOutSize());
  // Compresses `in` (all of it), then with `end` closes the frame.
  auto pump = [&](std::string_view in, ZSTD_EndDirective mode) -> Result<void> {
    ZSTD_inBuffer input{in.data(), in.size(), 0};
    for (;;) {
      ZSTD_outBuffer output{buffer.data(), buffer.size(), 0};
      const std::size_t left = ZSTD_compressStream2(ctx.get(), &output, &input, mode);
      if (ZSTD_isError(left) != 0U) return fail(zstdError(left));
      if (output.pos > 0) {
        if (auto w = out({buffer.data(), output.pos}); !w) return w;
      }
      const bool done = mode == ZSTD_e_end ? left == 0 : input.pos == input.size;
      if (done) return {};
    }
  };
  if (auto r = streamFile(
          from, ZSTD_CStreamInSize(),
          [&](std::string_view chunk) { return pump(chunk, ZSTD_e_continue); }, stop);
      !r) {
    return r;
  }
  return pump({}, ZSTD_e_end);
}

Result<void> decompressFile(const std::string& from, const ByteSink& out, std::stop_token stop) {
  ZstdDecoder decoder;
  auto read = streamFile(
      from, ZSTD_DStreamInSize(), [&](std::string_view chunk) { return decoder.feed(chunk, out); },
      std::move(stop));
  if (read) read = decoder.finish();
  if (!read && read.error().code == Errc::kInvalidArgument) {
    return fail(Errc::kInvalidArgument, from + ": cannot decompress it: " + read.error().message);
  }
  return read;
}

Result<void> decompressFileTo(const std::string& from, const std::string& to,
                              std::stop_token stop) {
  UniqueFd fd(::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd.valid()) return fail(Errc::kIo, "cannot create " + to + ": " + errnoText(errno));
  auto done = decompressFile(
      from, [&](std::string_view plain) { return writeAll(fd.get(), plain, to); }, std::move(stop));
  if (done && ::fsync(fd.get()) != 0) {
    done = fail(Errc::kIo, "cannot fsync " + to + ": " + errnoText(errno));
  }
  if (!done) ::unlink(to.c_str());
  return done;
}

Result<MappedFile> inflateToTemp(const std::string& from, const std::string& dir) {
  auto fd = anonymousFileIn(dir);
  if (!fd) return fail(fd.error());
  const std::string what = "the decompressed copy of " + from + " in " + dir;
  auto done = decompressFile(
      from, [&](std::string_view plain) { return writeAll(fd->get(), plain, what); });
  if (!done) return fail(done.error());
  return MappedFile::of(*fd, what);
}

}  // namespace etcdagent
