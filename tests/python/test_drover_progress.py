"""Tests of python/drover_progress.py (standard library only): what it serves over loopback
HTTP, and that Keras and PyTorch, faked with the interfaces they call, report through it.
tests/ctrl/test_progress_py.c checks that drover's own collector reads what it serves."""

import os
import re
import unittest
import urllib.error
import urllib.request

import drover_progress as dp

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def samples(text):
    """{metric: value} of the text's sample lines, as Prometheus reads them."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.split(" ")
            out[name] = float(value)
    return out


class Served(unittest.TestCase):
    def setUp(self):
        self.p = dp.Progress()
        self.port = self.p.serve(0, host="127.0.0.1")
        self.addCleanup(self.p.close)

    def get(self, path="/metrics"):
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.port, path), timeout=5) as r:
            return r.status, r.headers["Content-Type"], r.read().decode()

    def test_nothing_before_the_first_report(self):
        status, _, body = self.get()
        self.assertEqual(status, 200)
        self.assertEqual(samples(body), {})
        self.assertIn("# TYPE drover_train_step counter", body)

    def test_step_and_loss_as_prometheus_text(self):
        self.p.report(1200, 0.75)
        status, ctype, body = self.get()
        self.assertEqual(status, 200)
        self.assertTrue(ctype.startswith("text/plain; version=0.0.4"))
        self.assertEqual(samples(body), {"drover_train_step": 1200, "drover_train_loss": 0.75})
        self.assertRegex(body, re.compile(r"^drover_train_step 1200$", re.M))
        self.p.report(1300)  # a step alone keeps the last loss
        self.assertEqual(
            samples(self.get()[2]), {"drover_train_step": 1300, "drover_train_loss": 0.75}
        )

    def test_other_paths_are_404(self):
        with self.assertRaises(urllib.error.HTTPError) as e:
            self.get("/other")
        self.assertEqual(e.exception.code, 404)

    def test_serving_twice_is_refused(self):
        with self.assertRaises(RuntimeError):
            self.p.serve(0, host="127.0.0.1")


class Values(unittest.TestCase):
    def test_named_metrics_and_special_values(self):
        p = dp.Progress("train_step", "train_loss")
        p.report(3.0, float("nan"))
        self.assertIn("\ntrain_step 3\n", p.text())
        self.assertIn("\ntrain_loss NaN\n", p.text())
        p.report(4, float("inf"))
        self.assertIn("\ntrain_loss +Inf\n", p.text())

    def test_bad_input_is_refused_by_name(self):
        p = dp.Progress()
        for step in ("12", None, True):
            with self.assertRaisesRegex(TypeError, "step must be a number"):
                p.report(step, 1.0)
        with self.assertRaisesRegex(ValueError, "step must be >= 0"):
            p.report(-1)
        with self.assertRaisesRegex(TypeError, "loss must be a number"):
            p.report(1, "low")
        with self.assertRaisesRegex(ValueError, "metric name"):
            dp.Progress("train step")


class FakeVariable:
    """tf.Variable's face: numpy() gives the value."""

    def __init__(self, v):
        self.v = v

    def numpy(self):
        return self.v


class FakeOptimizer:
    def __init__(self):
        self.iterations = FakeVariable(0)
        self.post_hooks = []

    def register_step_post_hook(self, hook):  # torch.optim.Optimizer's
        self.post_hooks.append(hook)

    def step(self):
        self.iterations.v += 1
        for h in self.post_hooks:
            h(self, (), {})


