#pragma once
// Reading TFJobs from a manifest file's text: picks the TFJob documents of a multi-document
// YAML (or a JSON object, or a v1 List), decodes them and reports every decoding problem.

#include <string>
#include <string_view>
#include <vector>

#include "api/field_error.h"
#include "api/tfjob.h"
#include "common/status.h"

namespace tfjob::api {

struct LoadedTfJob {
  TfJob job;                  // as written (not defaulted)
  FieldErrors decode_errors;  // fields of the wrong shape (left unset in `job`)
  int line = 1;               // where its document starts
};

// kInvalidArgument when the text is not YAML/JSON, a document is not an object, or no
// document is a TFJob (kind TFJob, any apiVersion: a wrong apiVersion is a validation error).
StatusOr<std::vector<LoadedTfJob>> LoadTfJobs(std::string_view text);

}  // namespace tfjob::api
