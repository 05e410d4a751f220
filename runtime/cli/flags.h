// A small command-line flag parser for `flexgraph <command>`: each command declares its flags
// (name, help, default); `--name=value` and `--name value` are accepted, booleans also as `--name`
// and `--noname`. Unknown flags and missing values are errors naming the flag. Positional
// arguments are collected in order; everything after `--` is passed through untouched.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fg::cli {

class FlagSet {
 public:
  explicit FlagSet(std::string command, std::string summary)
      : command_(std::move(command)), summary_(std::move(summary)) {}

  void AddString(const std::string& name, const std::string& def, const std::string& help);
  void AddBool(const std::string& name, bool def, const std::string& help);
  void AddPositional(const std::string& name, const std::string& help);

  // Parses argv (without the program and command names).
  absl::Status Parse(const std::vector<std::string>& args);

  bool IsSet(const std::string& name) const;
  std::string Get(const std::string& name) const;
  bool GetBool(const std::string& name) const;
  absl::StatusOr<int64_t> GetInt(const std::string& name) const;
  absl::StatusOr<double> GetDouble(const std::string& name) const;
  const std::vector<std::string>& positional() const { return positional_; }
  const std::vector<std::string>& passthrough() const { return passthrough_; }
  bool help_requested() const { return help_; }
  std::string Usage() const;

 private:
  struct Flag {
    std::string value;
    std::string help;
    bool is_bool = false;
    bool set = false;
  };
  std::string command_, summary_;
  std::map<std::string, Flag> flags_;
  std::vector<std::string> order_;
  std::vector<std::pair<std::string, std::string>> positional_spec_;
  std::vector<std::string> positional_, passthrough_;
  bool help_ = false;
};

}  // namespace fg::cli
