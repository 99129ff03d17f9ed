// CRC-32C (Castagnoli), the checksum of raw trace chunks. Uses the SSE4.2 crc32
// instruction when the CPU has it (the collector checksums every chunk it writes, on
// its flusher thread), else a table-driven fallback with the same result.
#ifndef TELLER_CORE_CRC32C_H_
#define TELLER_CORE_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace teller {

// Extends `crc` (0 for a new checksum) over `size` bytes at `data`.
uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0);

}  // namespace teller

#endif  // TELLER_CORE_CRC32C_H_
