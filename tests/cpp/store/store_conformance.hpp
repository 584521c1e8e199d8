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

#include "cubestream/store.hpp"

namespace cubestream {

struct StoreFactory {
  std::string name;
  // Makes a store holding `values`.
  std::function<std::shared_ptr<Store>(const std::vector<std::pair<std::string, std::string>>&)> make;
  // Whether the store can list (plain HTTP cannot: its list_dir must be Error(kUnsupported)).
  bool lists = true;
};

class StoreConformance : public ::testing::TestWithParam<StoreFactory> {};

}  // namespace cubestream
