// Snapshot files: the daemon's whole journaled state as of one journal record, written beside the
// journal so that a start loads it and replays only the records after it (docs/design/daemon.md,
// "Snapshots").
//
// A file is DIR/snapshot-<seq, 20 digits>.snap: one header line
//   gpupool-snapshot <format> <seq> <body bytes> <CRC-32C of the body, hex>\n
// then the body. It is written to a .tmp name, fdatasync'ed, renamed into place and the directory
// fsync'ed, so a crash leaves either no file of that name or the whole of it; a .tmp left by a
// crash is never read (and is removed by the next write).
//
// Thread-safety: the functions keep no state; a write may run on a worker thread while the
// journal is used on another, as long as one thread writes snapshots at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpupool {

struct Snapshot {
  int64_t seq = 0;   // the state after records 1..seq; 0: no snapshot (the empty state)
  int format = 0;    // the body's format version (the daemon's kSnapshotFormat when written)
  std::string body;
};

// The file name of the snapshot at `seq` in `dir`.
std::string SnapshotPath(const std::string& dir, int64_t seq);
// The seqs of the snapshot files in `dir` (by name only, not read), ascending.
std::vector<int64_t> ListSnapshots(const std::string& dir);

// Writes the snapshot durably (see above). Errors (a full disk, no permission) leave no file of
// the final name and remove the partial .tmp.
Status WriteSnapshotFile(const std::string& dir, const Snapshot& s);
// Reads and checks one file: kFailedPrecondition naming the file and the fault if its header,
// length or checksum is wrong.
Result<Snapshot> ReadSnapshotFile(const std::string& path);
// Removes the snapshot files older than `seq`, and .tmp files a crash left of them; best effort.
void RemoveSnapshotsBefore(const std::string& dir, int64_t seq);

}  // namespace gpupool
