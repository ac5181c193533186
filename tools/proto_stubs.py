"""Type stubs for the protobuf modules the product code imports (issue #74), for pyright.

A ``*_pb2`` module builds its message classes at import time from a serialized descriptor, so a
static checker sees none of them (``"Schema" is not a known attribute of module ...schema_pb2``).
This writes, from the descriptors of the venv's own installed modules (so a stack's protos are
described as that stack has them), one ``.pyi`` per module in the style of mypy-protobuf: each
message a ``google.protobuf.message.Message`` subclass with its fields typed (repeated fields as
typeshed's containers, maps as its maps, message fields read-only, as protobuf enforces), its
keyword-only constructor, nested messages and enums, and each enum's values as ints.

Modules with stubs of their own are left alone: ``google.protobuf``'s and TensorFlow's (typeshed,
bundled with pyright), and any package that ships a ``.pyi`` beside its module.

    .venv/bin/python tools/proto_stubs.py OUT_DIR   (tools/lint.sh writes .roots/pyright-stubs,
                                                     pyproject.toml's [tool.pyright] stubPath)
"""
from __future__ import annotations

import ast
import importlib
import keyword
import os
import pathlib
import sys
from typing import Dict, Iterable, List, Set

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from measures import product_files  # noqa: E402 - tools/ is not a package

# Stubs pyright already has (typeshed's protobuf and tensorflow stubs).
TYPED_ELSEWHERE = ("google.protobuf.", "tensorflow.")
SCALARS = {1: "builtins.float", 2: "builtins.float", 3: "builtins.int", 4: "builtins.int", 5: "builtins.int",
           6: "builtins.int", 7: "builtins.int", 8: "builtins.bool", 9: "builtins.str", 12: "builtins.bytes",
           13: "builtins.int", 14: "builtins.int", 15: "builtins.int", 16: "builtins.int", 17: "builtins.int",
           18: "builtins.int"}
TYPE_MESSAGE, TYPE_GROUP, TYPE_ENUM, LABEL_REPEATED = 11, 10, 14, 3
CONTAINERS = "google.protobuf.internal.containers"


def imported_pb2_modules() -> Set[str]:
    """The ``*_pb2`` modules the product files import, by their full names."""
    found: Set[str] = set()
    for path in product_files():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.endswith("_pb2"))
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module.endswith("_pb2"):
                    found.add(node.module)
                found.update(f"{node.module}.{a.name}" for a in node.names if a.name.endswith("_pb2"))
    return found


def module_of(file_descriptor) -> str:
    return file_descriptor.name[:-len(".proto")].replace("/", ".").replace("-", "_") + "_pb2"


def with_dependencies(names: Iterable[str]) -> Dict[str, object]:
    """Each module by name with every module its descriptors depend on, transitively."""
    modules: Dict[str, object] = {}
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in modules:
            continue
        module = importlib.import_module(name)
        modules[name] = module
        todo.extend(module_of(d) for d in module.DESCRIPTOR.dependencies)
    return modules


def needs_stub(name: str, module) -> bool:
    if name.startswith(TYPED_ELSEWHERE):
        return False
    source = getattr(module, "__file__", None) or ""
    return not (source and os.path.exists(os.path.splitext(source)[0] + ".pyi"))


