// CRC-32C (Castagnoli, polynomial 0x1EDC6F41, reflected), the checksum of journal records and of
// the high-water mark's slots (docs/design/daemon.md, "Journal integrity"). It detects every
// error burst of up to 32 bits, so any one damaged byte, and misses random damage with
// probability 2^-32. Software, one table lookup per byte: a journal record is a few hundred bytes.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gpupool {

// The CRC of `data` continued from `crc` (the CRC of what came before it; 0 for none), so that
// Crc32c(b, Crc32c(a)) == Crc32c(a + b).
uint32_t Crc32c(std::string_view data, uint32_t crc = 0);

}  // namespace gpupool
