#pragma once
// Defaulting of a TFJob exactly as upstream's SetDefaults_TFJob (docs/semantics.md 1.7):
// cleanPodPolicy None, successPolicy "", replica keys normalised case-insensitively,
// replicas 1, restartPolicy Never, and the tfjob-port 2222 on the tensorflow container. A
// cleanPodPolicy other than None or Running becomes All, which is how upstream's clean-up treats
// it (3.11). Applied in memory; never written back to the object's spec.

#include "api/tfjob.h"

namespace tfjob::api {

// Idempotent. Tolerates malformed templates (leaves what it cannot understand alone).
void SetDefaults(TfJob& job);

// The container that carries TF_CONFIG and the port: the one named "tensorflow", or
// nullptr. Works on a pod template JSON ({"spec":{"containers":[...]}}).
const nlohmann::json* FindTensorflowContainer(const nlohmann::json& pod_template);
nlohmann::json* FindTensorflowContainer(nlohmann::json& pod_template);

// containerPort of the port named tfjob-port in the tensorflow container, else 2222.
int32_t TfJobPort(const ReplicaSpec& spec);

}  // namespace tfjob::api
