// bench reef's configuration file (see reef_config.hpp).

#include "bench/reef/reef_config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "app/config.hpp"

namespace resident::bench {

namespace {

using resident::detail::yaml_where;

[[noreturn]] void fail(const std::string& origin, const YAML::Mark& mark,
                       const std::string& message) {
  throw std::invalid_argument(yaml_where(origin, mark) + ": " + message);
}

/// Reads one knob's value into the settings; throws through fail() naming the key.
using reader = std::function<void(reef_settings&, const YAML::Node&, const std::string& key,
                                  const std::string& origin)>;

const std::string& scalar(const YAML::Node& value, const std::string& key,
                          const std::string& origin) {
  if (value.IsNull()) fail(origin, value.Mark(), key + ": has no value");
  if (!value.IsScalar()) fail(origin, value.Mark(), key + ": must be a single value, not a list");
  return value.Scalar();
}

template <class T>
reader whole(T reef_settings::*field) {
  return [field](reef_settings& s, const YAML::Node& value, const std::string& key,
                 const std::string& origin) {
    const std::string& text = scalar(value, key, origin);
    T parsed{};
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
    if (ec != std::errc{} || end != text.data() + text.size()) {
      std::ostringstream must;
      must << key << ": expected a whole number";
      if (std::is_unsigned_v<T>) must << " >= 0";
      if (ec == std::errc::result_out_of_range) must << " up to " << std::numeric_limits<T>::max();
      must << ", got '" << text << "'";
      fail(origin, value.Mark(), must.str());
    }
    s.*field = parsed;
  };
}

reader number(double reef_settings::*field) {
  return [field](reef_settings& s, const YAML::Node& value, const std::string& key,
                 const std::string& origin) {
    const std::string& text = scalar(value, key, origin);
    char* end = nullptr;
    errno = 0;
    const double parsed = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE) {
      fail(origin, value.Mark(), key + ": expected a number, got '" + text + "'");
    }
    s.*field = parsed;
  };
}

reader flag(bool reef_settings::*field) {
  return [field](reef_settings& s, const YAML::Node& value, const std::string& key,
                 const std::string& origin) {
    const std::string& text = scalar(value, key, origin);
    bool parsed = false;
    if (!YAML::convert<bool>::decode(value, parsed)) {
      fail(origin, value.Mark(), key + ": expected true or false (or on/off), got '" + text + "'");
    }
    s.*field = parsed;
  };
}

reader text(std::string reef_settings::*field) {
  return [field](reef_settings& s, const YAML::Node& value, const std::string& key,
                 const std::string& origin) { s.*field = scalar(value, key, origin); };
}

/// A list of names: a YAML sequence, or one comma-separated string.
reader names(std::vector<std::string> reef_settings::*field) {
  return [field](reef_settings& s, const YAML::Node& value, const std::string& key,
                 const std::string& origin) {
    std::vector<std::string> out;
    if (value.IsSequence()) {
      for (const auto& item : value) out.push_back(scalar(item, key, origin));
    } else {
      std::string item;
      for (const char c : scalar(value, key, origin) + ",") {
        if (c == ',') {
          if (!item.empty()) out.push_back(item);
          item.clear();
        } else if (c != ' ') {
          item += c;
        }
      }
    }
    s.*field = std::move(out);
  };
}

/// Every knob, in the default file's order.
const std::vector<std::pair<std::string, reader>>& knobs() {
  using S = reef_settings;
  static const std::vector<std::pair<std::string, reader>> table = {
      {"policies", names(&S::policies)},
      {"arrival", text(&S::arrival)},
      {"rate_hz", number(&S::rate_hz)},
      {"samples", whole(&S::samples)},
      {"warmup", whole(&S::warmup)},
      {"disturbance_ns", whole(&S::disturbance_ns)},
      {"seed", whole(&S::seed)},
      {"realtime", flag(&S::realtime)},
      {"progress", flag(&S::progress)},
      {"be_model", text(&S::be_model)},
      {"be_clients", whole(&S::be_clients)},
      {"be_window", whole(&S::be_window)},
      {"be_window_sm", whole(&S::be_window_sm)},
      {"be_window_split", whole(&S::be_window_split)},
      {"be_rt_sm_blocks", whole(&S::be_rt_sm_blocks)},
      {"be_bounded_grid", whole(&S::be_bounded_grid)},
      {"be_bounded_grid_counter", flag(&S::be_bounded_grid_counter)},
      {"be_checkpoint", flag(&S::be_checkpoint)},
      {"be_checkpoint_min_steps", whole(&S::be_checkpoint_min_steps)},
      {"be_trace", flag(&S::be_trace)},
      {"rt_batch", whole(&S::rt_batch)},
      {"poll_ns", whole(&S::poll_ns)},
      {"rt_raise", text(&S::rt_raise)},
      {"rt_raise_lead_us", number(&S::rt_raise_lead_us)},
      {"rt_pdl", flag(&S::rt_pdl)},
      {"rt_out_copy", text(&S::rt_out_copy)},
      {"rt_l2_persist", flag(&S::rt_l2_persist)},
      {"rt_arena", flag(&S::rt_arena)},
      {"rt_split_body", flag(&S::rt_split_body)},
      {"rt_spread", flag(&S::rt_spread)},
      {"rt_placement", flag(&S::rt_placement)},
      {"split_sms", whole(&S::split_sms)},
      {"split_be_rest", flag(&S::split_be_rest)},
      {"pad_tolerance", number(&S::pad_tolerance)},
      {"pad_place_wait_us", number(&S::pad_place_wait_us)},
  };
  return table;
}

/// Edit distance, for "did you mean".
std::size_t distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string unknown_key(const std::string& key) {
  std::string message = "unknown key '" + key + "'";
  std::string nearest;
  std::size_t best = 4;  // suggest only close names
  for (const auto& name : reef_config_keys()) {
    const std::size_t d = distance(key, name);
    if (d < best) {
      best = d;
      nearest = name;
    }
  }
  if (!nearest.empty()) message += "; did you mean '" + nearest + "'?";
  return message + " (bench/configs/reef.yaml lists every key)";
}

}  // namespace

