"""TF Serving's rules for a models.config (tests/tf_serving_rules.py, each citing TF Serving's
source at 9d981c5c), then every release transition (serving/release.py) replayed
through them: a server polling the file from the first push on, and a server started on each file,
with and without --allow_version_labels_for_unavailable_models. The replay fails on the release
as it was before the two phases (one write moved ``stable`` onto a version not loaded yet)."""
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tfxline.serving import push as sp
from tfxline.serving import release as sr
from tests.conftest import ROOT
from tests.test_rollback import run_cli
from tests.tf_serving_rules import FLAGS, PREDICT_PATH, STATUS_PATH, Server, ServingError, parse

SETTINGS = sr.Settings(model_name="taxi", batch_threads=2)
UNAVAILABLE = "Request to assign label to version {} of model taxi, which is not currently available for inference"


def config(base, versions=(), labels=None, name="taxi", extra=""):
    policy = ("model_version_policy { specific { " + " ".join(f"versions: {v}" for v in versions) + " } }"
              if versions else "")
    label_text = " ".join(f'version_labels {{ key: "{k}" value: {v} }}' for k, v in (labels or {}).items())
    return (f'model_config_list {{ config {{ name: "{name}" base_path: "{base}" model_platform: "tensorflow" '
            f"{policy} {label_text} {extra} }} }}")


@pytest.fixture
def base(tmp_path):
    d = tmp_path / "taxi"
    for v in (1, 2, 3):
        (d / str(v)).mkdir(parents=True)
    (d / ".tmp-4-99").mkdir()  # a push in progress is no version (its name is no number)
    return str(d)


# --- the rules ------------------------------------------------------------------------------------

def test_a_label_at_startup_needs_the_flag(base):
    """server_core.cc:514 checks the labels before 524 loads anything: at startup nothing is loaded."""
    with pytest.raises(ServingError) as e:
        Server().start(config(base, [1], {"stable": 1}))
    assert (e.value.code, e.value.message) == ("FAILED_PRECONDITION", UNAVAILABLE.format(1))
    server = Server(allow_version_labels_for_unavailable_models=True)
    server.start(config(base, [1], {"stable": 1}))
    assert server.request("taxi", label="stable") == 1 and server.loaded == {"taxi": {1}}
    started = Server()
    started.start(config(base, [1]))  # no label: it starts, and loads version 1 before it serves
    assert started.request("taxi") == 1


