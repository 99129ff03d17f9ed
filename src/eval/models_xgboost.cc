// Gradient-boosted trees through XGBoost's C API (include/teller/eval/models.h), when
// Teller is built against Debian's libxgboost-dev (TELLER_HAVE_XGBOOST).
#include <cmath>
#include <string>
#include <vector>

#include "teller/eval/models.h"

#ifdef TELLER_HAVE_XGBOOST
#include <xgboost/c_api.h>
#endif

namespace teller::eval {

#ifdef TELLER_HAVE_XGBOOST

namespace {

Status XgbError(const char* call) {
  return Status::Error(std::string("XGBoost: ") + call + " failed: " + XGBGetLastError());
}

// XGBoost's DMatrix from rows (float, no missing values).
Result<DMatrixHandle> ToDMatrix(const Matrix& x) {
  std::vector<float> data(x.v.begin(), x.v.end());
  DMatrixHandle h = nullptr;
  if (XGDMatrixCreateFromMat(data.data(), x.rows, x.cols, NAN, &h) != 0)
    return XgbError("XGDMatrixCreateFromMat");
  return h;
}

}  // namespace

struct XgboostModel::Impl {
  BoosterHandle booster = nullptr;
  ~Impl() {
    if (booster != nullptr) XGBoosterFree(booster);
  }
};

XgboostModel::XgboostModel() : impl_(std::make_unique<Impl>()) {}
XgboostModel::~XgboostModel() = default;
bool XgboostModel::Available() { return true; }

Status XgboostModel::Fit(const Matrix& x, const std::vector<int>& y, int classes, int rounds,
                         uint64_t seed) {
  if (x.rows == 0 || y.size() != x.rows)
    return Status::Error("XGBoost: rows and labels differ or are empty");
  if (classes < 2) return Status::Error("XGBoost: needs two classes at least");
  classes_ = classes;
  auto train = ToDMatrix(x);
  if (!train.ok()) return train.status();
  DMatrixHandle dtrain = train.value();
  std::vector<float> labels(y.begin(), y.end());
  Status status = Status::Ok();
  if (XGDMatrixSetFloatInfo(dtrain, "label", labels.data(), labels.size()) != 0) {
    status = XgbError("XGDMatrixSetFloatInfo");
  }
  if (impl_->booster != nullptr) {
    XGBoosterFree(impl_->booster);
    impl_->booster = nullptr;
  }
  if (status.ok() && XGBoosterCreate(&dtrain, 1, &impl_->booster) != 0)
    status = XgbError("XGBoosterCreate");
  const std::string seed_text = std::to_string(seed), classes_text = std::to_string(classes);
  // XGBoost's defaults otherwise (depth 6, eta 0.3); one thread: results do not depend on
  // scheduling, and the machines have few cores.
  const std::vector<std::pair<const char*, std::string>> params = {
      {"objective", classes == 2 ? "binary:logistic" : "multi:softprob"},
      {"seed", seed_text},
      {"nthread", "1"},
      {"verbosity", "0"},
      {"max_depth", "6"},
      {"eta", "0.3"}};
  for (const auto& [key, value] : params) {
    if (status.ok() && XGBoosterSetParam(impl_->booster, key, value.c_str()) != 0)
      status = XgbError("XGBoosterSetParam");
  }
  if (status.ok() && classes > 2 &&
      XGBoosterSetParam(impl_->booster, "num_class", classes_text.c_str()) != 0) {
    status = XgbError("XGBoosterSetParam(num_class)");
  }
  for (int i = 0; status.ok() && i < rounds; ++i) {
    if (XGBoosterUpdateOneIter(impl_->booster, i, dtrain) != 0)
      status = XgbError("XGBoosterUpdateOneIter");
  }
  XGDMatrixFree(dtrain);
  return status;
}

Result<Matrix> XgboostModel::Proba(const Matrix& x) const {
  if (impl_->booster == nullptr) return Status::Error("XGBoost: the model is not fitted");
  auto test = ToDMatrix(x);
  if (!test.ok()) return test.status();
  bst_ulong len = 0;
  const float* result = nullptr;
  const int rc = XGBoosterPredict(impl_->booster, test.value(), 0, 0, 0, &len, &result);
  if (rc != 0) {
    XGDMatrixFree(test.value());
    return XgbError("XGBoosterPredict");
  }
  Matrix out(x.rows, static_cast<size_t>(classes_));
  if (classes_ == 2 && len == x.rows) {
    for (size_t i = 0; i < x.rows; ++i) {
      out.at(i, 1) = result[i];
      out.at(i, 0) = 1 - result[i];
    }
  } else if (len == x.rows * static_cast<size_t>(classes_)) {
    for (size_t i = 0; i < out.v.size(); ++i) out.v[i] = result[i];
  } else {
    XGDMatrixFree(test.value());
    return Status::Error("XGBoost: " + std::to_string(len) + " predictions for " +
                         std::to_string(x.rows) + " rows");
  }
  XGDMatrixFree(test.value());
  return out;
}

#else  // !TELLER_HAVE_XGBOOST

struct XgboostModel::Impl {};
XgboostModel::XgboostModel() : impl_(std::make_unique<Impl>()) {}
XgboostModel::~XgboostModel() = default;
bool XgboostModel::Available() { return false; }
Status XgboostModel::Fit(const Matrix&, const std::vector<int>&, int, int, uint64_t) {
  return Status::Error(
      "XGBoost: this build of Teller has no XGBoost (apt-get install libxgboost-dev xgboost, then "
      "re-run cmake)");
}
Result<Matrix> XgboostModel::Proba(const Matrix&) const {
  return Status::Error("XGBoost: this build of Teller has no XGBoost");
}

#endif

}  // namespace teller::eval
