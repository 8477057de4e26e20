"""Drives TFJobs through Kubeflow's Python SDK (kubeflow-training, scripts/sdk-venv), exactly as a
user would: run by the venv's python from test_sdk.py, never imported by pytest. Each step prints
one line `SDK {json}` with what the SDK returned; test_sdk.py asserts on them. Any SDK exception
propagates: a traceback and exit 1.

usage: sdk_client.py KUBECONFIG NAMESPACE SCENARIO
  model     a KubeflowOrgV1TFJob built from the SDK's models (1 PS, 2 workers that end with 0
            after 3s through the KWOK annotations), create_job, wait for Succeeded, read it, delete it
  template  the SDK's own TFJob template (create_job with base_image and replica counts; its pods
            carry no KWOK annotation, so they stay Running): wait for Running, read it, delete it
"""
import json
import sys
import time

from kubeflow.training import TrainingClient, constants, models

WAIT = dict(wait_timeout=600, polling_interval=1)  # generous: the machine is shared
IMAGE = "tensorflow/tensorflow:2.16.1"


def report(step, **values):
    print("SDK " + json.dumps(dict(step=step, **values), default=str), flush=True)


def replica(replicas, annotations=None):
    container = models.V1Container(name=constants.TFJOB_CONTAINER, image=IMAGE)
    template = models.V1PodTemplateSpec(metadata=models.V1ObjectMeta(annotations=annotations),
                                        spec=models.V1PodSpec(containers=[container]))
    return models.KubeflowOrgV1ReplicaSpec(replicas=replicas, restart_policy="Never", template=template)


def conditions(client, name):
    return [[c.type, c.status, c.reason] for c in client.get_job_conditions(name)]


def pod_names(client, name, **selector):
    return sorted(client.get_job_pod_names(name, **selector))


def read_job(client, name):
    """Everything the SDK reads about a job: conditions, predicates, pods by its selectors."""
    job = client.get_job(name)
    st = job.status
    report("job", kind=job.kind, api_version=job.api_version,
           conditions=conditions(client, name),
           created=client.is_job_created(name), running=client.is_job_running(name),
           restarting=client.is_job_restarting(name), succeeded=client.is_job_succeeded(name),
           failed=client.is_job_failed(name),
           replica_statuses={k: v.to_dict() for k, v in (st.replica_statuses or {}).items()},
           start_time=st.start_time, completion_time=st.completion_time,
           times_are_datetimes=all(t is None or hasattr(t, "tzinfo")
                                   for t in [st.start_time, st.completion_time]
                                   + [c.last_transition_time for c in st.conditions]))
    pods = client.get_job_pods(name)
    report("pods", names=pod_names(client, name),
           phases={p.metadata.name: p.status.phase for p in pods},
           master=pod_names(client, name, is_master=True),
           by_type={t: pod_names(client, name, replica_type=t) for t in constants.TFJOB_REPLICA_TYPES},
           worker_1=pod_names(client, name, replica_type="worker", replica_index=1))


def delete(client, name):
    client.delete_job(name)
    deadline = time.monotonic() + 300
    while any(j.metadata.name == name for j in client.list_jobs()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"TFJob {name} still listed after delete_job")
        time.sleep(0.5)
    report("deleted", listed=[j.metadata.name for j in client.list_jobs()])


def model_scenario(client, namespace):
    name = "sdk-model"
    job = models.KubeflowOrgV1TFJob(
        api_version=constants.API_VERSION, kind=constants.TFJOB_KIND,
        metadata=models.V1ObjectMeta(name=name, namespace=namespace),
        spec=models.KubeflowOrgV1TFJobSpec(
            # None: the parameter server is still listed (Running) after the job succeeds.
            run_policy=models.KubeflowOrgV1RunPolicy(clean_pod_policy="None"),
            tf_replica_specs={"PS": replica(1),
                              "Worker": replica(2, {"tfjob.test/exit-code": "0", "tfjob.test/run-for": "3s"})}))
    client.create_job(job)
    report("created", name=name)
    done = client.wait_for_job_conditions(name, expected_conditions={constants.JOB_CONDITION_SUCCEEDED}, **WAIT)
    report("waited", name=done.metadata.name, last=[done.status.conditions[-1].type,
                                                     done.status.conditions[-1].status])
    read_job(client, name)
    delete(client, name)


def template_scenario(client, namespace):
    name = "sdk-template"
    client.create_job(name=name, job_kind=constants.TFJOB_KIND, base_image=IMAGE,
                      num_workers=2, num_ps_replicas=1, num_chief_replicas=1)
    report("created", name=name)
    client.wait_for_job_conditions(name, expected_conditions={constants.JOB_CONDITION_RUNNING}, **WAIT)
    read_job(client, name)
    delete(client, name)


def main():
    kubeconfig, namespace, scenario = sys.argv[1:4]
    client = TrainingClient(config_file=kubeconfig, namespace=namespace, job_kind=constants.TFJOB_KIND)
    {"model": model_scenario, "template": template_scenario}[scenario](client, namespace)


if __name__ == "__main__":
    main()
