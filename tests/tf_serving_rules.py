"""TF Serving as a stand-in that fails where ``tensorflow_model_server`` fails, for the
models.config files we write (serving/release.py), replayed in order.

Every rule cites TF Serving's source at commit 9d981c5c2708d23c5407c7c1e30309e6f9798874 (the one
docs/serving.md cites; ``git -C /work/.mirror/tensorflow+serving/repo show HEAD:<file>``), paths
under ``tensorflow_serving/``. What the server does with a --model_config_file:

- at startup (main.cc:342-346 exits when BuildAndStart fails): server.cc:216-217 parses the
  file, ServerCore::Create (model_servers/server_core.cc:260-288) runs ReloadConfig on a server
  with nothing loaded, and the first config waits for its models to load
  (server_core.cc:391, ConnectAdaptersToManagerAndAwaitModelLoads 741-763) *after* the labels
  were checked (server_core.cc:514 before 524);
- on each --model_config_file_poll_wait_seconds poll (server.cc:165-180, 337-350): the file is
  parsed and ReloadConfig runs again; a failure is logged and the server runs on as it was. A
  new *model* is waited for (server_core.cc:438-440); a new *version* of a model it has loads
  later, when the storage path source next polls the file system (its config is only
  replaced, server_core.cc:433; file_system_storage_path_source.cc:377-399, 441-466).

``Server.start`` / ``Server.poll`` replay those two, ``Server.load`` the file-system poll and the
loads that follow, ``Server.request`` what a Predict with a ModelSpec resolves to. A failure
raises ``ServingError`` with TF Serving's own message.
"""
from __future__ import annotations

import os
import re
from typing import Callable, Dict, List, Optional, Set

from google.protobuf import text_format
from tensorflow_serving.config import model_server_config_pb2

TENSORFLOW_PLATFORM = "tensorflow"  # model_servers/model_platform_types.h:22, the one platform
# tensorflow_model_server sets up without --platform_config_file (platform_config_util.cc:33)

# REST paths (model_servers/http_rest_api_util.cc:31-34): a label is addressed as
# /v1/models/<name>/labels/<label>:predict; the body has no ModelSpec, so no version_label there.
PREDICT_PATH = re.compile(r"(?i)/v1/models/([^/:]+)(?:(?:/versions/(\d+))|(?:/labels/([^/:]+)))?:(classify|regress|predict)")
STATUS_PATH = re.compile(r"(?i)/v1/models(?:/([^/:]+))?(?:(?:/versions/(\d+))|(?:/labels/([^/:]+)))?(?:\/(metadata))?")


# tensorflow_model_server's command-line flags (model_servers/main.cc, line of each tensorflow::Flag)
FLAGS = {"port": 88, "grpc_socket_path": 91, "rest_api_port": 95, "rest_api_num_threads": 99,
         "rest_api_timeout_in_ms": 102, "rest_api_enable_cors_support": 104, "enable_batching": 107,
         "allow_version_labels_for_unavailable_models": 109, "batching_parameters_file": 114,
         "enable_per_model_batching_parameters": 119, "model_config_file": 131,
         "model_config_file_poll_wait_seconds": 138, "model_name": 145, "model_base_path": 148,
         "num_load_threads": 151, "num_unload_threads": 157, "max_num_load_retries": 163,
         "load_retry_interval_micros": 168, "file_system_poll_wait_seconds": 173, "flush_filesystem_caches": 182,
         "tensorflow_session_parallelism": 191, "tensorflow_session_config_file": 197,
         "tensorflow_intra_op_parallelism": 205, "tensorflow_inter_op_parallelism": 211, "use_alts_credentials": 217,
         "ssl_config_file": 219, "platform_config_file": 223, "per_process_gpu_memory_fraction": 228,
         "saved_model_tags": 235, "grpc_channel_arguments": 238, "grpc_max_threads": 243, "enable_model_warmup": 245,
         "num_request_iterations_for_warmup": 249, "version": 253, "monitoring_config_file": 254,
         "remove_unused_fields_from_bundle_metagraph": 258, "prefer_tflite_model": 263, "num_tflite_pools": 270,
         "num_tflite_interpreters_per_pool": 276, "enable_signature_method_name_check": 283,
         "xla_cpu_compilation_enabled": 288, "xla_gpu_compilation_enabled": 294, "enable_profiler": 298,
         "thread_pool_factory_config_file": 300, "mixed_precision": 304, "skip_initialize_tpu": 306,
         "enable_grpc_healthcheck_service": 308, "enable_serialization_as_tensor_content": 311}


