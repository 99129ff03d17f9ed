// Internal entry points of the Kineto / PyTorch-profiler Chrome-trace importer
// (docs/ingest-kineto.md). The public entry is teller::ingest::ImportKineto in
// include/teller/ingest/ingest.h; these exist for the fuzzer, the tests and the benchmark.
#ifndef TELLER_SRC_INGEST_KINETO_IMPORTER_H_
#define TELLER_SRC_INGEST_KINETO_IMPORTER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "teller/core/gunzip_stream.h"
#include "teller/core/gzip.h"
#include "teller/core/status.h"
#include "teller/core/trace.h"

namespace teller::ingest {

// A byte buffer followed by at least kPadding readable bytes, as simdjson requires
// (SIMDJSON_PADDING). Large buffers are mapped with transparent huge pages: on these VMs a
// 4 KiB page fault costs microseconds, and a 50 MB trace would otherwise pay 13k of them.
class PaddedBuffer {
 public:
  static constexpr size_t kPadding = 64;  // >= SIMDJSON_PADDING (checked in the .cc)

  PaddedBuffer() = default;
  ~PaddedBuffer();
  PaddedBuffer(PaddedBuffer&& other) noexcept;
  PaddedBuffer& operator=(PaddedBuffer&& other) noexcept;
  PaddedBuffer(const PaddedBuffer&) = delete;
  PaddedBuffer& operator=(const PaddedBuffer&) = delete;

  // Makes room for `capacity` bytes plus padding, keeping the first size() bytes.
  // Returns false when memory is exhausted.
  bool Reserve(size_t capacity);
  // Sets the logical size (<= capacity) and zeroes the padding after it.
  void Resize(size_t size);

  char* data() { return data_; }
  const char* data() const { return data_; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  std::string_view view() const { return {data_, size_}; }

 private:
  void Release();
  char* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;      // usable bytes, padding not included
  size_t mapped_bytes_ = 0;  // length of the mapping (0 when none)
};

// Reads `path` into `out`, gunzipping it when it starts with the gzip magic (any number
// of members, up to the gzip-bomb guard of core/gzip.h). A pipe or FIFO is read to its
// end. Errors name the file: "<file>: truncated gzip stream",
// "<file>: corrupt gzip data at byte N", "<file>: cannot open: <errno text>".
// `info` (optional) receives the gunzip figures (members 0 for a plain file).
Status ReadMaybeGzip(const std::string& path, PaddedBuffer& out, GunzipInfo* info = nullptr);

// Appends what `fd` yields to `out` until end of file or until `out` holds `until` bytes.
// `name` is used in error messages.
Status AppendFromFd(int fd, const std::string& name, PaddedBuffer& out, size_t until = SIZE_MAX);

// `raw` itself when it is not gzip, else its gunzipped content (with the guard), in `out`.
Status MaybeGunzip(PaddedBuffer&& raw, const std::string& name, PaddedBuffer& out,
                   GunzipInfo* info = nullptr);

// Gunzips (all members of) `in` into `out`, with the gzip-bomb guard of core/gzip.h.
// `name` is used in error messages.
Status GunzipInto(std::string_view in, const std::string& name, PaddedBuffer& out,
                  GunzipInfo* info = nullptr);

// Imports a Kineto trace held in memory: plain JSON or gzip bytes. `name` stands for the
// file path (process key, label, source, error messages). Used by the fuzzer.
Status ImportKinetoBytes(std::string_view bytes, const std::string& name, Trace& trace);

// The same from a buffer already read (a pipe's content), plain or gzip; consumes it.
Status ImportKinetoBuffer(PaddedBuffer&& raw, const std::string& name, Trace& trace);

// Imports from a buffer already holding the JSON text (the buffer is modified: window
// boundaries are overwritten temporarily, a byte order mark is blanked and a missing
// final `]` of the array form appended; see the .cc). `name` as above; `gzip_members`,
// the members of the file it was gunzipped from, only words an error message.
Status ImportKinetoJson(PaddedBuffer& json, const std::string& name, Trace& trace,
                        size_t gzip_members = 0);

// Imports the JSON text that `text` yields, reading it as the windows need it and
// dropping what was parsed (docs/ingest-kineto.md, "Streaming"): the same rows,
// counters and success as ImportKinetoJson on the whole text. Errors name the file and
// the byte of the text, but the public entries re-derive them with the whole text (so
// that every message reads as before); `size_estimate` (bytes of text, 0 when unknown)
// sizes the event columns; `gzip_members` as for ImportKinetoJson.
Status ImportKinetoStream(ByteSource& text, const std::string& name, Trace& trace,
                          size_t size_estimate, size_t gzip_members = 0);

// Bytes the streaming path asks its source for at a time (tests use a few, to put read
// boundaries everywhere); 0 restores the default.
void SetKinetoReadBytesForTesting(size_t bytes);

// Whether a .gz is gunzipped on a thread of its own when the process may use a second
// core (default true); tests switch it off to compare the two.
void SetKinetoGunzipThreadForTesting(bool on);

// The longest JSON document (bytes) handed to simdjson on this thread since the last call:
// what shows that the windows keep every parse below simdjson's 4 GiB limit.
size_t TakeKinetoLargestWindowForTesting();

// Window size of the chunked parse (bytes of JSON per simdjson document). Exposed for
// tests, which shrink it to exercise window boundaries on small files; 0 restores the
// default.
void SetKinetoWindowBytesForTesting(size_t bytes);

}  // namespace teller::ingest

#endif  // TELLER_SRC_INGEST_KINETO_IMPORTER_H_
