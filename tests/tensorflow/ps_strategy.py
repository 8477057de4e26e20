"""ParameterServerStrategy: the chief coordinates, workers and the PS run tf.distribute.Server.
Every replica prints the cluster TFConfigClusterResolver resolved from TF_CONFIG and checks it."""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["TF_USE_LEGACY_KERAS"] = "1"  # Keras 2 (tf-keras): full tf.distribute support
import tensorflow as tf  # noqa: E402

tf_config = json.loads(os.environ["TF_CONFIG"])
resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
cluster = resolver.cluster_spec().as_dict()
me = f"{resolver.task_type}-{resolver.task_id}"
print(f"{me}: TFConfigClusterResolver cluster={json.dumps(cluster, sort_keys=True)}", flush=True)
if cluster != tf_config["cluster"]:
    print(f"{me}: resolved cluster differs from TF_CONFIG", flush=True)
    sys.exit(3)

if resolver.task_type in ("worker", "ps"):
    server = tf.distribute.Server(resolver.cluster_spec(), job_name=resolver.task_type, task_index=resolver.task_id,
                                  protocol=resolver.rpc_layer or "grpc", start=True)
    print(f"{me}: server started", flush=True)
    server.join()

strategy = tf.distribute.ParameterServerStrategy(resolver)
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input(shape=(4,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse", steps_per_execution=5)


def dataset_fn(_):
    x = tf.random.stateless_uniform((512, 4), seed=(1, 2))
    y = tf.reduce_sum(x * [1.0, -2.0, 3.0, 0.5], axis=1, keepdims=True)
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(64)


history = model.fit(tf.keras.utils.experimental.DatasetCreator(dataset_fn), epochs=3, steps_per_epoch=20, verbose=0)
print(f"{me}: trained with {strategy.num_ps_shards if hasattr(strategy, 'num_ps_shards') else 1} ps shard(s); "
      f"loss {history.history['loss'][-1]:.4f}", flush=True)