class FakeModel:
    def __init__(self, optimizer):
        self.optimizer = optimizer

    def fit(self, callbacks, epochs, steps, losses):
        """Calls callbacks as Keras 2's CallbackList does (tf_keras callbacks.py), in order."""
        for cb in callbacks:
            cb.set_model(self)
            cb.set_params({"epochs": epochs, "steps": steps, "verbose": 0})
        assert any(cb._implements_train_batch_hooks() for cb in callbacks)
        for cb in callbacks:
            cb._implements_test_batch_hooks(), cb._implements_predict_batch_hooks()
            getattr(cb, "_supports_tf_logs", False)
            cb.on_train_begin(logs=None)
        loss = iter(losses)
        for epoch in range(epochs):
            for cb in callbacks:
                cb.on_epoch_begin(epoch, logs=None)
            for batch in range(steps):
                logs = {"loss": next(loss)}
                for cb in callbacks:
                    cb.on_train_batch_begin(batch, logs=None)
                self.optimizer.step()
                for cb in callbacks:
                    cb.on_train_batch_end(batch, logs=logs)
            for cb in callbacks:
                cb.on_test_begin(logs=None)
                cb.on_test_end(logs=None)
                cb.on_epoch_end(epoch, logs={"loss": 0.0, "val_loss": 0.0})
        for cb in callbacks:
            cb.on_train_end(logs=None)


class Keras(unittest.TestCase):
    def test_global_step_from_the_optimizer(self):
        p = dp.Progress()
        opt = FakeOptimizer()
        opt.iterations.v = 500  # restored from a checkpoint
        FakeModel(opt).fit([dp.KerasCallback(p)], epochs=2, steps=3, losses=[6, 5, 4, 3, 2, 1.5])
        self.assertEqual(samples(p.text()), {"drover_train_step": 506, "drover_train_loss": 1.5})

    def test_batches_counted_across_epochs_without_an_optimizer(self):
        p = dp.Progress()
        cb = dp.KerasCallback(p)
        cb.set_model(None)
        for epoch in range(2):
            for batch in range(3):
                cb.on_train_batch_end(batch, {"loss": 1.0 / (1 + batch)})
        self.assertEqual(samples(p.text()), {"drover_train_step": 6, "drover_train_loss": 1 / 3})

    def test_unknown_attributes_still_fail(self):
        with self.assertRaises(AttributeError):
            dp.KerasCallback(dp.Progress()).not_a_hook


class Torch(unittest.TestCase):
    def test_step_after_optimizer_step(self):
        p = dp.Progress()
        hook, opt = dp.TorchHook(p, start=100), FakeOptimizer()
        for loss in (FakeVariable(2.0), 1.0, 0.5):
            opt.step()
            hook.step(loss.numpy() if isinstance(loss, FakeVariable) else loss)
        self.assertEqual(samples(p.text()), {"drover_train_step": 103, "drover_train_loss": 0.5})

    def test_tensor_loss_through_item(self):
        class Tensor:
            def item(self):
                return 0.25

        p = dp.Progress()
        dp.TorchHook(p).step(Tensor())
        self.assertEqual(samples(p.text())["drover_train_loss"], 0.25)

    def test_registered_as_a_step_post_hook(self):
        p = dp.Progress()
        opt = FakeOptimizer()
        opt.register_step_post_hook(dp.TorchHook(p))
        for _ in range(4):
            opt.step()
        self.assertEqual(samples(p.text()), {"drover_train_step": 4})


class Example(unittest.TestCase):
    """examples/trainingjob.yaml ships this module and train.py in a ConfigMap."""

    def block(self, key):
        """The literal block scalar `key: |` of the example's ConfigMap, dedented."""
        with open(os.path.join(ROOT, "examples", "trainingjob.yaml")) as f:
            lines = f.read().split("\n")
        start = lines.index("  %s: |" % key) + 1
        out = []
        for line in lines[start:]:
            if line and not line.startswith("    "):
                break
            out.append(line[4:])
        return "\n".join(out).rstrip("\n") + "\n"

    def test_the_configmap_ships_this_module_as_it_is(self):
        with open(dp.__file__) as f:
            self.assertEqual(
                self.block("drover_progress.py"),
                f.read(),
                "copy python/drover_progress.py into examples/trainingjob.yaml's ConfigMap",
            )

    def test_train_py_compiles_and_reports(self):
        src = self.block("train.py")
        compile(src, "train.py", "exec")
        self.assertIn("drover_progress.KerasCallback()", src)
        self.assertIn("TF_CONFIG", src)


if __name__ == "__main__":
    unittest.main()
