"""ParameterServerStrategy: the chief coordinates, workers and the PS run tf.distribute.Server.
Every replica prints the cluster TFConfigClusterResolver resolved from TF_CONFIG and checks it."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tf_config_check import resolve  # noqa: E402

tf, resolver, me = resolve()

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
