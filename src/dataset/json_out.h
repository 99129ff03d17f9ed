// Internal to src/dataset: the fast output path of `teller dataset build`. The paper
// preset writes about 5.6 M nodes (a GB of JSON) in one pass, so the JSON is built in
// large std::string buffers (core/json_writer.h), strings that repeat (node names, layer
// and type names) are escaped once and copied, and files are written with write(2) in
// big pieces.
#ifndef TELLER_SRC_DATASET_JSON_OUT_H_
#define TELLER_SRC_DATASET_JSON_OUT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "teller/core/status.h"

namespace teller::dataset::internal {

// An output file filled from a buffer that is written out when it grows past a
// threshold, so that memory stays bounded however large the file gets. The bytes go to a
// temporary beside the file (TempPathFor), created by the first write, and the temporary
// takes the file's name at Close(): a build that fails or stops half-way leaves no
// partial file, and a sink destroyed without Close() removes its temporary. No
// descriptor is held between writes (a setting has many requests' files open at once).
class FileSink {
 public:
  explicit FileSink(std::string path) : path_(std::move(path)) {}
  FileSink(FileSink&& other) noexcept { *this = std::move(other); }
  FileSink& operator=(FileSink&& other) noexcept;
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;
  ~FileSink() { Abandon(); }

  std::string& buffer() { return buffer_; }
  // Appends `data`; a large piece (a shared step record, written once per request of the
  // batch) goes to the file directly after what is buffered, instead of being copied.
  Status Append(std::string_view data) {
    if (data.size() < kDirectBytes) {
      buffer_ += data;
      return Status::Ok();
    }
    return Write(data);
  }
  // Writes the buffer when it holds more than `threshold` bytes.
  Status MaybeFlush(size_t threshold = size_t{8} << 20) {
    return buffer_.size() > threshold ? Flush() : Status::Ok();
  }
  Status Flush() { return Write({}); }
  // Writes what is buffered, gives the temporary the file's name (creating the file even
  // when empty) and frees the buffer. On an error the temporary is removed.
  Status Close();
  const std::string& path() const { return path_; }

 private:
  // Removes the temporary, if any.
  void Abandon();
  static constexpr size_t kDirectBytes = size_t{256} << 10;
  // Writes the buffer, then `extra`, in one open of the file.
  Status Write(std::string_view extra);
  std::string path_;
  std::string tmp_;  // the temporary being written, "" before the first write and after Close
  std::string buffer_;
};

}  // namespace teller::dataset::internal

#endif  // TELLER_SRC_DATASET_JSON_OUT_H_
