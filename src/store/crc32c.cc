#include "store/crc32c.h"

#include <array>

namespace gpupool {
namespace {

// Slicing-by-8: table[0][b] is the reflected remainder of byte b shifted through eight steps of
// the polynomial; table[k][b] that of byte b followed by k zero bytes, so eight bytes are
// folded in with eight lookups and no dependency between them.
using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables MakeTables() {
  constexpr uint32_t kReflectedPolynomial = 0x82F63B78;
  Tables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t r = b;
    for (int step = 0; step < 8; ++step) r = (r >> 1) ^ ((r & 1) ? kReflectedPolynomial : 0);
    t[0][b] = r;
  }
  for (int k = 1; k < 8; ++k) {
    for (uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFF];
  }
  return t;
}

constexpr Tables kTables = MakeTables();

uint32_t Byte(std::string_view data, size_t i) { return static_cast<uint8_t>(data[i]); }

}  // namespace

uint32_t Crc32c(std::string_view data, uint32_t crc) {
  uint32_t r = ~crc;
  size_t i = 0;
  for (; i + 8 <= data.size(); i += 8) {
    const uint32_t lo = r ^ (Byte(data, i) | Byte(data, i + 1) << 8 | Byte(data, i + 2) << 16 | Byte(data, i + 3) << 24);
    r = kTables[7][lo & 0xFF] ^ kTables[6][(lo >> 8) & 0xFF] ^ kTables[5][(lo >> 16) & 0xFF] ^ kTables[4][lo >> 24] ^
        kTables[3][Byte(data, i + 4)] ^ kTables[2][Byte(data, i + 5)] ^ kTables[1][Byte(data, i + 6)] ^
        kTables[0][Byte(data, i + 7)];
  }
  for (; i < data.size(); ++i) r = kTables[0][(r ^ Byte(data, i)) & 0xFF] ^ (r >> 8);
  return ~r;
}

}  // namespace gpupool
