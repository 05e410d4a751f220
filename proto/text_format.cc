#include "proto/text_format.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include "absl/strings/str_cat.h"

namespace fg::proto {
namespace {

class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  explicit FirstError(std::string where) : where_(std::move(where)) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (first_.empty()) first_ = absl::StrCat(where_, ":", line + 1, ":", column + 1, ": ", message);
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
  const std::string& first() const { return first_; }

 private:
  std::string where_, first_;
};

}  // namespace

absl::Status ParseTextProto(const std::string& text, const std::string& where,
                            google::protobuf::Message* out) {
  google::protobuf::TextFormat::Parser parser;
  FirstError errors(where);
  parser.RecordErrorsTo(&errors);
  if (parser.ParseFromString(text, out)) return absl::OkStatus();
  return absl::InvalidArgumentError(errors.first().empty() ? absl::StrCat(where, ": parse error")
                                                           : errors.first());
}

}  // namespace fg::proto