class ServingError(Exception):
    """What TF Serving returns or logs; ``code`` is its status code's name."""

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code, self.message = code, message


def parse(text: str, path: str = "models.config") -> model_server_config_pb2.ModelServerConfig:
    """util/proto_util.h:27-40 (ParseProtoTextFile): protobuf's text format, all or nothing."""
    config = model_server_config_pb2.ModelServerConfig()
    try:
        text_format.Parse(text, config)
    except text_format.ParseError:
        raise ServingError("INVALID_ARGUMENT", f"Invalid protobuf file: '{path}'") from None
    return config


def _version_number(child: str) -> Optional[int]:
    """file_system_storage_path_source.cc:87-89: absl::SimpleAtoi of the directory name (leading
    and trailing whitespace and a sign allowed, int64 range)."""
    m = re.fullmatch(r"\s*([+-]?\d+)\s*", child)
    if not m or not -2 ** 63 <= int(m.group(1)) < 2 ** 63:
        return None
    return int(m.group(1))


def local_disk(base_path: str) -> Optional[List[str]]:
    """The children of a base path on this machine (None: it does not exist)."""
    return sorted(os.listdir(base_path)) if os.path.isdir(base_path) else None


def aspired(config: model_server_config_pb2.ModelConfig, children: Optional[List[str]]) -> Optional[Set[int]]:
    """The versions the storage path source aspires for one model (None: the poll fails).

    file_system_storage_path_source.cc:257-262: a base path that does not exist fails the poll
    (and with it the whole poll of every model, 445-446: nothing changes); 264-272 and 174-208:
    ``specific`` versions whose directories all exist; else 119-137 index the children by
    version number, and 292-311: no policy or ``latest`` is the newest ``num_versions`` (at
    least 1, 148-149), ``all`` every numbered child, ``specific`` the listed ones found (a
    listed version not on disk is only a warning, 236-244)."""
    if children is None:
        return None
    by_version: Dict[int, str] = {}
    for child in children:
        v = _version_number(child)
        if v is not None:
            by_version[v] = child
    policy = config.model_version_policy
    which = policy.WhichOneof("policy_choice")
    if which == "specific":
        return {v for v in policy.specific.versions if v in by_version}
    if which == "all":
        return set(by_version)
    return set(sorted(by_version)[-max(policy.latest.num_versions, 1):])


