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


def step_printer(tf, me, args, with_loss=True):
    """A callback printing `<me>: epoch E step S/N[ loss L]` every --log-every steps and at each
    epoch's end. With ParameterServerStrategy the step logs are remote values: with_loss=False
    leaves them unread (the loss is printed at the epoch's end)."""

    class StepPrinter(tf.keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self._supports_tf_logs = not with_loss
            self.epoch = 0

        def on_epoch_begin(self, epoch, logs=None):
            self.epoch = epoch + 1

        def on_train_batch_end(self, batch, logs=None):
            step = batch + 1
            if step % args.log_every and step != args.steps_per_epoch:
                return
            loss = f" loss {float(logs['loss']):.4f}" if with_loss and logs and "loss" in logs else ""
            print(f"{me}: epoch {self.epoch} step {step}/{args.steps_per_epoch}{loss}", flush=True)
            if args.step_sleep:
                time.sleep(args.step_sleep)

        def on_epoch_end(self, epoch, logs=None):
            loss = f" loss {float(logs['loss']):.4f}" if logs and "loss" in logs else ""
            print(f"{me}: epoch {epoch + 1}/{args.epochs} done{loss}", flush=True)

    return StepPrinter()
