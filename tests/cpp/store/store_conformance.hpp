// The store conformance suite's fixture, shared so that every store's test file can
// instantiate the same suite (store_conformance_test.cpp holds the tests) with its own
// factories: INSTANTIATE_TEST_SUITE_P(Name, StoreConformance, ValuesIn(...)).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <stdexcept>

#include "cubestream/store.hpp"

namespace cubestream {

struct StoreFactory {
  std::string name;
  // Makes a store holding `values`.
  std::function<std::shared_ptr<Store>(const std::vector<std::pair<std::string, std::string>>&)> make;
  // Whether the store can list (plain HTTP cannot: its list_dir must be Error(kUnsupported)).
  bool lists = true;
};

// Thrown by a factory whose server cannot run on this machine (e.g. moto is not installed):
// the conformance tests skip with its message instead of failing.
struct StoreUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class StoreConformance : public ::testing::TestWithParam<StoreFactory> {};

// Makes the parameter's store in a test body, skipping the test when it is unavailable.
#define CS_MAKE_STORE(var, ...)                              \
  std::shared_ptr<Store> var;                                \
  try {                                                      \
    var = GetParam().make(__VA_ARGS__);                      \
  } catch (const StoreUnavailable& e) {                      \
    GTEST_SKIP() << e.what();                                \
  }

}  // namespace cubestream
