"""A folder of .txt files, one sub-folder per class, without a pipeline run (issue #72, item 2): the
folder walk TextExampleGen shares with ImageExampleGen, its examples and splits, the pre-flight
refusals (no class folders, no .txt files, one class, a byte that is not UTF-8, a label the classes
do not fit), the config's rules for data.format text, `tfxline init` on such a folder and
`tfxline predict`'s reading of a folder or a CSV of paths. tests/test_text_folder_e2e.py runs init
-> run -> predict on a folder."""
import os

import pytest
import yaml

from tests.example_gen_runs import run_example_gen
from tests.text_folder_data import text_folder
from tfxline.cli import main as cli
from tfxline.components import folder_example_gen, text_example_gen, text_files
from tfxline.pipeline.config import ConfigError
from tfxline.pipeline.config.load import config_from_dict, load_config
from tfxline.pipeline.data import source as data_source
from tfxline.pipeline.data import texts
from tfxline.pipeline.data.check import DataError, csv_lines


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("docs")
    text_folder(str(root), per_class=40, copies=3)
    return str(root)


def files_of(root):
    return data_source.locate(root, "text").files


# ---- the folder walk and the examples -------------------------------------------------------

def test_the_walk_reads_txt_files_with_their_folders_class_and_counts_the_others(folder):
    found = folder_example_gen.matching_files(folder, "*/*")
    entries, ignored = folder_example_gen.class_entries(found, text_files.is_text_name)
    assert found == sorted(found) and len(entries) == 3 * 40 + 3
    assert {label for _, label, _ in entries} == {"praise", "complaint", "question"}
    assert all(path.endswith(".txt") and os.path.basename(os.path.dirname(path)) == label
               for path, label, _ in entries)
    assert [os.path.basename(p) for p in ignored] == ["README.md"]  # the hidden .DS_Store skipped, as glob skips it


def test_the_examples_hold_each_files_text_and_class_and_copies_share_a_split(folder, tmp_path):
    config = text_example_gen.custom_config("review", "kind")
    out, examples = run_example_gen(text_example_gen.Executor, folder, tmp_path / "out", "*/*", config)
    where = {}
    for split, got in out.items():
        for e in got:
            text = e.features.feature["review"].bytes_list.value[0].decode()
            where.setdefault(text, set()).add(split)
            assert e.features.feature["kind"].bytes_list.value[0] in (b"praise", b"complaint", b"question")
    assert sum(len(v) for v in out.values()) == 3 * 40 + 3 and all(out.values())
    with open(os.path.join(folder, "praise", "0000.txt"), encoding="utf-8") as f:
        assert f.read() in where  # the file's text as written
    assert len(where) == 3 * 40 and all(len(s) == 1 for s in where.values())  # the 3 copies: in their original's split
    assert examples.get_int_custom_property("ignored_files") == 1
    assert examples.get_string_custom_property("folder_files") == ".txt files"


def test_the_run_summary_says_what_the_ignored_files_are_not():
    from ml_metadata.proto import metadata_store_pb2

    from tfxline.runs.summary import image_files_line

    def props(**values):
        out = {}
        for k, v in values.items():
            out[k] = metadata_store_pb2.Value(**({"int_value": v} if isinstance(v, int) else {"string_value": v}))
        return out

    assert image_files_line(props(ignored_files=2, folder_files=".txt files")) == \
        "2 file(s) that are not .txt files ignored"
    assert image_files_line(props(ignored_files=1)) == "1 file(s) that are not images ignored"  # older examples


# ---- the pre-flight check -------------------------------------------------------------------

def test_the_check_reads_the_classes_documents_and_copies(folder):
    seen = texts.check(files_of(folder), folder)
    assert seen.counts == {"complaint": 40, "praise": 43, "question": 40}
    assert seen.duplicates == 3 and seen.empty == 0 and len(seen.texts) == len(seen.documents)


def test_a_folder_without_class_folders_is_refused_with_the_fix(tmp_path):
    (tmp_path / "a.txt").write_text("loose")
    with pytest.raises(DataError, match="holds no class folders with files in them; put each class's files in a "
                                        r"sub-folder named for the class \(e.g. pos/1.txt, neg/2.txt\)"):
        files_of(str(tmp_path))