class Server:
    """tensorflow_model_server with ``--model_config_file``: its accepted config, its label map,
    what its manager has loaded. ``disk(base_path)``: the children of a base path, None when it
    does not exist. The flags: ``allow_version_labels_for_unavailable_models`` (main.cc:109-113,
    server.cc:322-323); ``force_allow_any_version_labels_for_unavailable_models`` (server.h:62,
    server.cc:324-325; no command-line flag sets it, main.cc:87-314) and ``allow_version_labels``
    (server_core.h:164, true; server.cc never changes it) are ServerCore options."""

    def __init__(self, disk: Callable[[str], Optional[List[str]]] = local_disk,
                 allow_version_labels_for_unavailable_models: bool = False,
                 force_allow_any_version_labels_for_unavailable_models: bool = False,
                 allow_version_labels: bool = True):
        self.disk = disk
        self.allow_unavailable = allow_version_labels_for_unavailable_models
        self.force_allow_unavailable = force_allow_any_version_labels_for_unavailable_models
        self.allow_version_labels = allow_version_labels
        self.config: Optional[model_server_config_pb2.ModelServerConfig] = None  # ServerCore::config_
        self.monitored: Dict[str, model_server_config_pb2.ModelConfig] = {}  # the storage path source's models
        self.labels: Optional[Dict[str, Dict[str, int]]] = None  # model_labels_to_versions_ (null until set)
        self.loaded: Dict[str, Set[int]] = {}  # versions AVAILABLE, by model
        self.ended: Dict[str, Set[int]] = {}  # versions loaded once and unloaded since (state END)
        self.started = False
        self.log: List[str] = []  # the errors a running server logged

    # --- the two ways a config arrives --------------------------------------------------------

    def start(self, text: str, path: str = "models.config") -> None:
        """Startup: any failure stops the server (main.cc:342-346)."""
        assert not self.started, "a server starts once"
        self._reload(parse(text, path))  # server.cc:216-217: an unparsable file fails startup too
        self.started = True

    def poll(self, text: str, path: str = "models.config") -> Optional[ServingError]:
        """One config poll of a running server (server.cc:165-180): an error is logged and
        returned; the server serves on as it was."""
        assert self.started, "start the server first"
        try:
            self._reload(parse(text, path))
        except ServingError as e:
            prefix = ("Failed to read ModelServerConfig file: " if e.message.startswith("Invalid protobuf file")
                      else "PollFilesystemAndReloadConfig failed to ReloadConfig: ")
            self.log.append(prefix + e.message)
            return e
        return None

    def load(self) -> None:
        """The storage path source's next file-system poll and the manager's loads and unloads,
        all done (every aspired version loads; core/availability_preserving_policy.cc:47-88
        unloads the versions no longer aspired). A poll that fails changes nothing
        (file_system_storage_path_source.cc:445-446)."""
        found = {name: aspired(config, self.disk(config.base_path)) for name, config in self.monitored.items()}
        missing = [name for name, versions in found.items() if versions is None]
        if missing:
            config = self.monitored[missing[0]]
            self.log.append(f"FileSystemStoragePathSource encountered a filesystem access error: Could not find base "
                            f"path {config.base_path} for servable {config.name}")
            return
        for name, versions in found.items():
            self.ended.setdefault(name, set()).update(self.loaded.get(name, set()) - versions)
            self.loaded[name] = set(versions)

    # --- ServerCore::ReloadConfig (server_core.cc:476-547) ------------------------------------

    def _reload(self, new: model_server_config_pb2.ModelServerConfig) -> None:
        old_case = self.config.WhichOneof("config") if self.config is not None else None
        new_case = new.WhichOneof("config")
        # 480-496: only ModelConfigList to ModelConfigList (or the first, or the same config)
        if old_case is not None and self.config != new and not (old_case == new_case == "model_config_list"):
            raise ServingError("FAILED_PRECONDITION", "Cannot transition to requested config. It is only legal to "
                                                      "transition from one ModelConfigList to another.")
        if new_case is None:  # 497-502: an empty config takes no action
            return
        if new_case == "custom_model_config":  # server.cc:69-75: LOG(FATAL)
            raise ServingError("FATAL", "ModelServer does not yet support custom model config.")
        configs = list(new.model_config_list.config)
        self._validate_model_config_list(configs)  # 503-506
        if old_case == "model_config_list":  # 507-511
            self._validate_no_models_change_platforms(list(self.config.model_config_list.config), configs)
        self.config = new  # 512: the new config is kept even when what follows fails
        self._update_model_version_label_map(configs)  # 514: labels first ...
        self._add_models(configs)  # 524: ... then the models (not reached when the labels fail)

    @staticmethod
    def _validate_model_config_list(configs) -> None:
        """server_core.cc:117-153: unique names (121-128); every base path absolute or a URI
        (141-149, UriIsRelativePath 109-113; tensorflow_model_server sets no
        model_config_list_root_dir)."""
        names: Set[str] = set()
        for c in configs:
            if c.name in names:
                raise ServingError("INVALID_ARGUMENT", f"Illegal to list model {c.name} multiple times in config list")
            names.add(c.name)
        for c in configs:
            if "://" not in c.base_path and not c.base_path.startswith("/"):
                raise ServingError("INVALID_ARGUMENT", f"Expected model {c.name} to have an absolute path or URI; got "
                                                       f"base_path()={c.base_path}")

    @staticmethod
    def _platform(config) -> str:
        """server_core.cc:78-106 (GetPlatform)."""
        if config.model_type != 0:  # MODEL_TYPE_UNSPECIFIED
            if config.model_platform:
                raise ServingError("INVALID_ARGUMENT", "Illegal setting both ModelServerConfig::model_type (deprecated) "
                                                       f"and ModelServerConfig::model_platform, model name is {config.name}")
            if config.model_type != 1:  # TENSORFLOW
                raise ServingError("INVALID_ARGUMENT", f"ModelServerConfig::model_type choice {config.model_type} "
                                                       "not supported.")
            return TENSORFLOW_PLATFORM
        if not config.model_platform:
            raise ServingError("INVALID_ARGUMENT", "Illegal setting neither ModelServerConfig::model_type (deprecated) "
                                                   f"nor ModelServerConfig::model_platform, model name is {config.name}")
        return config.model_platform

    def _validate_no_models_change_platforms(self, old, new) -> None:
        """server_core.cc:157-182."""
        before = {c.name: self._platform(c) for c in old}
        for c in new:
            if c.name in before and self._platform(c) != before[c.name]:
                raise ServingError("INVALID_ARGUMENT", f"Illegal to change a model's platform. For model {c.name} "
                                                       f"platform was {before[c.name]} and new platform requested is "
                                                       f"{self._platform(c)}")

    def _update_model_version_label_map(self, configs) -> None:
        """server_core.cc:549-614 (UpdateModelVersionLabelMap), against what is loaded *now*.
        A label may name only an AVAILABLE version (574-584), unless
        force_allow_any_version_labels_for_unavailable_models (561-562), or
        allow_version_labels_for_unavailable_models and the label does not already name another
        version (563-572; GetModelVersionForLabel 873-892 fails while the map is unset, as at
        startup). With labels off, any label fails (590-596). The map is replaced only when
        every label passed (610-611)."""
        new_map: Dict[str, Dict[str, int]] = {}
        for c in configs:
            for label, version in sorted(c.version_labels.items()):
                allow_any = self.force_allow_unavailable
                if not allow_any and self.allow_unavailable:
                    existing = (self.labels or {}).get(c.name, {}).get(label)
                    allow_any = not (existing is not None and existing != version)
                if not allow_any and version not in self.loaded.get(c.name, set()):
                    raise ServingError("FAILED_PRECONDITION", f"Request to assign label to version {version} of model "
                                                              f"{c.name}, which is not currently available for inference")
                new_map.setdefault(c.name, {})[label] = version
        if not self.allow_version_labels:
            if new_map:
                raise ServingError("FAILED_PRECONDITION", "Model version labels are not currently allowed by the server.")
            return
        self.labels = new_map

    def _add_models(self, configs) -> None:
        """server_core.cc:367-443 (AddModelsViaModelConfigList): routes by platform (655-671:
        an unknown platform fails); at startup the storage path source is created and every
        model's latest version awaited (375-391, load_servables_fast.cc:76-121: a model with no
        version on disk, or whose base path is missing, is waited for forever); on a reload,
        models that left the config unload at once (file_system_storage_path_source.cc:393-395),
        new models are awaited (server_core.cc:438-440), and a changed version policy takes
        effect at the next file-system poll (``load``)."""
        for c in configs:
            platform = self._platform(c)
            if platform != TENSORFLOW_PLATFORM:
                raise ServingError("INVALID_ARGUMENT", f"Model {c.name} requests unsupported platform {platform}")
        first = not self.monitored
        new_models = [c for c in configs if c.name not in self.monitored]
        for name in set(self.monitored) - {c.name for c in configs}:
            self.loaded.pop(name, None)
        self.monitored = {c.name: c for c in configs}
        for c in (configs if first else new_models):
            versions = aspired(c, self.disk(c.base_path))
            if not versions:
                why = (f"Could not find base path {c.base_path} for servable {c.name}" if versions is None else
                       f"No versions of servable {c.name} found under base path {c.base_path}")
                raise ServingError("WAITS_FOREVER", f"{why}; the server waits for Latest({c.name}) to load")
            self.loaded[c.name] = versions

    # --- requests ------------------------------------------------------------------------------

    def request(self, name: str, label: Optional[str] = None, version: Optional[int] = None) -> int:
        """The version a request with this ModelSpec is served by: server_core.cc:841-871 (a
        label through the label map, 873-892), then the manager's handle
        (core/basic_manager.cc:133-141; manager.h:150-161 names the request)."""
        if label is not None:
            if not self.allow_version_labels:
                raise ServingError("INVALID_ARGUMENT", "ModelSpec has 'version_label' set, but it is not currently "
                                                       "allowed by the server.")
            if self.labels is None:
                raise ServingError("UNAVAILABLE", f"Model labels does not init yet.{label}")
            if label not in self.labels.get(name, {}):
                raise ServingError("INVALID_ARGUMENT", f"Unrecognized servable version label: {label}")
            version = self.labels[name][label]
        loaded = self.loaded.get(name, set())
        if version is None:
            if not loaded:
                raise ServingError("NOT_FOUND", f"Servable not found for request: Latest({name})")
            return max(loaded)
        if version not in loaded:
            raise ServingError("NOT_FOUND", f"Servable not found for request: Specific({name}, {version})")
        return version

    def status(self, name: str) -> Dict:
        """GET /v1/models/<name> (http_rest_api_handler.cc:180-202, get_model_status_impl.cc:94-107,
        apis/get_model_status.proto): every version the manager knows: AVAILABLE once loaded, END
        once unloaded."""
        states = {v: "END" for v in self.ended.get(name, set())}
        states.update({v: "AVAILABLE" for v in self.loaded.get(name, set())})
        if not states:
            raise ServingError("NOT_FOUND", f"Could not find any versions of model {name}")
        return {"model_version_status": [{"version": str(v), "state": states[v],
                                          "status": {"error_code": "OK", "error_message": ""}} for v in sorted(states)]}
