#include "store/snapshot_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "store/crc32c.h"

namespace gpupool {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kMagic = "gpupool-snapshot";
constexpr std::string_view kPrefix = "snapshot-";
constexpr std::string_view kSuffix = ".snap";

Error Io(const std::string& what, const std::string& path) {
  return Error{ErrorCode::kUnavailable, what + " " + path + ": " + std::strerror(errno)};
}

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Io("cannot write", path);
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Ok();
}

Status SyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Io("cannot open", dir);
  const int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? Ok() : Status(Io("cannot fsync", dir));
}

// The seq in a file name "snapshot-<digits>.snap"; nullopt for any other name.
std::optional<int64_t> SeqOf(const std::string& name) {
  if (name.size() <= kPrefix.size() + kSuffix.size() || !name.starts_with(kPrefix) || !name.ends_with(kSuffix)) {
    return std::nullopt;
  }
  const char* first = name.data() + kPrefix.size();
  const char* last = name.data() + name.size() - kSuffix.size();
  int64_t seq = 0;
  const auto [end, ec] = std::from_chars(first, last, seq);
  if (ec != std::errc() || end != last || seq <= 0) return std::nullopt;
  return seq;
}

std::string Hex(uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof(buf), "%08x", v);
  return buf;
}

}  // namespace

std::string SnapshotPath(const std::string& dir, int64_t seq) {
  char digits[21];
  std::snprintf(digits, sizeof(digits), "%020lld", static_cast<long long>(seq));
  return (fs::path(dir) / (std::string(kPrefix) + digits + std::string(kSuffix))).string();
}

std::vector<int64_t> ListSnapshots(const std::string& dir) {
  std::vector<int64_t> seqs;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (std::optional<int64_t> seq = SeqOf(e.path().filename().string())) seqs.push_back(*seq);
  }
  std::sort(seqs.begin(), seqs.end());
  return seqs;
}

Status WriteSnapshotFile(const std::string& dir, const Snapshot& s) {
  const std::string path = SnapshotPath(dir, s.seq);
  const std::string tmp = path + ".tmp";
  const std::string header = std::string(kMagic) + " " + std::to_string(s.format) + " " + std::to_string(s.seq) + " " +
                             std::to_string(s.body.size()) + " " + Hex(Crc32c(s.body)) + "\n";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Io("cannot create", tmp);
  Status st = WriteAll(fd, header, tmp);
  if (st.ok()) st = WriteAll(fd, s.body, tmp);
  if (st.ok() && ::fdatasync(fd) != 0) st = Io("cannot fdatasync", tmp);
  if (::close(fd) != 0 && st.ok()) st = Io("cannot close", tmp);
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) st = Io("cannot rename", tmp);
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  return SyncDir(dir);
}

Result<Snapshot> ReadSnapshotFile(const std::string& path) {
  const auto damaged = [&](const std::string& what) {
    return FailedPrecondition("the snapshot " + path + " is damaged: " + what);
  };
  std::ifstream in(path, std::ios::binary);
  if (!in) return damaged(std::string("cannot open it: ") + std::strerror(errno));
  std::string header;
  if (!std::getline(in, header) || header.size() > 200) return damaged("no header line");
  std::istringstream fields(header);
  std::string magic, crc_hex;
  Snapshot s;
  uint64_t bytes = 0;
  if (!(fields >> magic >> s.format >> s.seq >> bytes >> crc_hex) || magic != kMagic || s.seq <= 0) {
    return damaged("its header '" + header.substr(0, 80) + "' is not a snapshot header");
  }
  if (std::optional<int64_t> named = SeqOf(fs::path(path).filename().string()); named && *named != s.seq) {
    return damaged("its header says record " + std::to_string(s.seq) + ", its name another");
  }
  s.body.resize(bytes);
  in.read(s.body.data(), static_cast<std::streamsize>(bytes));
  if (static_cast<uint64_t>(in.gcount()) != bytes) {
    return damaged("it is truncated (" + std::to_string(in.gcount()) + " of " + std::to_string(bytes) + " bytes)");
  }
  if (in.peek() != std::char_traits<char>::eof()) return damaged("it has bytes past its stated length");
  if (Hex(Crc32c(s.body)) != crc_hex) return damaged("its body fails its checksum");
  return s;
}

void RemoveSnapshotsBefore(const std::string& dir, int64_t seq) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.ends_with(".tmp")) name.resize(name.size() - 4);  // left by a crash during its write
    const std::optional<int64_t> at = SeqOf(name);
    if (at && *at < seq) fs::remove(e.path(), ec);
  }
}

}  // namespace gpupool
