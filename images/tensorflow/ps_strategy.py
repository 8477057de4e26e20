"""ParameterServerStrategy: the coordinator trains a small linear model on synthetic data, the
workers and parameter servers run tf.distribute.Server. The coordinator is the chief or, in a
job without one, worker 0 (the others then serve). Every replica prints the cluster TensorFlow's
own TFConfigClusterResolver resolved from TF_CONFIG (and checks it); the coordinator prints the
training steps. Runs under `tfjob run` and in the image of scripts/build-images
(/opt/tfjob/ps_strategy.py)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_args  # noqa: E402

args = train_args.parse(__doc__.split("\n")[0])
from tf_config_check import resolve  # noqa: E402

tf, resolver, me = resolve()
cluster = resolver.cluster_spec().as_dict()

if "chief" not in cluster:
    # No chief: worker 0 coordinates, and is no server of the cluster TensorFlow sees.
    workers = cluster.get("worker", [])
    spec = {"chief": workers[:1], "worker": workers[1:], "ps": cluster.get("ps", [])}
    if resolver.task_type == "worker":
        task_type, task_id = ("chief", 0) if resolver.task_id == 0 else ("worker", resolver.task_id - 1)
    else:
        task_type, task_id = resolver.task_type, resolver.task_id
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(spec), task_type=task_type, task_id=task_id, rpc_layer="grpc")

if resolver.task_type in ("worker", "ps"):
    server = tf.distribute.Server(resolver.cluster_spec(), job_name=resolver.task_type, task_index=resolver.task_id,
                                  protocol=resolver.rpc_layer or "grpc", start=True)
    print(f"{me}: server started", flush=True)
    server.join()

strategy = tf.distribute.ParameterServerStrategy(resolver)
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input(shape=(4,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse", steps_per_execution=args.log_every)


def dataset_fn(_):
    x = tf.random.stateless_uniform((512, 4), seed=(1, 2))
    y = tf.reduce_sum(x * [1.0, -2.0, 3.0, 0.5], axis=1, keepdims=True)
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(64)


history = model.fit(tf.keras.utils.experimental.DatasetCreator(dataset_fn), epochs=args.epochs,
                    steps_per_epoch=args.steps_per_epoch, verbose=0,
                    callbacks=[train_args.step_printer(tf, me, args)])
print(f"{me}: trained with {len(resolver.cluster_spec().as_dict().get('ps', []))} ps shard(s) and "
      f"{len(resolver.cluster_spec().as_dict().get('worker', []))} worker(s); loss {history.history['loss'][-1]:.4f}",
      flush=True)
