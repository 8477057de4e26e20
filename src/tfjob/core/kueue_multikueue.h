#pragma once
// MultiKueue with Kueue's TFJob integration off (docs/kueue.md "MultiKueue in the operator's
// mode", docs/semantics.md D32). Kueue's generic adapter for a kind it has no integration for
// (multiKueue.externalFrameworks) dispatches a job only when its `.spec.managedBy` names
// MultiKueue, and copies it to the worker with `.spec.managedBy` removed and two labels added
// (the prebuilt-workload-name of the Workload it made there, and its origin); it leaves
// `spec.runPolicy.managedBy`, the field a TFJob controller reads, as it was. So:
//   - on the manager, a job whose runPolicy.managedBy names MultiKueue gets the same value in
//     spec.managedBy (NeedsSpecManagedBy), has its Workload here, and is never run here;
//   - on a worker, a job that says MultiKueue manages it is run here only when it is provably
//     MultiKueue's copy (MultiKueueRoleOf: kCopy).
// Pure.

#include <optional>
#include <string_view>

#include "api/kueue_workload.h"
#include "api/tfjob.h"

namespace tfjob::core {

// The label MultiKueue puts on what it creates in a worker (the copy and its Workload): the
// manager's multiKueue.origin.
inline constexpr std::string_view kKueueMultiKueueOriginLabel = "kueue.x-k8s.io/multikueue-origin";

enum class MultiKueueRole {
  kNone,      // runPolicy.managedBy does not name MultiKueue
  kManager,   // names MultiKueue, no origin label: the job MultiKueue dispatches; its pods run elsewhere
  kCopy,      // MultiKueue's copy on a worker, proven: run here
  kUnproven,  // has the origin label but not the proof: left alone (it may be proven later)
};
std::string_view MultiKueueRoleName(MultiKueueRole role);

// The job's part in MultiKueue. `prebuilt`: the Workload its prebuilt-workload-name label names
// in its namespace, when it exists. A copy is proven when all of these hold:
//   - runPolicy.managedBy is kueue.x-k8s.io/multikueue and spec.managedBy is absent (Kueue's
//     adapter removed it; the manager's job keeps it);
//   - the job has a non-empty origin label and a prebuilt-workload-name label;
//   - that Workload exists, carries the same origin label (MultiKueue made it in the same
//     dispatch), and has no controller or has this job (uid) as its controller.
MultiKueueRole MultiKueueRoleOf(const api::TfJob& job, const std::optional<api::KueueWorkload>& prebuilt);

// A manager's job (kManager) whose spec.managedBy does not repeat runPolicy.managedBy yet: without
// it Kueue's adapter rejects the job ("The owner is not managed by Kueue").
bool NeedsSpecManagedBy(const api::TfJob& job);

}  // namespace tfjob::core
