"""MultiWorkerMirroredStrategy Keras training on synthetic data, run by `tfjob run`.
Prints the cluster TensorFlow's own TFConfigClusterResolver resolved from TF_CONFIG and checks it."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tf_config_check import resolve  # noqa: E402

tf, resolver, me = resolve(check_task_type=True)

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
