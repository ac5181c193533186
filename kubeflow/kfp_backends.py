"""The Kubeflow Pipelines backend releases ``tfxline run-compiled`` stands in for (``KFP_VERSIONS``;
``run-compiled --kfp-version``, default the newest), and what each one's driver and launcher put
in a task's ExecutorInput and container (``Backend``), read from kubeflow/pipelines at the tags
each property cites (docs/kubeflow.md has the table; kubeflow/launcher.py does the rest)."""
from __future__ import annotations

import dataclasses
import re
from typing import Tuple

from tfxline.kubeflow.spec import SpecError

# The backend releases tagged in kubeflow/pipelines (after 2.5.0 the next is 2.14.0).
KFP_VERSIONS = ("2.0", "2.1", "2.2", "2.3", "2.4", "2.5", "2.14", "2.15", "2.16", "2.17")
NEWEST = KFP_VERSIONS[-1]


class UnsupportedSpec(SpecError):
    """The compiled spec uses a KFP feature that run-compiled's launcher does not implement."""


@dataclasses.dataclass(frozen=True)
class Backend:
    """What one KFP backend release's driver and launcher put in an ExecutorInput."""

    version: str

    @property
    def _v(self) -> Tuple[int, int]:
        major, minor = self.version.split(".")
        return int(major), int(minor)

    @property
    def store_session_info(self) -> bool:
        """RecordArtifact adds ``store_session_info`` (client.go:924-931 at 2.3.0; none at 2.2.0)."""
        return self._v >= (2, 3)

    @property
    def output_uri_salt(self) -> bool:
        """A random directory between the task and the output key (driver.go:1588 at 2.4.0;
        ``[taskName, name]`` at 2.3.0:1242)."""
        return self._v >= (2, 4)

    @property
    def executor_logs(self) -> bool:
        """The ``executor-logs`` output (driver.go:2031 at 2.5.0; absent at 2.4.1). Added when
        publish_logs is "true": the driver's flag default (cmd/driver/main.go:85 at 2.5.0, :102
        at 2.17.0), PUBLISH_LOGS "true" in manifests/kustomize/base/pipeline/
        ml-pipeline-apiserver-deployment.yaml (:24 at 2.5.0, :114 at 2.17.0), and at HEAD the
        compiler's own default (argocompiler/container.go:144-149)."""
        return self._v >= (2, 5)

    @property
    def output_names_and_task_root_file(self) -> bool:
        """Output artifacts named by their key and the output file under the task's local root
        (driver.go:700 and :720 at 2.15.0; :783 and :803 at 2.17.0; neither at 2.14.0)."""
        return self._v >= (2, 15)

    @property
    def drops_capabilities(self) -> bool:
        """The user's container runs with every capability dropped and no privilege escalation
        (argocompiler/security_context.go:92-121 and :163-174, applied at container.go:568, all at
        2.16.0; no security context at 2.15.0). Its user stays the image's (runAsNonRoot is not
        set on executor containers unless an admin default says so)."""
        return self._v >= (2, 16)

    @property
    def logs_retry_suffix(self) -> bool:
        """The launcher appends the retry index to executor-logs' URI before the command runs
        (qualifyExecutorLogsForRetry, launcher_v2.go:420, :538-604 at 2.17.0; default "0" at :595)."""
        return self._v >= (2, 17)


def backend(version: str = NEWEST) -> Backend:
    """The Backend of a release named like ``2.17``, ``2.17.0`` or ``2.4.1``."""
    m = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\d+)?", str(version).strip())
    name = f"{m.group(1)}.{m.group(2)}" if m else ""
    if name not in KFP_VERSIONS:
        raise UnsupportedSpec(
            f"--kfp-version {version}: not a Kubeflow Pipelines backend release this launcher knows; "
            f"use one of {', '.join(KFP_VERSIONS)} (the installed cluster's, e.g. 2.17; 2.5 and later add "
            "the executor-logs output)")
    return Backend(name)
