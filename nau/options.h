// Model options: each model declares the options it reads (name, type, default, help), so that
// `flexgraph train --model M --help` lists them and an unknown or mistyped --model_opt is an error
// naming the option and the valid ones. Thread-safe (plain data and pure functions).
//
//   {{"num_traces", OptionType::kInt, "10", "random walks per root"},
//    {"count", OptionType::kString, "root_type", "visits counted: root_type or all"}}
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fg::nau {

enum class OptionType { kInt, kFloat, kString };

struct OptionSpec {
  std::string name;
  OptionType type = OptionType::kString;
  std::string default_value;  // in the type's syntax
  std::string help;
};

using OptionList = std::vector<OptionSpec>;

// The declaration of `name` in `options`, or null.
const OptionSpec* FindOption(const OptionList& options, const std::string& name);

// Checks `values` (name -> value) against the declarations: every name declared, every value of
// its type. Errors name `owner` ("model pinsage"), the option and the valid ones.
absl::Status CheckOptions(const OptionList& options, const std::map<std::string, std::string>& values,
                          const std::string& owner);

// "  name (type, default D)  help" lines for --help.
std::string DescribeOptions(const OptionList& options);

// The values of declared options: those set by the user, else the declared defaults.
//
//   OptionValues o(PinSageOptions(), {{"num_traces", "20"}});
//   FG_ASSIGN_OR_RETURN(int64_t traces, o.Int("num_traces"));
class OptionValues {
 public:
  OptionValues() = default;
  OptionValues(OptionList declared, std::map<std::string, std::string> values)
      : declared_(std::move(declared)), values_(std::move(values)) {}

  // True when the user set `name`.
  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  // Reading an undeclared option is a programmer error; a malformed value is an error naming the
  // option.
  absl::StatusOr<int64_t> Int(const std::string& name) const;
  absl::StatusOr<double> Float(const std::string& name) const;
  const std::string& String(const std::string& name) const;

  const OptionList& declared() const { return declared_; }
  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  OptionList declared_;
  std::map<std::string, std::string> values_;
};

}  // namespace fg::nau
