"""MultiWorkerMirroredStrategy Keras training on synthetic data, run by `tfjob run`.
Prints the cluster TensorFlow's own TFConfigClusterResolver resolved from TF_CONFIG and checks it."""
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
if cluster != tf_config["cluster"] or resolver.task_type != tf_config["task"]["type"]:
    print(f"{me}: resolved cluster differs from TF_CONFIG", flush=True)
    sys.exit(3)

strategy = tf.distribute.MultiWorkerMirroredStrategy()
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input(shape=(4,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
x = tf.random.stateless_uniform((512, 4), seed=(1, 2))
y = tf.reduce_sum(x * [1.0, -2.0, 3.0, 0.5], axis=1, keepdims=True)
ds = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(64)
history = model.fit(ds, epochs=3, steps_per_epoch=20, verbose=0)
print(f"{me}: trained with {strategy.num_replicas_in_sync} replicas in sync; loss {history.history['loss'][-1]:.4f}",
      flush=True)
