#pragma once
// Reading TFJobs from a manifest file's text: picks the TFJob documents of a multi-document
// YAML (or a JSON object, or a v1 List), decodes them and reports every decoding problem, and
// the warnings of README "Input rules and limits" (unknown fields, skipped documents).

#include <string>
#include <string_view>
#include <vector>

#include "api/field_error.h"
#include "api/tfjob.h"
#include "common/status.h"

namespace tfjob::api {

struct LoadedTfJob {
  TfJob job;  // as written (not defaulted)
  // What the API server refuses by the CRD's structural schema (api/structural_schema.h), pod
  // templates included; at most kMaxSchemaErrors, and how many more there were.
  FieldErrors schema_errors;
  size_t schema_errors_left_out = 0;
  // Fields of the wrong shape for the decoder (left unset in `job`), except those under a field
  // the schema already refused (one message per mistake).
  FieldErrors decode_errors;
  // Unknown fields by path: "spec.tfReplicaSpecs[Worker].replcas: unknown field \"replcas\"".
  std::vector<std::string> warnings;
  int line = 1;  // where its document starts
};

struct LoadedFile {
  std::vector<LoadedTfJob> jobs;
  // Documents of other kinds, skipped: "document 1 (line 1): skipped: kind \"ConfigMap\" is not TFJob".
  std::vector<std::string> warnings;
};

// kInvalidArgument when the text is not YAML/JSON, a document is not an object or has no kind,
// a document looks like a TFJob but is not one (a kind that differs from TFJob only in case, or
// another kind of apiVersion kubeflow.org/*: "document 2 (line 5): kind \"TfJob\" is not TFJob
// (kinds are case-sensitive)"), or no document is a TFJob (kind TFJob, any apiVersion: a wrong
// apiVersion is a validation error).
StatusOr<LoadedFile> LoadTfJobFile(std::string_view text);
// The jobs of LoadTfJobFile.
StatusOr<std::vector<LoadedTfJob>> LoadTfJobs(std::string_view text);

}  // namespace tfjob::api
