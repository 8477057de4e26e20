"""Shared prologue of the TensorFlow scripts: import TensorFlow with Keras 2 (tf-keras), resolve the
cluster from TF_CONFIG with TensorFlow's own TFConfigClusterResolver, print it, check it."""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["TF_USE_LEGACY_KERAS"] = "1"  # Keras 2 (tf-keras): full tf.distribute support
import tensorflow as tf  # noqa: E402


def resolve(check_task_type=False):
    """Returns (tf, resolver, "<type>-<index>") after printing and checking the resolved cluster."""
    tf_config = json.loads(os.environ["TF_CONFIG"])
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    cluster = resolver.cluster_spec().as_dict()
    me = f"{resolver.task_type}-{resolver.task_id}"
    print(f"{me}: TFConfigClusterResolver cluster={json.dumps(cluster, sort_keys=True)}", flush=True)
    if cluster != tf_config["cluster"] or (check_task_type and resolver.task_type != tf_config["task"]["type"]):
        print(f"{me}: resolved cluster differs from TF_CONFIG", flush=True)
        sys.exit(3)
    return tf, resolver, me