def test_class_folders_without_txt_files_or_one_class_are_refused(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "notes.md").write_text("no")
    with pytest.raises(DataError, match=r"sub-folders hold no .txt files \(1 other file\(s\): notes.md\); put each"):
        texts.check(files_of(str(tmp_path)), str(tmp_path))
    (tmp_path / "a" / "1.txt").write_text("one document")
    with pytest.raises(DataError, match=r"holds one class folder \(a\); a classifier needs two or more"):
        texts.check(files_of(str(tmp_path)), str(tmp_path))
    # a class folder left empty (or holding only a README) beside others: named, not silently dropped
    # (a new user's literature/ folder vanished from the classes without a word)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "2.txt").write_text("another document")
    (tmp_path / "literature").mkdir()
    (tmp_path / "poems").mkdir()
    (tmp_path / "poems" / "README.md").write_text("to do")
    with pytest.raises(DataError, match=r": class folder\(s\) literature, poems hold no .txt files; add the class's"):
        texts.check(files_of(str(tmp_path)), str(tmp_path))


def test_a_file_that_is_not_utf8_is_named_with_its_line_and_byte(tmp_path):
    for c in ("pos", "neg"):
        (tmp_path / c).mkdir()
        (tmp_path / c / "1.txt").write_text("fine\n")
    (tmp_path / "neg" / "2.txt").write_bytes(b"\xef\xbb\xbfa first line\ncaf\xe9 au lait\n")  # Latin-1 after a BOM
    path = str(tmp_path / "neg" / "2.txt")
    with pytest.raises(DataError) as e:
        texts.check(files_of(str(tmp_path)), str(tmp_path))
    assert str(e.value) == (f"{path} line 2 byte 4 (0xe9) is not UTF-8; save the file as UTF-8 (from Latin-1 / "
                            "Windows-1252: iconv -f cp1252 -t utf-8 IN > OUT)")
    csv_path = tmp_path / "t.csv"
    csv_path.write_bytes(b"a\ncaf\xe9\n")
    with pytest.raises(DataError, match=r"t.csv line 2 byte 4 \(0xe9\) is not UTF-8; save the file as UTF-8"):
        list(csv_lines(str(csv_path)))  # the CSV check's words, from the same function
    assert text_files.decode(path, b"\xef\xbb\xbfcaf\xc3\xa9") == "caf\u00e9"  # a BOM dropped


def test_the_label_is_checked_against_the_classes(folder):
    from tfxline.transforms import features as F

    with pytest.raises(DataError, match="its class folders are the label's values: .* binary label but holds 3 values"):
        texts.check(files_of(folder), folder, F.Label(name="label", transform="binary", positive="praise"))
    texts.check(files_of(folder), folder, F.Label(name="label", transform="class_vocabulary"))


def test_a_run_refuses_a_bad_folder_before_any_component(tmp_path, capsys):
    for c in ("pos", "neg"):
        (tmp_path / "d" / c).mkdir(parents=True)
        for i in range(12):
            (tmp_path / "d" / c / f"{i}.txt").write_text(f"document {i} of {c}\n")
    assert cli.main(["init", "--data", str(tmp_path / "d"), "--dir", str(tmp_path / "p")]) == 0
    (tmp_path / "d" / "neg" / "bad.txt").write_bytes(b"\x93quoted\x94\n")
    capsys.readouterr()
    code = cli.main(["run", "--config", str(tmp_path / "p" / "config.yaml")])
    err = capsys.readouterr().err
    assert code == 2 and "bad.txt line 1 byte 1 (0x93) is not UTF-8" in err, err
    assert not (tmp_path / "p" / "output" / "pipeline_root").exists()


# ---- the config -----------------------------------------------------------------------------

TEXT = {"name": "text", "transform": "text", "top_k": 100}


def config(inputs, label=None, **data):
    return {"data": {"format": "text", "path": "/x", **data}, "evaluation": {"slices": []},
            "features": {"label": label or {"name": "label", "transform": "class_vocabulary"}, "inputs": inputs}}


