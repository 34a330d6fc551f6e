"""drover_progress - serve a training script's progress to `drover run` (docs/running.md).

Policies that watch progress (SpeCon, Optimus, FlowCon) read a job's global step and loss from
Prometheus text its chief serves at http://<pod IP>:<spec.progress.port><spec.progress.path>.
This module serves exactly that, with the standard library only. In three lines:

    import drover_progress
    drover_progress.serve(9100)            # spec.progress.port; path /metrics
    drover_progress.report(step, loss)     # after each step (or every few)

Keras: model.fit(..., callbacks=[drover_progress.KerasCallback()]). PyTorch: hook =
drover_progress.TorchHook(), then hook.step(loss) after each optimizer.step() (or
optimizer.register_step_post_hook(hook) for the step alone).

Nothing is served for the step or the loss before it is first reported: a script that resumes
from a checkpoint at step 5000 never shows a step 0 in between. Names default to
drover_train_step and drover_train_loss, spec.progress's defaults.
"""

import math
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STEP = "drover_train_step"
LOSS = "drover_train_loss"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")


def _number(what, x):
    """x as a float (a tensor's .item() too), or a TypeError naming what it was for."""
    if hasattr(x, "item"):
        x = x.item()
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError("drover_progress: %s must be a number, not %r" % (what, x))
    return float(x)


def _text(x):
    """x as Prometheus text writes a sample's value."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    return str(int(x)) if x.is_integer() and abs(x) < 2**53 else repr(x)


class Progress:
    """A job's latest step and loss, and the HTTP server that serves them (at most one)."""

    def __init__(self, step_metric=STEP, loss_metric=LOSS):
        for name in (step_metric, loss_metric):
            if not isinstance(name, str) or not _NAME.match(name):
                raise ValueError("drover_progress: %r is not a Prometheus metric name" % name)
        self.step_metric, self.loss_metric = step_metric, loss_metric
        self._lock = threading.Lock()
        self._step = self._loss = None
        self._server = None

    def report(self, step, loss=None):
        """Records the global step (>= 0) and, when given, the loss."""
        step = _number("step", step)
        if not step >= 0:
            raise ValueError("drover_progress: step must be >= 0, not %r" % (step,))
        loss = None if loss is None else _number("loss", loss)
        with self._lock:
            self._step = step
            if loss is not None:
                self._loss = loss

    def text(self):
        """The Prometheus text served: HELP and TYPE lines, and each value once reported."""
        with self._lock:
            step, loss = self._step, self._loss
        out = []
        for name, kind, what, value in (
            (self.step_metric, "counter", "The training's global step.", step),
            (self.loss_metric, "gauge", "The training's latest loss.", loss),
        ):
            out.append("# HELP %s %s\n# TYPE %s %s\n" % (name, what, name, kind))
            if value is not None:
                out.append("%s %s\n" % (name, _text(value)))
        return "".join(out)

    def serve(self, port=9100, host="", path="/metrics"):
        """Serves text() at http://host:port/path from a daemon thread; returns the port bound
        (port 0: any free one). host "" is every interface, as a pod's IP needs."""
        if self._server is not None:
            raise RuntimeError("drover_progress: already serving on port %d" % self.port)
        if not isinstance(path, str) or not path.startswith("/"):
            raise ValueError("drover_progress: path must start with '/', not %r" % (path,))
        progress = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path.split("?", 1)[0] != path:
                    self.send_error(404, "drover_progress serves %s only" % path)
                    return
                body = progress.text().encode()
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_HEAD = do_GET

            def log_message(self, *args):  # a scrape a period is no news for the job's log
                pass

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, name="drover-progress", daemon=True
        ).start()
        return self.port

    @property
    def port(self):
        return self._server.server_address[1] if self._server else None

    def close(self):
        """Stops serving (the values stay)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


_default = Progress()


def serve(port=9100, host="", path="/metrics"):
    """Serves the module's progress (Progress.serve); returns the port."""
    return _default.serve(port, host, path)


def report(step, loss=None):
    """Records the global step and the loss that serve() serves."""
    _default.report(step, loss)


class KerasCallback:
    """A Keras callback (duck-typed: this module never imports Keras) that reports the global
    step and the batch's loss after every training batch. The step is the optimizer's
    iteration count when the model has one (so it continues after a restore), else the
    batches seen since start (plus start)."""

    _supports_tf_logs = False  # Keras hands plain Python numbers in logs

    def __init__(self, progress=None, start=0):
        self.progress = progress or _default
        self.batches = start
        self.model = None
        self.params = {}

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params

    def _implements_train_batch_hooks(self):
        return True

    def _implements_test_batch_hooks(self):
        return False

    def _implements_predict_batch_hooks(self):
        return False

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1
        step = self.batches
        iterations = getattr(getattr(self.model, "optimizer", None), "iterations", None)
        if iterations is not None:
            step = iterations.numpy() if hasattr(iterations, "numpy") else iterations
        loss = (logs or {}).get("loss")
        self.progress.report(step, loss)

    def __getattr__(self, name):
        """Every other hook Keras calls (on_epoch_end, on_test_begin, ...) does nothing."""
        if name.startswith("on_"):
            return lambda *args, **kwargs: None
        raise AttributeError(name)


class TorchHook:
    """Counts optimizer steps and reports them: call hook.step(loss) after optimizer.step(), or
    register it with optimizer.register_step_post_hook(hook) (the step only; the loss last
    given to step() stays). start: the step a restored checkpoint reached."""

    def __init__(self, progress=None, start=0):
        self.progress = progress or _default
        self.steps = start

    def step(self, loss=None):
        self.steps += 1
        self.progress.report(self.steps, loss)

    def __call__(self, optimizer=None, args=None, kwargs=None):
        self.step()
