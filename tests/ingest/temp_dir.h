// A scratch folder for one importer test: files written into it by name, the folder removed
// when the test ends.
#ifndef TELLER_TESTS_INGEST_TEMP_DIR_H_
#define TELLER_TESTS_INGEST_TEMP_DIR_H_

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace teller::ingest {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ingest_test_XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // Writes `bytes` to the file `name` in the folder; returns its path.
  std::string Write(const std::string& name, const std::string& bytes) const {
    const std::string p = Path(name);
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  std::string Path(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace teller::ingest

#endif  // TELLER_TESTS_INGEST_TEMP_DIR_H_
