#include "teller/dataset/trace_file.h"

#include <cstdlib>
#include <string_view>

#include "simdjson.h"
#include "teller/core/file_util.h"
#include "teller/core/gzip.h"
#include "teller/core/json_reader.h"

static_assert(teller::dataset::kTraceTextPadding >= simdjson::SIMDJSON_PADDING);

namespace teller::dataset {
namespace {

// Gunzip's output in a malloc'ed buffer, one per thread, kept from file to file. Gunzip
// grows its buffer by at least 64 MiB at a time (sized for whole Kineto traces): a
// std::string would zero all of it, and a fresh buffer per file page-faults anew; both
// made `dataset stats` recounting 300 trace files of a few MB each many times slower.
// realloc keeps what was written and touches no page it does not hand out.
class ReusedOutput : public GunzipOutput {
 public:
  ReusedOutput() = default;
  ReusedOutput(const ReusedOutput&) = delete;
  ReusedOutput& operator=(const ReusedOutput&) = delete;
  ~ReusedOutput() override { std::free(data_); }
  char* Reserve(size_t capacity, size_t /*keep: realloc keeps everything*/) override {
    if (capacity > capacity_) {
      void* grown = std::realloc(data_, capacity);
      if (grown == nullptr) return nullptr;
      data_ = static_cast<char*>(grown);
      capacity_ = capacity;
    }
    return data_;
  }
  void SetSize(size_t size) override { size_ = size; }
  std::string_view view() const { return {data_, size_}; }

 private:
  char* data_ = nullptr;
  size_t capacity_ = 0;
  size_t size_ = 0;
};

}  // namespace

std::string TraceFileIn(const std::string& request_dir) {
  for (const std::string_view name : {kTraceFileGz, kTraceFile}) {
    std::string path = request_dir + "/" + std::string(name);
    if (IsRegularFile(path)) return path;
  }
  return "";
}

Result<std::string> ReadTraceText(const std::string& path) {
  Result<simdjson::padded_string> bytes = LoadJsonFile(path);
  if (!bytes.ok()) return bytes.status();
  const std::string_view in(bytes->data(), bytes->size());
  const bool gz_name = path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  if (!IsGzip(in) && !gz_name) {
    std::string text;
    text.reserve(in.size() + kTraceTextPadding);
    text.assign(in);
    return text;
  }
  GunzipOptions options;
  TELLER_RETURN_IF_ERROR(GuardedGunzipOptions(in.size(), &options));
  thread_local ReusedOutput out;
  TELLER_RETURN_IF_ERROR(Gunzip(in, path, options, out));
  std::string text;
  text.reserve(out.view().size() + kTraceTextPadding);
  text.assign(out.view());
  return text;
}

}  // namespace teller::dataset