class Writer:
    """One module's stub text."""

    def __init__(self, module_name: str, file_descriptor):
        self.module = module_name
        self.file = file_descriptor
        self.imports: Set[str] = set()
        self.lines: List[str] = []

    def type_name(self, descriptor) -> str:
        """A message's or enum's name as this stub refers to it: nested names with their outer ones,
        prefixed by their module where it is another file's."""
        parts = [descriptor.name]
        outer = descriptor.containing_type
        while outer is not None:
            parts.insert(0, outer.name)
            outer = outer.containing_type
        if descriptor.file.name == self.file.name:
            return "global___" + ".".join(parts)
        other = module_of(descriptor.file)
        self.imports.add(other)
        return f"{other}.{'.'.join(parts)}"

    def value_type(self, field) -> str:
        if field.type in (TYPE_MESSAGE, TYPE_GROUP):
            return self.type_name(field.message_type)
        if field.type == TYPE_ENUM:
            return "builtins.int"
        return SCALARS[field.type]

    def field(self, field, pad: str) -> tuple:
        """(the field's declaration lines, its constructor argument)."""
        repeated = field.label == LABEL_REPEATED
        message = field.type in (TYPE_MESSAGE, TYPE_GROUP)
        if repeated and message and field.message_type.GetOptions().map_entry:
            key, value = field.message_type.fields_by_name["key"], field.message_type.fields_by_name["value"]
            kind = "MessageMap" if value.type in (TYPE_MESSAGE, TYPE_GROUP) else "ScalarMap"
            held = f"{CONTAINERS}.{kind}[{self.value_type(key)}, {self.value_type(value)}]"
            arg = f"typing.Mapping[{self.value_type(key)}, {self.value_type(value)}]"
        elif repeated:
            kind = "RepeatedCompositeFieldContainer" if message else "RepeatedScalarFieldContainer"
            held = f"{CONTAINERS}.{kind}[{self.value_type(field)}]"
            arg = f"typing.Iterable[{self.value_type(field)}]"
        else:
            held = self.value_type(field)
            arg = held + (" | builtins.str" if field.type == TYPE_ENUM else "")
        if message or repeated:  # protobuf refuses assignment to these: read-only here too
            lines = [f"{pad}@property", f"{pad}def {field.name}(self) -> {held}: ..."]
        else:
            lines = [f"{pad}{field.name}: {held}"]
        return lines, f"{field.name}: {arg} | None = ..."

    def enum(self, enum, pad: str) -> List[str]:
        out = [f"{pad}class {enum.name}:"]
        for value in enum.values:
            out.append(f"{pad}    {value.name}: typing.ClassVar[builtins.int]")
        out += [f"{pad}    DESCRIPTOR: typing.ClassVar[google.protobuf.descriptor.EnumDescriptor]",
                f"{pad}    @classmethod",
                f"{pad}    def Name(cls, number: builtins.int) -> builtins.str: ...",
                f"{pad}    @classmethod",
                f"{pad}    def Value(cls, name: builtins.str) -> builtins.int: ...",
                f"{pad}    @classmethod",
                f"{pad}    def keys(cls) -> builtins.list[builtins.str]: ...",
                f"{pad}    @classmethod",
                f"{pad}    def values(cls) -> builtins.list[builtins.int]: ...",
                f"{pad}    @classmethod",
                f"{pad}    def items(cls) -> builtins.list[builtins.tuple[builtins.str, builtins.int]]: ..."]
        return out

    def message(self, message, pad: str) -> List[str]:
        out = [f"{pad}class {message.name}(google.protobuf.message.Message):",
               f"{pad}    DESCRIPTOR: google.protobuf.descriptor.Descriptor"]
        for nested in message.nested_types:
            if not nested.GetOptions().map_entry:
                out += self.message(nested, pad + "    ")
        for enum in message.enum_types:  # its values are names of the enclosing scope too (C++ scoping)
            out += self.enum(enum, pad + "    ")
            out += [f"{pad}    {value.name}: typing.ClassVar[builtins.int]" for value in enum.values]
        args = []
        for field in message.fields:
            if keyword.iskeyword(field.name):
                continue
            lines, arg = self.field(field, pad + "    ")
            out += lines
            args.append(arg)
        out.append(f"{pad}    def __init__(self, *, {', '.join(args)}) -> None: ..." if args
                   else f"{pad}    def __init__(self) -> None: ...")
        return out

    def text(self) -> str:
        body: List[str] = []
        for message in self.file.message_types_by_name.values():
            body += self.message(message, "")
            body.append(f"global___{message.name} = {message.name}")
        for enum in self.file.enum_types_by_name.values():
            body += self.enum(enum, "")
            body += [f"{value.name}: builtins.int" for value in enum.values]
        head = [f'"""Generated by tools/proto_stubs.py from {self.file.name}; do not edit."""',
                "import builtins", "import typing", "", "import google.protobuf.descriptor",
                "import google.protobuf.internal.containers", "import google.protobuf.message"]
        head += [f"import {name}" for name in sorted(self.imports - {self.module})]
        return "\n".join(head + ["", "DESCRIPTOR: google.protobuf.descriptor.FileDescriptor", ""] + body) + "\n"


def write(out: pathlib.Path) -> List[str]:
    written = []
    for name, module in sorted(with_dependencies(imported_pb2_modules()).items()):
        if not needs_stub(name, module):
            continue
        path = out.joinpath(*name.split(".")).with_suffix(".pyi")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(Writer(name, module.DESCRIPTOR).text())
        written.append(name)
    return written


def main(argv: List[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[-2].strip(), file=sys.stderr)
        return 2
    out = pathlib.Path(argv[0])
    if out.exists():
        import shutil
        shutil.rmtree(out)
    written = write(out)
    print(f"proto stubs: {len(written)} modules in {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
