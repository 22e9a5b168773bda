#include "store/high_water_mark.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "store/crc32c.h"

namespace gpupool {
namespace {

constexpr char kMagic[8] = {'G', 'P', 'H', 'W', 'M', '1', 0, 0};

struct Slot {
  int64_t seq = 0;
  uint64_t generation = 0;
};

void PutU64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return v;
}

// magic (8) | seq (8) | generation (8) | CRC-32C of the 24 bytes before it (4) | zero (4)
void Encode(const Slot& s, char* out) {
  std::memset(out, 0, HighWaterMark::kSlotBytes);
  std::memcpy(out, kMagic, 8);
  PutU64(out + 8, static_cast<uint64_t>(s.seq));
  PutU64(out + 16, s.generation);
  const uint32_t crc = Crc32c(std::string_view(out, 24));
  for (int i = 0; i < 4; ++i) out[24 + i] = static_cast<char>(crc >> (8 * i));
}

// The slot, or why it is not one.
Result<Slot> Decode(const char* in, ssize_t available) {
  if (available < HighWaterMark::kSlotBytes) return FailedPrecondition("cut short");
  if (std::memcmp(in, kMagic, 8) != 0) return FailedPrecondition("no magic");
  uint32_t crc = 0;
  for (int i = 0; i < 4; ++i) crc |= uint32_t{static_cast<uint8_t>(in[24 + i])} << (8 * i);
  if (crc != Crc32c(std::string_view(in, 24))) return FailedPrecondition("checksum mismatch");
  const Slot s{static_cast<int64_t>(GetU64(in + 8)), GetU64(in + 16)};
  if (s.seq < 0) return FailedPrecondition("negative seq");
  return s;
}

Error Failed(const std::string& what, const std::string& path) {
  return Error{ErrorCode::kUnavailable, "cannot " + what + " " + path + ": " + std::strerror(errno)};
}

Status WriteAll(int fd, const char* data, size_t n, off_t offset) {
  while (n > 0) {
    const ssize_t w = ::pwrite(fd, data, n, offset);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return Error{ErrorCode::kUnavailable, std::strerror(w < 0 ? errno : EIO)};
    data += w, n -= static_cast<size_t>(w), offset += w;
  }
  return Ok();
}

struct Found {
  int newest = 0;  // index of the newest valid slot
  Slot slot;
};

// The newest valid slot of an open file; the error names both slots' faults.
Result<Found> Newest(int fd, const std::string& path) {
  char buf[HighWaterMark::kFileBytes];
  ssize_t got = 0;
  while (got < HighWaterMark::kFileBytes) {
    const ssize_t n = ::pread(fd, buf + got, sizeof(buf) - got, got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Failed("read", path);
    if (n == 0) break;
    got += n;
  }
  std::optional<Found> best;
  std::string why;
  for (int i = 0; i < 2; ++i) {
    Result<Slot> s = Decode(buf + i * HighWaterMark::kSlotStride, got - i * HighWaterMark::kSlotStride);
    if (!s.ok()) {
      why += std::string(why.empty() ? "" : ", ") + "slot " + std::to_string(i) + ": " + s.error().message;
    } else if (!best || s->generation > best->slot.generation) {
      best = Found{i, *s};
    }
  }
  if (!best) {
    return FailedPrecondition("the journal's high-water mark " + path + " is damaged (" + std::to_string(got) +
                              " bytes; " + why + "), so it cannot tell whether acknowledged records are missing");
  }
  return *best;
}

}  // namespace

Result<std::optional<int64_t>> HighWaterMark::Read(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) return std::optional<int64_t>();
  if (fd < 0) return Failed("open", path);
  Result<Found> found = Newest(fd, path);
  ::close(fd);
  if (!found.ok()) return found.error();
  return std::optional<int64_t>(found->slot.seq);
}

Result<std::unique_ptr<HighWaterMark>> HighWaterMark::Open(const std::string& path, int64_t initial) {
  if (!std::filesystem::exists(path)) GP_RETURN_IF_ERROR(Reset(path, initial));
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return Failed("open", path);
  Result<Found> found = Newest(fd, path);
  if (!found.ok()) {
    ::close(fd);
    return found.error();
  }
  return std::unique_ptr<HighWaterMark>(
      new HighWaterMark(path, fd, found->newest, found->slot.generation, found->slot.seq));
}

Status HighWaterMark::Reset(const std::string& path, int64_t seq) {
  const std::string tmp = path + ".tmp";
  (void)::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Failed("create", tmp);
  char buf[kFileBytes] = {};
  Encode({seq, 1}, buf);
  Encode({seq, 2}, buf + kSlotStride);
  Status written = WriteAll(fd, buf, sizeof(buf), 0);
  if (written.ok() && ::fsync(fd) != 0) written = Failed("fsync", tmp);
  ::close(fd);
  if (!written.ok()) return Error{ErrorCode::kUnavailable, "cannot write " + tmp + ": " + written.error().message};
  if (::rename(tmp.c_str(), path.c_str()) != 0) return Failed("rename " + tmp + " to", path);
  // The rename is durable once the directory is.
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return Failed("open", dir);
  const int synced = ::fsync(dfd);
  ::close(dfd);
  if (synced != 0) return Failed("fsync", dir);
  return Ok();
}

HighWaterMark::~HighWaterMark() { ::close(fd_); }

Status HighWaterMark::Write(int64_t seq) {
  const int slot = 1 - newest_slot_;
  char buf[kSlotBytes];
  Encode({seq, generation_ + 1}, buf);
  if (Status s = WriteAll(fd_, buf, sizeof(buf), slot * kSlotStride); !s.ok()) {
    return Error{ErrorCode::kUnavailable, "cannot write " + path_ + ": " + s.error().message};
  }
  if (::fdatasync(fd_) != 0) return Failed("fdatasync", path_);
  newest_slot_ = slot;
  ++generation_;
  seq_ = seq;
  return Ok();
}

}  // namespace gpupool
