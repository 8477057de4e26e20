"""Command-line options shared by the training scripts, and a Keras callback that prints the steps."""
import argparse
import time


def parse(description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--steps-per-epoch", type=int, default=20)
    p.add_argument("--step-sleep", type=float, default=0.0,
                   help="seconds to sleep after each logged step (to make a run last, for demos and tests)")
    p.add_argument("--log-every", type=int, default=5, help="print every N-th step")
    return p.parse_args()


def step_printer(tf, me, args):
    """A callback printing `<me>: epoch E step S/N` every --log-every steps and `<me>: epoch E/N
    done loss L` at each epoch's end. The step logs are left unread: with ParameterServerStrategy
    they are remote values, and with MultiWorkerMirroredStrategy their loss is not yet averaged
    over the replicas."""

    class StepPrinter(tf.keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self._supports_tf_logs = True  # the step logs as they are: no copy, no wait for remote values
            self.epoch = 0

        def on_epoch_begin(self, epoch, logs=None):
            self.epoch = epoch + 1

        def on_train_batch_end(self, batch, logs=None):
            step = batch + 1
            if step % args.log_every and step != args.steps_per_epoch:
                return
            print(f"{me}: epoch {self.epoch} step {step}/{args.steps_per_epoch}", flush=True)
            if args.step_sleep:
                time.sleep(args.step_sleep)

        def on_epoch_end(self, epoch, logs=None):
            loss = f" loss {float(logs['loss']):.4f}" if logs and "loss" in logs else ""
            print(f"{me}: epoch {epoch + 1}/{args.epochs} done{loss}", flush=True)

    return StepPrinter()