def test_a_poll_moves_a_label_only_onto_a_loaded_version(base):
    for flag in (False, True):  # the flag allows a *new* label only (server_core.cc:563-572)
        server = Server(allow_version_labels_for_unavailable_models=flag)
        server.start(config(base, [1]))
        assert server.poll(config(base, [1], {"stable": 1})) is None
        error = server.poll(config(base, [2], {"stable": 2}))  # the one-write move
        assert error.message == UNAVAILABLE.format(2)
        server.load()
        assert server.loaded == {"taxi": {1}}  # nothing of the failed config was applied: 2 never loads ...
        assert server.poll(config(base, [2], {"stable": 2})).message == UNAVAILABLE.format(2)  # ... so every poll fails
        assert server.request("taxi", label="stable") == 1  # the old labels serve on
        assert server.poll(config(base, [1, 2], {"stable": 1})) is None  # phase 1: load 2, labels stay
        assert server.request("taxi", label="stable") == 1
        server.load()
        assert server.poll(config(base, [2], {"stable": 2})) is None  # phase 2: 2 is loaded
        assert server.request("taxi", label="stable") == 2
        server.load()
        assert server.loaded == {"taxi": {2}} and server.status("taxi")["model_version_status"] == [
            {"version": "1", "state": "END", "status": {"error_code": "OK", "error_message": ""}},
            {"version": "2", "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}}]


def test_the_flag_allows_a_new_label_on_a_version_still_loading(base):
    server = Server(allow_version_labels_for_unavailable_models=True)
    server.start(config(base, [1], {"stable": 1}))
    assert server.poll(config(base, [1, 2], {"stable": 1, "canary": 2})) is None
    with pytest.raises(ServingError, match=r"Servable not found for request: Specific\(taxi, 2\)"):
        server.request("taxi", label="canary")  # named before it loaded: its requests fail meanwhile
    server.load()
    assert server.request("taxi", label="canary") == 2
    forced = Server(force_allow_any_version_labels_for_unavailable_models=True)  # server.h:62, no flag sets it
    forced.start(config(base, [1], {"stable": 1}))
    assert forced.poll(config(base, [2], {"stable": 2})) is None


@pytest.mark.parametrize("text, code, message", [
    ('model_config_list { config { name: "taxi" base_path: "/m" model_platform: "tensorflow" } '
     'config { name: "taxi" base_path: "/n" model_platform: "tensorflow" } }',
     "INVALID_ARGUMENT", "Illegal to list model taxi multiple times in config list"),
    (config("models/taxi", [1]), "INVALID_ARGUMENT",
     "Expected model taxi to have an absolute path or URI; got base_path()=models/taxi"),
    (config("/m", [1]).replace('model_platform: "tensorflow"', ""), "INVALID_ARGUMENT",
     "Illegal setting neither ModelServerConfig::model_type (deprecated) nor ModelServerConfig::model_platform, "
     "model name is taxi"),
    (config("/m", [1]).replace('model_platform: "tensorflow"', 'model_platform: "tflite"'), "INVALID_ARGUMENT",
     "Model taxi requests unsupported platform tflite"),
    (config("/m", [1]).replace("model_config_list", "model_config_lst"), "INVALID_ARGUMENT",
     "Invalid protobuf file: 'models.config'"),
])
def test_what_else_fails_a_config(text, code, message):
    with pytest.raises(ServingError) as e:
        Server(allow_version_labels_for_unavailable_models=True).start(text)
    assert (e.value.code, e.value.message) == (code, message)


def test_a_platform_cannot_change_and_labels_can_be_off(base):
    server = Server()
    server.start(config(base, [1]))
    error = server.poll(config(base, [1]).replace('"tensorflow"', '"tflite"'))
    assert error.message == "Illegal to change a model's platform. For model taxi platform was tensorflow and new " \
                            "platform requested is tflite"
    off = Server(allow_version_labels=False)
    off.start(config(base, [1]))
    assert off.poll(config(base, [1], {"stable": 1})).message == "Model version labels are not currently allowed by " \
                                                                 "the server."


def test_versions_the_policy_loads(base, tmp_path):
    server = Server()
    server.start(config(base))  # no policy: the latest one (file_system_storage_path_source.cc:292-299)
    assert server.loaded == {"taxi": {3}}
    server.poll(config(base, extra="model_version_policy { all {} }"))
    server.load()
    assert server.loaded == {"taxi": {1, 2, 3}}
    server.poll(config(base, [2, 7]))  # 7 is not on disk: a warning, not loaded
    server.load()
    assert server.loaded == {"taxi": {2}}
    with pytest.raises(ServingError, match="No versions of servable other found under base path"):
        Server().start(config(str(tmp_path), [1], name="other"))  # startup waits for it for ever
    server.poll(config(str(tmp_path / "gone"), [2]))
    server.load()  # a base path that vanished fails the file-system poll: nothing unloads
    assert server.loaded == {"taxi": {2}} and "Could not find base path" in server.log[-1]


# --- our release through them ---------------------------------------------------------------------

class Recorder:
    """A serving directory driven through every transition; each models.config written goes to
    ``seen(step name, text)`` at once (the server reads it with the disk as it is then) and into
    ``configs``."""

    def __init__(self, model_files, serving_dir, seen=lambda step, text: None):
        self.model_files, self.d, self.seen, self.configs, self.now = model_files, serving_dir, seen, [], 100

    def record(self, step):
        with open(os.path.join(sr.release_dir(self.d), sr.MODELS_CONFIG)) as f:
            text = f.read()
        if not self.configs or self.configs[-1][1] != text:
            self.configs.append((step, text))
            self.seen(step, text)

    def push(self, mode, keep=5):
        self.now += 1
        v = sp.push(self.model_files, self.d, {"model_uri": f"m{self.now}"}, keep, now=self.now,
                    protect=sr.read(self.d).labelled)
        sr.on_push(self.d, v, mode, 10, SETTINGS)
        self.record(f"{mode} push {v} (phase 1)")
        return v

    def settle(self, step):
        sr.settle(self.d, SETTINGS)
        self.record(f"{step} (phase 2)")


def every_transition(model_files, d, seen):
    r = Recorder(model_files, d, seen)
    v1 = r.push("stable")  # the first push
    r.settle("first push")
    r.push("stable")
    r.settle("stable push")
    canary = r.push("canary")
    r.settle("canary push")
    sr.promote(d, SETTINGS)
    r.record("promote (one write: both loaded)")
    sr.canary(d, v1, 20, SETTINGS)  # an older version, not loaded now
    r.record("canary (phase 1)")
    r.settle("canary")
    from tfxline.runs import versions as serving
    current, target = serving.rollback_target(d, None)
    new, _, restored = sp.rollback(d, 5, to=target, current=current, protect=sr.read(d).labelled)
    sr.on_rollback(d, new, restored, SETTINGS)
    r.record("rollback (phase 1)")
    r.settle("rollback")
    r.push("stable", keep=1)  # prunes every version no label names
    r.record("prune")
    r.settle("push with pruning")
    assert canary not in sp.versions(d) and sp.versions(d) == [new, sr.read(d).stable]  # pruned, and unloaded before
    return r.configs


def serves_its_labels(server, text, step):
    """Every label of the config names a version the server has loaded (a request by label works)."""
    (model,) = parse(text).model_config_list.config
    for label, version in model.version_labels.items():
        assert server.request("taxi", label=label) == version, step


@pytest.mark.parametrize("flag", [False, True], ids=["no flag", "allow_version_labels_for_unavailable_models"])
def test_every_transition_is_accepted_by_a_polling_server(model_files, tmp_path, flag):
    server = Server(allow_version_labels_for_unavailable_models=flag)

    def poll(step, text):
        if not server.started:  # the first push's phase 1: no label yet, so it starts without the flag
            server.start(text)
            return
        error = server.poll(text)
        assert error is None, f"{step}: {error}\n{text}"
        serves_its_labels(server, text, step)  # before the loads ...
        server.load()  # (what --server waits for before phase 2)
        serves_its_labels(server, text, step)  # ... and after, with the versions no label names unloaded
        assert server.loaded["taxi"] == set(parse(text).model_config_list.config[0].model_version_policy
                                            .specific.versions), step
    configs = every_transition(model_files, str(tmp_path / "taxi"), poll)
    assert server.log == []
    assert [step.split(" ")[:2] for step, _ in configs] == [
        ["stable", "push"], ["first", "push"], ["stable", "push"], ["stable", "push"], ["canary", "push"],
        ["canary", "push"], ["promote", "(one"], ["canary", "(phase"], ["canary", "(phase"], ["rollback", "(phase"],
        ["rollback", "(phase"], ["stable", "push"], ["push", "with"]]  # each phase 1, phase 2; promote once


@pytest.mark.parametrize("flag", [False, True], ids=["no flag", "allow_version_labels_for_unavailable_models"])
def test_a_server_starts_on_every_file_with_the_flag(model_files, tmp_path, flag):
    """Started on any of them: with the flag it starts and serves its labels; without it, any
    labelled file fails startup with TF Serving's message (so docs/serving.md's command has it)."""
    def start(step, text):
        server = Server(allow_version_labels_for_unavailable_models=flag)
        labelled = dict(parse(text).model_config_list.config[0].version_labels)
        if flag or not labelled:
            server.start(text)
            serves_its_labels(server, text, step)
        else:
            with pytest.raises(ServingError, match="which is not currently available for inference"):
                server.start(text)
    every_transition(model_files, str(tmp_path / "taxi"), start)


# --- --server: TF Serving's model status, from a stand-in that polls the real file ------------------

class FakeTFServing:
    """GET /v1/models/<name> from ``Server``: each request first polls models.config (as
    --model_config_file_poll_wait_seconds would), answers, then lets the loads finish."""

    def __init__(self, config_path):
        self.server = Server(allow_version_labels_for_unavailable_models=True)
        with open(config_path) as f:
            self.server.start(f.read())
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                with open(config_path) as f:
                    fake.server.poll(f.read())
                try:
                    body, code = fake.server.status(STATUS_PATH.fullmatch(self.path).group(1)), 200
                except ServingError as e:
                    body, code = {"error": e.message}, 404
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                fake.server.load()

            def log_message(self, *args):
                pass
        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()


def test_a_move_with_server_waits_for_the_version_then_settles(model_files, tmp_path, capsys):
    out_root = tmp_path / "out"
    d = str(out_root / "serving" / "taxi")
    r = Recorder(model_files, d)
    v1 = r.push("stable")
    fake = FakeTFServing(os.path.join(sr.release_dir(d), sr.MODELS_CONFIG))
    try:
        code, out, err = run_cli(["serving", "settle", "--server", fake.url, "--output", str(out_root)], capsys)
        assert (code, err) == (0, "") and out.startswith(f"settled: push: stable {v1} (TF Serving at {fake.url} has "
                                                         f"version {v1} AVAILABLE)")
        v2 = r.push("stable")
        code, out, err = run_cli(["serving", "rollback", "--to", str(v2), "--server", fake.url, "--timeout", "30",
                                  "--output", str(out_root)], capsys)  # v2 pending is what the release serves
        assert code == 2 and "holds the model serving now" in err
        code, out, err = run_cli(["serving", "settle", "--server", fake.url, "--output", str(out_root)], capsys)
        assert code == 0 and f"settled: push: stable {v2}" in out
        fake.server.poll(open(os.path.join(sr.release_dir(d), sr.MODELS_CONFIG)).read())
        assert fake.server.request("taxi", label="stable") == v2 and fake.server.log == []
        code, out, err = run_cli(["serving", "canary", str(v1), "--percent", "5", "--server", "http://127.0.0.1:9",
                                  "--output", str(out_root)], capsys)
        assert code == 1 and err.startswith("error: cannot read TF Serving's model status at http://127.0.0.1:9/v1/"
                                            "models/taxi") and len(err.splitlines()) == 1
        assert sr.read(d).pending["event"] == "canary"  # phase 1 is written; it stays pending
    finally:
        fake.http.shutdown()


# --- docs/serving.md: the command line and the REST path ----------------------------------------

def documented_command():
    text = open(os.path.join(ROOT, "docs", "serving.md")).read()
    block = text[text.index("tensorflow_model_server --"):]
    block = block[:block.index("```")].replace("\\\n", " ")
    flags = {}
    for word in block.split()[1:]:
        name, _, value = word[2:].partition("=")
        flags[name] = value
    return text, flags


def test_the_documented_command_line_is_tf_servings_and_names_the_files_written(model_files, tmp_path):
    """Every flag exists (model_servers/main.cc at 9d981c5c); the ones the release relies on are
    there; each file flag names a file the release writes, under the base path docs/serving.md
    mounts the directory at."""
    text, flags = documented_command()
    assert set(flags) <= set(FLAGS), set(flags) - set(FLAGS)
    assert {"model_config_file", "model_config_file_poll_wait_seconds", "allow_version_labels_for_unavailable_models",
            "enable_batching", "batching_parameters_file", "monitoring_config_file", "rest_api_port"} <= set(flags)
    assert int(flags["model_config_file_poll_wait_seconds"]) > 0  # 0 reads the file once (main.cc:138-144)
    assert flags["allow_version_labels_for_unavailable_models"] == ""  # a bool flag given bare is true
    base = "/models/taxi"
    assert f"serving.tf_serving_base_path: {base}`" in text and f'-v "$PWD/output/serving/taxi:{base}"' in text
    d = str(tmp_path / "taxi")
    v = sp.push(model_files, d, {}, keep_versions=5, now=100)
    settings = sr.Settings(model_name="taxi", base_path=base)
    sr.on_push(d, v, "stable", 10, settings)
    written = set(os.listdir(sr.release_dir(d)))
    for flag in ("model_config_file", "batching_parameters_file", "monitoring_config_file"):
        folder, name = os.path.split(flags[flag])
        assert folder == f"{base}/{sr.LINK}" and name in written, flag
    (model,) = parse(open(os.path.join(sr.release_dir(d), sr.MODELS_CONFIG)).read()).model_config_list.config
    assert model.base_path == base


def test_the_documented_rest_paths_are_tf_servings():
    text, _ = documented_command()
    assert "`POST /v1/models/taxi/labels/canary:predict`" in text and "`/labels/stable:predict`" in text
    for label in ("canary", "stable"):
        path = f"/v1/models/taxi/labels/{label}:predict"
        assert PREDICT_PATH.fullmatch(path).groups() == ("taxi", None, label, "predict")
    assert '"version_label"' not in text  # no REST body carries it