@pytest.mark.parametrize("raw, says", [
    (config([{"name": "x", "transform": "zscore"}]), "data.format: text with the inputs x (zscore); a folder of .txt"),
    (config([TEXT, {"name": "x", "transform": "zscore"}]), "text with the inputs text (text), x (zscore)"),
    (config([TEXT], {"name": "y", "transform": "regression"}), "text with a regression label (the classes are folder"),
    (config([TEXT], split_key="text"), "a document's split follows its bytes"),
])
def test_format_text_needs_one_text_input_and_a_class_label(raw, says):
    with pytest.raises(ConfigError, match=says.replace("(", r"\(").replace(")", r"\)")):
        config_from_dict(raw)


def test_format_text_loads_with_a_text_input_and_a_class_label(tmp_path):
    from tfxline.pipeline.config.load import MissingDataError

    raw = config([TEXT], {"name": "label", "transform": "binary", "positive": "pos"})
    with pytest.raises(MissingDataError, match="pass an existing folder with one sub-folder of .txt files per class"):
        config_from_dict(raw)
    raw["data"]["path"] = str(tmp_path)
    cfg = config_from_dict(raw)
    assert cfg.data.format == "text" and cfg.features.text_inputs[0].name == "text"


# ---- init -----------------------------------------------------------------------------------

def test_init_on_a_text_folder_says_each_decision_and_writes_a_config_that_loads(folder, tmp_path, capsys):
    code = cli.main(["init", "--data", folder, "--dir", str(tmp_path / "p")])
    out = capsys.readouterr().out
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0].endswith("; 1 other file(s) ignored (README.md)") and "123 .txt files in 3 classes" in lines[0]
    assert lines[1] == "classes: complaint 40, praise 43, question 40"
    assert lines[2].startswith("label: 3 classes (the sub-folders): multi-class")
    assert lines[3].startswith("text: text (") and "free text: " in lines[3] and "a bag of 1-2-grams" in lines[3]
    assert any(x.startswith("sizing: 123 documents: split 8:1:1 (free text learns from every training row)") for x in lines)
    assert any(x.startswith("duplicates: 3 .txt file(s) repeat an earlier file's text") for x in lines)
    cfg = load_config(str(tmp_path / "p" / "config.yaml"))
    assert cfg.data.format == "text" and cfg.features.label.transform == "class_vocabulary"
    assert cfg.training.time_budget_minutes == 10 and any("as many as fit in 10 minutes" in x for x in lines)
    (text,) = cfg.features.text_inputs
    assert text.source == "text" and text.top_k >= 100 and text.ngrams == 2 and text.max_tokens % 16 == 0
    schema = data_source.load_schema(str(tmp_path / "p" / "schema.pbtxt"))
    kinds = {f.name: f for f in schema.feature}
    assert set(kinds) == {"text", "label"} and all(f.type == 1 for f in kinds.values())  # BYTES
    assert kinds["text"].HasField("natural_language_domain") and kinds["label"].domain == "label"


@pytest.mark.parametrize("classes, flags, positive, why", [
    (("pos", "neg"), [], "pos", "its usual spelling"),
    (("spam", "ham"), [], "spam", "the rarer class"),
    (("spam", "ham"), ["--positive", "ham"], "ham", "--positive"),
])
def test_init_on_two_classes_is_binary_with_its_positive_class_named(tmp_path, capsys, classes, flags, positive,
                                                                      why):
    for n, c in zip((30, 50), classes):
        text_folder(str(tmp_path / "d"), per_class=n, classes=("praise",), strays=False)
        os.rename(tmp_path / "d" / "praise", tmp_path / "d" / c)
    code = cli.main(["init", "--data", str(tmp_path / "d"), "--dir", str(tmp_path / "p"), *flags])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"label: two classes (the sub-folders): binary, positive {positive!r} ({why}" in out
    raw = yaml.safe_load((tmp_path / "p" / "config.yaml").read_text())
    assert raw["features"]["label"] == {"name": "label", "transform": "binary", "positive": positive}


def test_init_refuses_loose_txt_files_and_csv_only_flags(folder, tmp_path, capsys):
    (tmp_path / "flat").mkdir()
    (tmp_path / "flat" / "1.txt").write_text("a document")
    assert cli.main(["init", "--data", str(tmp_path / "flat"), "--dir", str(tmp_path / "p")]) == 2
    assert "holds 1 .txt files but no class folders; put each class's .txt files in a sub-folder" in \
        capsys.readouterr().err
    assert cli.main(["init", "--data", folder, "--task", "binary", "--dir", str(tmp_path / "p")]) == 2
    assert "--task apply to a CSV; a text folder's classes are its sub-folders" in capsys.readouterr().err
    assert cli.main(["init", "--data", folder, "--positive", "praise", "--dir", str(tmp_path / "p")]) == 2
    assert "--positive applies to two classes, and the folder has 3" in capsys.readouterr().err


