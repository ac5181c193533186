"""How a class folder's ``tfxline init`` ends (cli/init_images.py, cli/init_text_folder.py): the
config checked to load as written, before anything is; the decisions printed one a line; the
schema and the config written; the next command named."""
from __future__ import annotations

from typing import Sequence, TextIO


def write_project(config: str, schema: str, decisions: Sequence[str], config_path: str, schema_path: str,
                  stream: TextIO, write_text) -> None:
    import yaml

    from tfxline.pipeline.config.load import config_from_dict

    config_from_dict(yaml.safe_load(config))  # loads as written, before anything is
    for line in decisions:
        print(line, file=stream)
    write_text(schema_path, schema)
    write_text(config_path, config)
    print(f"wrote {config_path} and {schema_path}; next: tfxline run --config {config_path}", file=stream, flush=True)
