#pragma once
// The validating admission webhook's decision (docs/semantics.md 1.8): an AdmissionReview (admission.k8s.io/v1)
// in, the AdmissionReview answer out. CREATE runs the same checks as `tfjob validate` (shape
// errors from decoding, then ValidateTfJob); UPDATE adds the immutability rules (managedBy,
// schedulingPolicy.queue). A denial carries every error, aggregated exactly as upstream's
// webhook renders them, with code 403 (what controller-runtime's Denied answers). Unknown fields
// of the object (api/known_fields.h) and the oddities upstream admits and runs
// (api::SpecWarnings, docs/semantics.md D22) go in response.warnings, allowed or not. Pure: no I/O.

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "common/status.h"

namespace tfjob::operator_ {

inline constexpr char kValidatePath[] = "/validate-kubeflow-org-v1-tfjob";
// The mutating webhook's path (Kueue's own TFJob webhook uses the same one).
inline constexpr char kDefaultPath[] = "/mutate-kubeflow-org-v1-tfjob";

// kInvalidArgument when `review` is not an AdmissionReview with a request and a uid (the
// server answers HTTP 400); otherwise the review to send back, allowed or denied.
StatusOr<nlohmann::json> ReviewTfJob(const nlohmann::json& review);

// The HTTP exchange around ReviewTfJob: a request body in, (status, JSON body) out. A body that
// is not JSON or not an AdmissionReview gets 400 with {"error": "..."}.
std::pair<int, std::string> ServeTfJobReview(const std::string& body);

// The mutating webhook's decision (docs/kueue.md, "The operator's mode"): on CREATE, a TFJob with
// a non-empty kueue.x-k8s.io/queue-name label whose spec.runPolicy.suspend is not true gets it
// set (a JSONPatch), as Kueue's own TFJob webhook does when its integration is on, so that no pod
// is created before Kueue admits the job. Anything else is allowed unchanged; it never denies
// (validation is the validating webhook's). Errors as ReviewTfJob's.
StatusOr<nlohmann::json> DefaultTfJob(const nlohmann::json& review);
// The HTTP exchange around DefaultTfJob, as ServeTfJobReview.
std::pair<int, std::string> ServeTfJobDefaulting(const std::string& body);

}  // namespace tfjob::operator_