def test_an_image_folder_with_a_stray_txt_file_stays_an_image_folder(tmp_path):
    from tests.image_data import digits_folder
    from tfxline.cli import init_images, init_text_folder

    digits_folder(str(tmp_path), limit=30, photos=False)  # its class 0 holds a notes.txt
    assert init_images.is_image_folder(str(tmp_path)) and not init_text_folder.is_text_folder(str(tmp_path))


# ---- predict's input ------------------------------------------------------------------------

def test_predict_reads_a_folder_or_a_csv_of_paths_in_order(folder, tmp_path):
    from tfxline.local import predict_text

    (tmp_path / "p").mkdir()
    assert cli.main(["init", "--data", folder, "--dir", str(tmp_path / "p")]) == 0
    cfg = load_config(str(tmp_path / "p" / "config.yaml"))
    assert predict_text.reads_files(folder, cfg)
    rows, model_rows = predict_text.document_rows(folder, cfg)
    assert [r["path"] for r in rows] == sorted(r["path"] for r in rows) and len(rows) == 123
    assert rows[0] == {"path": os.path.join("complaint", "0000.txt")} and set(model_rows[0]) == {"text"}
    with open(os.path.join(folder, "complaint", "0000.txt"), encoding="utf-8") as f:
        assert model_rows[0]["text"] == f.read()
    table = tmp_path / "paths.csv"  # a path column of any name, relative to the CSV, with another column
    table.write_text("doc,source\n" + "".join(f"{os.path.relpath(os.path.join(folder, r['path']), tmp_path)},web\n"
                                              for r in rows[:5]))
    assert predict_text.reads_files(str(table), cfg)
    got, model = predict_text.document_rows(str(table), cfg)
    assert [g["doc"] for g in got][0].endswith("0000.txt") and model[0]["source"] == "web"
    assert model[0]["text"] == model_rows[0]["text"]
    (tmp_path / "rows.csv").write_text("text\nsome words\n")  # the text itself: read as rows, as before
    assert not predict_text.reads_files(str(tmp_path / "rows.csv"), cfg)


def test_predict_refuses_a_file_that_is_not_text_naming_it(folder, tmp_path):
    from tfxline.local import predict_text

    assert cli.main(["init", "--data", folder, "--dir", str(tmp_path / "p")]) == 0
    cfg = load_config(str(tmp_path / "p" / "config.yaml"))
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "a.txt").write_text("fine")
    (tmp_path / "new" / "b.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00")
    with pytest.raises(DataError, match=r"b.txt line 1 byte 1 \(0x89\) is not UTF-8; .*; or remove it, and predict"):
        predict_text.document_rows(str(tmp_path / "new"), cfg)
    (tmp_path / "gone.csv").write_text("doc\nmissing.txt\n")
    with pytest.raises(DataError, match=r"missing.txt cannot be read \(No such file or directory\)"):
        predict_text.document_rows(str(tmp_path / "gone.csv"), cfg)


# ---- Kubeflow -------------------------------------------------------------------------------

def test_a_text_folder_pipeline_compiles_for_kubeflow(folder, tmp_path):
    from tfxline.kubeflow import compile as kfp_compile
    from tfxline.kubeflow import spec as kfp_spec

    assert cli.main(["init", "--data", folder, "--dir", str(tmp_path / "p")]) == 0
    cfg = load_config(str(tmp_path / "p" / "config.yaml"))
    job = kfp_compile.compile_pipeline(cfg, image="example/tfxline:test", pipeline_root="gs://bucket/root",
                                       output=str(tmp_path / "pipeline.json"))
    kfp_spec.check_open_source_kfp(job)
    assert "tfxline.components.text_example_gen.Executor" in str(job["pipelineSpec"]["deploymentSpec"]["executors"])
    assert any(name.startswith("TextExampleGen") for name in job["pipelineSpec"]["root"]["dag"]["tasks"])
