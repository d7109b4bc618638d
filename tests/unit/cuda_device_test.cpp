// request_eager_module_loading only touches the environment, so it is testable without a GPU.
// (The variable matters to the driver only before the first CUDA call; these tests make none.)

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "resident/cuda/device.hpp"

namespace {

// Restores CUDA_MODULE_LOADING as the test found it.
class module_loading_env : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* v = std::getenv("CUDA_MODULE_LOADING")) _saved = v;
  }
  void TearDown() override {
    if (_saved) {
      ::setenv("CUDA_MODULE_LOADING", _saved->c_str(), 1);
    } else {
      ::unsetenv("CUDA_MODULE_LOADING");
    }
  }

 private:
  std::optional<std::string> _saved;
};

TEST_F(module_loading_env, eager_request_sets_an_unset_mode) {
  ASSERT_EQ(::unsetenv("CUDA_MODULE_LOADING"), 0);
  EXPECT_TRUE(resident::request_eager_module_loading());
  const char* v = std::getenv("CUDA_MODULE_LOADING");
  ASSERT_NE(v, nullptr);
  EXPECT_STREQ(v, "EAGER");
}

TEST_F(module_loading_env, eager_request_keeps_a_mode_the_user_chose) {
  ASSERT_EQ(::setenv("CUDA_MODULE_LOADING", "LAZY", 1), 0);
  EXPECT_TRUE(resident::request_eager_module_loading());
  EXPECT_STREQ(std::getenv("CUDA_MODULE_LOADING"), "LAZY");
}

}  // namespace
