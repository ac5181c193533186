"""Pipeline names that the compiled pipeline's targets accept.

TFX's Kubeflow V2 compiler refuses any other pipeline name, for KFP and Vertex AI alike:
``_LEGAL_NAME_PATTERN = re.compile(r'[a-z0-9][a-z0-9-]{0,127}')``, checked with ``fullmatch``
(tfx/orchestration/kubeflow/v2/pipeline_builder.py:36 and :46-50, TFX 1.16 and 1.21), with a
message that does not name the pipeline ("User provided pipeline name % is illegal"). A local
run takes any name; ``tfxline init`` writes one of this pattern, and ``compile`` refuses another
in one line before TFX's traceback.
"""
from __future__ import annotations

import re
from typing import Optional

KFP_PIPELINE_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,127}")


def portable(text: str) -> str:
    """``text`` as a name of that pattern: lowercase, each run of other characters one '-'."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:128].rstrip("-") or "pipeline"


def kfp_name_problem(name: str) -> Optional[str]:
    """None for a name KFP and Vertex AI take; else the one-line refusal, with a fix."""
    if KFP_PIPELINE_NAME.fullmatch(name):
        return None
    fix = portable(name)
    return (f"name {name!r} is not a pipeline name Kubeflow Pipelines or Vertex AI take (lowercase letters, "
            f"digits and '-', starting with a letter or digit, at most 128; TFX's KubeflowV2DagRunner); "
            f"fix: set name: {fix} in the config (or --set name={fix})")
