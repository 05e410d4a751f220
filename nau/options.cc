#include "nau/options.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "flexgraph/base/logging.h"

namespace fg::nau {
namespace {

const char* TypeName(OptionType t) {
  switch (t) {
    case OptionType::kInt:
      return "integer";
    case OptionType::kFloat:
      return "number";
    case OptionType::kString:
      return "string";
  }
  return "?";
}

bool Parses(OptionType t, const std::string& v) {
  int64_t i;
  double d;
  switch (t) {
    case OptionType::kInt:
      return absl::SimpleAtoi(v, &i);
    case OptionType::kFloat:
      return absl::SimpleAtod(v, &d);
    case OptionType::kString:
      return true;
  }
  return false;
}

}  // namespace

const OptionSpec* FindOption(const OptionList& options, const std::string& name) {
  auto it = std::find_if(options.begin(), options.end(),
                         [&](const OptionSpec& o) { return o.name == name; });
  return it == options.end() ? nullptr : &*it;
}

absl::Status CheckOptions(const OptionList& options, const std::map<std::string, std::string>& values,
                          const std::string& owner) {
  for (const auto& [name, value] : values) {
    const OptionSpec* spec = FindOption(options, name);
    if (spec == nullptr) {
      std::vector<std::string> names;
      for (const OptionSpec& o : options) names.push_back(o.name);
      return absl::InvalidArgumentError(absl::StrCat(
          "model_opt: unknown option '", name, "' for ", owner, " (",
          names.empty() ? "it takes no options" : "valid: " + absl::StrJoin(names, ", "), ")"));
    }
    if (!Parses(spec->type, value)) {
      return absl::InvalidArgumentError(absl::StrCat("model_opt: option '", name, "' of ", owner,
                                                     " expects ", spec->type == OptionType::kInt ? "an " : "a ",
                                                     TypeName(spec->type), ", got '", value, "'"));
    }
  }
  return absl::OkStatus();
}

std::string DescribeOptions(const OptionList& options) {
  std::string out;
  for (const OptionSpec& o : options) {
    absl::StrAppendFormat(&out, "  %-16s %s, default %s\n  %-16s %s\n", o.name, TypeName(o.type),
                          o.default_value.empty() ? "\"\"" : o.default_value, "", o.help);
  }
  return out;
}

const std::string& OptionValues::String(const std::string& name) const {
  auto it = values_.find(name);
  if (it != values_.end()) return it->second;
  const OptionSpec* spec = FindOption(declared_, name);
  FG_CHECK(spec != nullptr) << "option '" << name << "' is read but not declared";
  return spec->default_value;
}

absl::StatusOr<int64_t> OptionValues::Int(const std::string& name) const {
  const std::string& s = String(name);
  int64_t v;
  if (!absl::SimpleAtoi(s, &v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("option '", name, "' expects an integer, got '", s, "'"));
  }
  return v;
}

absl::StatusOr<double> OptionValues::Float(const std::string& name) const {
  const std::string& s = String(name);
  double v;
  if (!absl::SimpleAtod(s, &v)) {
    return absl::InvalidArgumentError(absl::StrCat("option '", name, "' expects a number, got '", s, "'"));
  }
  return v;
}

}  // namespace fg::nau
