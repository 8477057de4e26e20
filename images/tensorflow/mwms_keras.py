"""MultiWorkerMirroredStrategy: Keras training of a small linear model on synthetic data, every
worker in sync. Prints the cluster TensorFlow's own TFConfigClusterResolver resolved from
TF_CONFIG (and checks it), then the training steps. Runs under `tfjob run` and in the image of
scripts/build-images (/opt/tfjob/mwms_keras.py)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_args  # noqa: E402

args = train_args.parse(__doc__.split("\n")[0])
from tf_config_check import resolve  # noqa: E402

tf, resolver, me = resolve(check_task_type=True)

strategy = tf.distribute.MultiWorkerMirroredStrategy()
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input(shape=(4,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
x = tf.random.stateless_uniform((512, 4), seed=(1, 2))
y = tf.reduce_sum(x * [1.0, -2.0, 3.0, 0.5], axis=1, keepdims=True)
ds = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(64)
history = model.fit(ds, epochs=args.epochs, steps_per_epoch=args.steps_per_epoch, verbose=0,
                    callbacks=[train_args.step_printer(tf, me, args)])
print(f"{me}: trained with {strategy.num_replicas_in_sync} replicas in sync; loss {history.history['loss'][-1]:.4f}",
      flush=True)
