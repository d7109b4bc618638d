// io::device_link without a GPU: its configuration is checked, field by field, before anything
// touches a device.

#include <gtest/gtest.h>

#include <string>

#include "resident/app/error.hpp"
#include "resident/io/device_link.hpp"

TEST(device_link, refuses_a_bad_configuration_by_field) {
  using resident::io::device_link;
  const auto message = [](device_link::config c) {
    try {
      const device_link link(c);
    } catch (const resident::composition_error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message({0, 4, 0, 0}).find("bytes must be 1 to"), std::string::npos);
  EXPECT_NE(message({8, 1, 0, 0}).find("depth must be 2 to"), std::string::npos);
  EXPECT_NE(message({8, 5000, 0, 0}).find("depth must be 2 to"), std::string::npos);
  EXPECT_NE(message({8, 4, -1, 0}).find("producer_device -1 does not exist"), std::string::npos);
}