const std::vector<std::string>& reef_config_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out;
    for (const auto& [key, read] : knobs()) out.push_back(key);
    return out;
  }();
  return keys;
}

reef_settings parse_reef_config(std::string_view yaml, const std::string& origin,
                                reef_settings base) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    fail(origin, e.mark, "not valid YAML: " + e.msg);
  }
  if (root.IsNull()) return base;  // an empty file changes nothing
  if (!root.IsMap()) fail(origin, root.Mark(), "expected a map of knob names to values");
  std::map<std::string, YAML::Mark> set;  // key -> where its value is
  for (const auto& entry : root) {
    if (!entry.first.IsScalar()) {
      fail(origin, entry.first.Mark(), "a key must be a plain name, not a list or map");
    }
    const std::string key = entry.first.Scalar();
    const auto knob =
        std::find_if(knobs().begin(), knobs().end(), [&](const auto& k) { return k.first == key; });
    if (knob == knobs().end()) fail(origin, entry.first.Mark(), unknown_key(key));
    if (set.count(key) != 0) fail(origin, entry.first.Mark(), "key '" + key + "' is given twice");
    if (entry.second.IsNull()) fail(origin, entry.first.Mark(), key + ": has no value");
    knob->second(base, entry.second, key, origin);
    set.emplace(key, entry.second.Mark());
  }
  if (const auto p = base.problem()) {
    const auto at = set.find(p->key);
    fail(origin, at == set.end() ? YAML::Mark::null_mark() : at->second, p->message);
  }
  return base;
}

reef_settings load_reef_config(const std::string& path, reef_settings base) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("cannot open the configuration file " + path);
  std::stringstream text;
  text << in.rdbuf();
  return parse_reef_config(text.str(), path, std::move(base));
}

}  // namespace resident::bench
