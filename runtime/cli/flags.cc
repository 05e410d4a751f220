#include "runtime/cli/flags.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace fg::cli {

void FlagSet::AddString(const std::string& name, const std::string& def, const std::string& help) {
  flags_[name] = Flag{def, help, false, false};
  order_.push_back(name);
}

void FlagSet::AddBool(const std::string& name, bool def, const std::string& help) {
  flags_[name] = Flag{def ? "true" : "false", help, true, false};
  order_.push_back(name);
}

void FlagSet::AddPositional(const std::string& name, const std::string& help) {
  positional_spec_.push_back({name, help});
}

absl::Status FlagSet::Parse(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      passthrough_.assign(args.begin() + i + 1, args.end());
      break;
    }
    if (a == "--help" || a == "-h") {
      help_ = true;
      continue;
    }
    if (a.size() < 2 || a[0] != '-' || a[1] != '-') {
      if (a.size() > 1 && a[0] == '-') {
        return absl::InvalidArgumentError(absl::StrCat("unknown flag '", a, "' for '", command_, "'"));
      }
      positional_.push_back(a);
      continue;
    }
    std::string name = a.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    auto it = flags_.find(name);
    if (it == flags_.end() && name.rfind("no", 0) == 0) {
      auto neg = flags_.find(name.substr(2));
      if (neg != flags_.end() && neg->second.is_bool && !has_value) {
        neg->second.value = "false";
        neg->second.set = true;
        continue;
      }
    }
    if (it == flags_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag '--", name, "' for '", command_, "'"));
    }
    Flag& f = it->second;
    if (!has_value) {
      if (f.is_bool) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat("flag '--", name, "' needs a value"));
      }
    }
    if (f.is_bool && value != "true" && value != "false") {
      return absl::InvalidArgumentError(
          absl::StrCat("flag '--", name, "' takes true or false, got '", value, "'"));
    }
    f.value = value;
    f.set = true;
  }
  if (!help_ && positional_.size() > positional_spec_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument '",
                                                   positional_[positional_spec_.size()],
                                                   "' for '", command_, "'"));
  }
  return absl::OkStatus();
}

bool FlagSet::IsSet(const std::string& name) const {
  auto it = flags_.find(name);
  return it != flags_.end() && it->second.set;
}

std::string FlagSet::Get(const std::string& name) const {
  auto it = flags_.find(name);
  return it == flags_.end() ? "" : it->second.value;
}

bool FlagSet::GetBool(const std::string& name) const { return Get(name) == "true"; }

absl::StatusOr<int64_t> FlagSet::GetInt(const std::string& name) const {
  int64_t v;
  if (!absl::SimpleAtoi(Get(name), &v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("flag '--", name, "' expects an integer, got '", Get(name), "'"));
  }
  return v;
}

absl::StatusOr<double> FlagSet::GetDouble(const std::string& name) const {
  double v;
  if (!absl::SimpleAtod(Get(name), &v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("flag '--", name, "' expects a number, got '", Get(name), "'"));
  }
  return v;
}

std::string FlagSet::Usage() const {
  std::string s = absl::StrCat("usage: flexgraph ", command_, " [flags]");
  for (const auto& [name, help] : positional_spec_) absl::StrAppend(&s, " ", name);
  absl::StrAppend(&s, "\n\n", summary_, "\n");
  for (const auto& [name, help] : positional_spec_) {
    absl::StrAppend(&s, absl::StrFormat("\n  %-22s %s", name, help));
  }
  if (!order_.empty()) absl::StrAppend(&s, "\n\nflags:");
  for (const std::string& name : order_) {
    const Flag& f = flags_.at(name);
    absl::StrAppend(&s, absl::StrFormat("\n  --%-20s %s", name, f.help));
    if (!f.value.empty()) absl::StrAppend(&s, " (default: ", f.value, ")");
  }
  absl::StrAppend(&s, "\n");
  return s;
}

}  // namespace fg::cli
