// Result types for everything that can fail on input or I/O. No exception crosses a
// library boundary: functions return Status or Result<T> with a message a user can act
// on (file, position, what was expected).
#ifndef TELLER_CORE_STATUS_H_
#define TELLER_CORE_STATUS_H_

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace teller {

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !message_.has_value(); }
  // The error text; empty for an ok status.
  const std::string& message() const {
    static const std::string kEmpty;
    return message_ ? *message_ : kEmpty;
  }

 private:
  explicit Status(std::string message) : message_(std::move(message)) {}
  std::optional<std::string> message_;
};

// A value or an error Status. Accessing the value of an error is a programming error.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<1>, std::move(value)) {}        // NOLINT: implicit
  Result(Status status) : v_(std::in_place_index<0>, std::move(status)) {  // NOLINT: implicit
    assert(!std::get<0>(v_).ok() && "Result built from an ok Status carries no value");
  }

  bool ok() const { return v_.index() == 1; }
  // The error; an ok Status when the Result holds a value.
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<0>(v_);
  }
  T& value() & {
    assert(ok());
    return std::get<1>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<1>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<1>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }

 private:
  std::variant<Status, T> v_;
};

}  // namespace teller

// Propagates an error Status from an expression returning Status.
#define TELLER_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::teller::Status teller_status_ = (expr);        \
    if (!teller_status_.ok()) return teller_status_; \
  } while (0)

#endif  // TELLER_CORE_STATUS_H_
