#pragma once
// Test fixtures: TFJobs from YAML text and trimmed pods with labels and states, so table tests
// read like the cases of docs/semantics.md section 4.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/kueue_workload.h"
#include "api/pod.h"
#include "api/pod_group.h"
#include "api/tfjob.h"

namespace tfjob::testing {

// Decodes one TFJob from YAML; aborts the test binary on malformed fixtures. Not defaulted.
api::TfJob JobFromYaml(std::string_view yaml);
// Same, then SetDefaults.
api::TfJob DefaultedJobFromYaml(std::string_view yaml);

// A Kueue Workload, a PodGroup or a scheduling.k8s.io Workload decoded as the operator's informers
// decode them (api/kueue_workload.h, api/pod_group.h); abort the test binary on malformed fixtures.
api::KueueWorkload DecodedKueueWorkload(const nlohmann::json& object);
api::PodGroup DecodedPodGroup(const nlohmann::json& object);
api::SchedulingWorkload DecodedSchedulingWorkload(const nlohmann::json& object);

// "NewTFJob(w, p)" of section 4 of docs/semantics.md: job `test-tfjob` in `default`, uid "test-uid", each
// replica one container `tensorflow` with image and port tfjob-port:2222. Types with 0 omitted.
api::TfJob NewTfJob(int workers, int ps, bool with_chief = false);

// A trimmed pod of `job` with the replica labels and owner uid set.
api::Pod MakePod(const std::string& job_name, std::string_view replica_type_label, int index, api::PodPhase phase,
                 std::string owner_uid = "test-uid");
// A trimmed service of `job` with the replica labels and owner uid set.
api::Service MakeService(const std::string& job_name, std::string_view replica_type_label, int index,
                         std::string owner_uid = "test-uid");

// Adds a terminated `tensorflow` container status with `exit_code`.
api::Pod& WithExitCode(api::Pod& pod, int exit_code);

}  // namespace tfjob::testing
