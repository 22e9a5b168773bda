// HighWaterMark: a small file beside the journal holding the seq of the last record the journal
// acknowledged. It is kept apart from the journal's own files so that a deleted or truncated WAL
// cannot pass as a clean, shorter journal: a journal that ends before the mark has lost
// acknowledged records (docs/design/daemon.md, "Journal integrity").
//
// Layout: two 32-byte slots at offsets 0 and 512 (two disk sectors). A slot holds a magic, the
// seq, a generation number and the CRC-32C of those. Each write goes to the slot that does not
// hold the newest generation, by pwrite + fdatasync of a file whose size never changes, so a
// write torn by a crash leaves the other slot, one write older, intact.
//
// Invariants:
//  1. After Write(s) returns Ok, Read returns s, or a later value, even if the slot being written
//     next is torn.
//  2. Read takes the valid slot of the highest generation, never the highest seq: Reset may move
//     the mark down (recovery), and an older slot must not bring the old value back.
//
// Thread-safety: none; one writer (the journal) per file.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/result.h"

namespace gpupool {

class HighWaterMark {
 public:
  static constexpr int64_t kSlotBytes = 32;
  static constexpr int64_t kSlotStride = 512;  // slot i at offset i * kSlotStride
  static constexpr int64_t kFileBytes = kSlotStride + kSlotBytes;

  // The mark in PATH; nullopt if there is no such file. An error (kFailedPrecondition) if the
  // file exists but neither slot is valid, naming the file and what is wrong with each slot.
  static Result<std::optional<int64_t>> Read(const std::string& path);

  // Opens PATH for writes; a missing file is created holding `initial` (as Reset does).
  // REQUIRES: the file, if it exists, is readable (Read returned a value).
  static Result<std::unique_ptr<HighWaterMark>> Open(const std::string& path, int64_t initial);

  // Replaces PATH by a new file whose two slots hold `seq`: written to PATH.tmp, fsynced, renamed,
  // and the directory fsynced. Used to create the file and by recovery.
  static Status Reset(const std::string& path, int64_t seq);

  ~HighWaterMark();
  HighWaterMark(const HighWaterMark&) = delete;
  HighWaterMark& operator=(const HighWaterMark&) = delete;

  // Durable when it returns Ok (invariant 1).
  Status Write(int64_t seq);
  int64_t seq() const { return seq_; }
  const std::string& path() const { return path_; }

 private:
  HighWaterMark(std::string path, int fd, int newest_slot, uint64_t generation, int64_t seq)
      : path_(std::move(path)), fd_(fd), newest_slot_(newest_slot), generation_(generation), seq_(seq) {}

  std::string path_;
  int fd_;
  int newest_slot_;      // the slot holding `generation_`
  uint64_t generation_;  // of the newest slot
  int64_t seq_;          // the value of the newest slot
};

}  // namespace gpupool
