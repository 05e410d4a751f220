// Text-format protobuf parsing with errors that name the source, line and column.
#pragma once

#include <string>

#include <google/protobuf/message.h>

#include "absl/status/status.h"

namespace fg::proto {

// Parses `text` into `out`; `where` names the source (a file) in errors, as "where:line:column: ...".
absl::Status ParseTextProto(const std::string& text, const std::string& where,
                            google::protobuf::Message* out);

}  // namespace fg::proto
