"""Image data without a pipeline run (issue #66): the image feature's rules, decoding as the
Trainer and the serving model decode, the folder's pre-flight check, `tfxline init` on a photo
folder, the image models (small_cnn and a keras.applications backbone, from scratch and from a
weights file a test saves itself), the refusal of ``weights: imagenet``, and the KFP compile of
an image pipeline. tests/test_images_e2e.py runs init -> run -> predict on a folder."""
import glob
import io
import json
import os

import numpy as np
import pytest
import tensorflow as tf
import yaml

from tests.example_gen_runs import run_example_gen
from tests.image_data import TRUNCATED, digits_folder
from tfxline.cli import main as cli
from tfxline.pipeline.config import ConfigError
from tfxline.pipeline.config.load import config_from_dict, load_config
from tfxline.pipeline.data import images as image_folder
from tfxline.pipeline.data.check import DataError
from tfxline.transforms import features as F
from tfxline.transforms import images

LABEL = {"name": "label", "transform": "class_vocabulary"}
IMAGE = {"name": "image", "transform": "image", "size": 32}


def spec(*inputs, label=LABEL):
    return F.FeatureSpec.from_dict({"label": label, "inputs": list(inputs) or [IMAGE]})


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("digits")
    digits_folder(str(root), limit=120)
    return str(root)


def encoded(array, fmt):
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format=fmt)
    return buffer.getvalue()


# ---- the feature spec ------------------------------------------------------------------------

def test_an_image_spec_is_its_own_kind():
    assert spec().data_kind == F.IMAGE and spec().image.size == 32
    assert spec({"name": "x", "transform": "zscore"}, label={"name": "y", "transform": "regression"}).data_kind == F.TABLE


@pytest.mark.parametrize("inputs, label, says", [
    ([{"name": "image", "transform": "image"}], LABEL, "has size None; set size: to the side in pixels"),
    ([dict(IMAGE, size=16)], LABEL, "has size 16; set size: to the side in pixels the model sees, a whole number "
                                    "from 32 to 1024"),
    ([dict(IMAGE, augment="rotate")], LABEL, "augment 'rotate'; use one of crop, flip_crop, none"),
    ([IMAGE, {"name": "x", "transform": "zscore"}], LABEL, "reads one image and nothing else; x is also declared"),
    ([IMAGE], {"name": "y", "transform": "regression"}, "an image model classifies"),
    ([{"name": "x", "transform": "zscore", "size": 32}], {"name": "y", "transform": "regression"},
     "'x' has size but transform 'zscore'"),
])
def test_bad_image_specs_are_refused_in_one_line(inputs, label, says):
    with pytest.raises(F.FeatureSpecError, match=None) as e:
        spec(*inputs, label=label)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_the_folder_format_and_the_image_spec_go_together():
    table = {"label": {"name": "y", "transform": "regression"}, "inputs": [{"name": "x", "transform": "zscore"}]}
    with pytest.raises(ConfigError, match="data.format"):
        config_from_dict({"data": {"format": "images"}, "features": table, "evaluation": {"slices": []}})
    with pytest.raises(ConfigError, match="data.format"):
        config_from_dict({"features": {"label": LABEL, "inputs": [IMAGE]}, "evaluation": {"slices": []}})
    cfg = config_from_dict({"data": {"format": "tfrecord"}, "features": {"label": LABEL, "inputs": [IMAGE]},
                            "evaluation": {"slices": []}})
    assert cfg.features.data_kind == F.IMAGE  # TFRecords of encoded images (ImportExampleGen) too


@pytest.mark.parametrize("model, says", [
    ({"weights": "imagenet", "backbone": "mobilenet_v2"}, "download the weights at run time"),
    ({"weights": "/w.h5"}, "small_cnn has no pretrained weights"),
    ({"backbone": "vgg16"}, "use one of small_cnn, mobilenet_v2, efficientnet_b0, resnet50"),
])
def test_model_settings_for_images_are_checked_before_a_run(model, says):
    with pytest.raises(ConfigError) as e:
        config_from_dict({"data": {"format": "images"}, "features": {"label": LABEL, "inputs": [IMAGE]},
                          "model": model, "evaluation": {"slices": []}})
    assert says in str(e.value)


# ---- decoding ----------------------------------------------------------------------------------

def test_png_jpeg_gif_bmp_gray_and_rgb_decode_to_rgb_pixels_of_the_model_size():
    rng = np.random.default_rng(0)
    gray = rng.integers(0, 256, (20, 28), dtype=np.uint8)
    rgb = rng.integers(0, 256, (50, 40, 3), dtype=np.uint8)
    batch = [encoded(gray, "PNG"), encoded(rgb, "JPEG"), encoded(rgb, "GIF"), encoded(gray, "BMP"),
             encoded(np.dstack([rgb, np.full((50, 40), 255, np.uint8)]), "PNG")]  # RGBA: alpha dropped
    pixels = images.decode_batch(tf.constant(batch), 32).numpy()
    assert pixels.shape == (5, 32, 32, 3) and pixels.dtype == np.float32
    assert 0 <= pixels.min() and pixels.max() <= 255.0
    assert np.allclose(pixels[0, ..., 0], pixels[0, ..., 1])  # grayscale repeated in each channel
    # the same image decodes the same whether it came as PNG with alpha or as GIF's palette, nearly
    flat = images.decode_batch(tf.constant([encoded(np.full((8, 8), 200, np.uint8), "PNG")]), 32).numpy()
    assert np.allclose(flat, 200.0, atol=0.01)  # resizing keeps a flat image flat (antialiasing too)


def test_augmentation_shifts_within_the_image_and_none_leaves_it():
    image = tf.constant(np.arange(32 * 32 * 3, dtype=np.float32).reshape(32, 32, 3))
    assert np.array_equal(images.augmented(image, 32, "none").numpy(), image.numpy())
    shifted = [images.augmented(image, 32, "crop", seed=s).numpy() for s in range(5)]
    assert all(s.shape == (32, 32, 3) for s in shifted)
    assert any(not np.array_equal(s, image.numpy()) for s in shifted)


# ---- the folder --------------------------------------------------------------------------------

def test_the_folder_check_counts_classes_formats_and_other_files(folder):
    files = sorted(os.path.join(d, f) for d, _, names in os.walk(folder) for f in names)
    seen = image_folder.check(files, folder)
    assert set(seen.classes) == {str(d) for d in range(10)} | {"china", "flower"}
    assert {os.path.basename(f) for f in seen.ignored} == {"notes.txt", ".DS_Store"}
    assert seen.formats["JPEG"] and seen.formats["PNG"] and seen.formats["damaged"] == 1  # the truncated JPEG
    with pytest.raises(DataError, match=f"do not decode: .*{TRUNCATED}; remove or replace them"):
        image_folder.check(files, folder, bad_images="fail")


def test_a_folder_without_images_or_with_one_class_is_refused(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.txt").write_text("no")
    with pytest.raises(DataError, match="holds no images"):
        image_folder.check([str(tmp_path / "a" / "x.txt")], str(tmp_path))
    (tmp_path / "a" / "1.png").write_bytes(encoded(np.zeros((8, 8), np.uint8), "PNG"))
    with pytest.raises(DataError, match="one class folder"):
        image_folder.check([str(tmp_path / "a" / "1.png")], str(tmp_path))


def test_init_on_a_photo_folder_writes_a_config_that_loads(folder, tmp_path, capsys):
    code = cli.main(["init", "--data", folder, "--dir", str(tmp_path / "p")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "120 images in 10 classes" not in out and "images in 12 classes" in out
    assert "other file(s) ignored (notes.txt" in out and "image size 32 x 32" in out
    raw = yaml.safe_load((tmp_path / "p" / "config.yaml").read_text())
    assert raw["data"]["format"] == "images" and raw["features"]["inputs"][0]["transform"] == "image"
    cfg = load_config(str(tmp_path / "p" / "config.yaml"))
    assert cfg.features.data_kind == F.IMAGE and cfg.serving.tflite == "none"
    # a first run sized to the machine: the passes that fit in 10 minutes (trainer/budget.py)
    assert cfg.training.time_budget_minutes == 10 and "as many as fit in 10 minutes" in out
    assert "image_domain" in (tmp_path / "p" / "schema.pbtxt").read_text()


def test_init_with_a_label_on_a_photo_folder_is_refused(folder, tmp_path, capsys):
    code = cli.main(["init", "--data", folder, "--label", "x", "--dir", str(tmp_path / "p")])
    assert code == 2 and "classes are its sub-folders" in capsys.readouterr().err


def test_init_on_a_csv_still_needs_a_label(tmp_path, capsys):
    (tmp_path / "t.csv").write_text("a,b\n1,2\n")
    code = cli.main(["init", "--data", str(tmp_path / "t.csv"), "--dir", str(tmp_path / "p")])
    assert code == 2 and "--label is needed for a CSV" in capsys.readouterr().err


def test_predict_finds_a_csvs_column_of_image_paths_by_its_cells(folder, tmp_path):
    """A CSV of paths is read as init reads one (issue #72, item 6): its path column need not be
    named as the image input."""
    from tfxline.local import predict_images

    assert cli.main(["init", "--data", folder, "--dir", str(tmp_path / "p")]) == 0
    cfg = load_config(str(tmp_path / "p" / "config.yaml"))
    files = sorted(glob.glob(os.path.join(folder, "[0-9]", "*.png")))[:3]
    (tmp_path / "new.csv").write_text("note,photo\n" + "".join(f"n{i},{f}\n" for i, f in enumerate(files)))
    rows, paths = predict_images.image_rows(str(tmp_path / "new.csv"), cfg)
    assert paths == files and [r["note"] for r in rows] == ["n0", "n1", "n2"]
    (tmp_path / "none.csv").write_text("note\nx\n")
    with pytest.raises(DataError, match="has no column of image paths \\(nor one named 'image'"):
        predict_images.image_rows(str(tmp_path / "none.csv"), cfg)


# ---- the models ----------------------------------------------------------------------------------

def test_small_cnn_and_a_keras_applications_backbone_classify_decoded_pixels():
    from tfxline.trainer import images as trainer_images
    from tfxline.trainer.model import Head

    head = Head("multiclass", num_classes=4)
    pixels = tf.random.uniform([2, 32, 32, 3], 0, 255)
    for backbone in ("small_cnn", "mobilenet_v2"):
        model = trainer_images.build_model(spec(), head, backbone)
        out = model({"image_xf": pixels}).numpy()
        assert out.shape == (2, 4) and np.allclose(out.sum(axis=1), 1.0, atol=1e-5), backbone
        assert model.layers[-1].dtype == "float32"


def test_a_weights_file_is_loaded_into_the_backbone(tmp_path):
    """Transfer learning without a download: a file of MobileNetV2 weights (the no-top layout
    Keras's own download has) loads into the backbone."""
    from tfxline.trainer import images as trainer_images
    from tfxline.trainer.keras_compat import keras
    from tfxline.trainer.model import Head

    k = keras()
    saved = k.applications.MobileNetV2(include_top=False, weights=None, input_shape=(32, 32, 3))
    path = str(tmp_path / "mobilenet_v2_no_top.h5")
    saved.save_weights(path)
    model = trainer_images.build_model(spec(), Head("multiclass", num_classes=3), "mobilenet_v2", path)
    backbone = next(layer for layer in model.layers if layer.name == trainer_images.BACKBONE)
    assert all(np.array_equal(a, b) for a, b in zip(backbone.get_weights(), saved.get_weights()))
    # two phases: the new head alone for the frozen epochs, then the whole network
    assert trainer_images.frozen_epochs(model, 3, 10) == 3 and len(model.trainable_variables) == 2
    trainer_images.unfreeze(model)
    assert len(model.trainable_variables) > 100
    assert trainer_images.phases(0, 10, 3) == [(0, 3), (3, 10)] and trainer_images.phases(5, 10, 3) == [(5, 10)]
    scratch = trainer_images.build_model(spec(), Head("multiclass", num_classes=3), "mobilenet_v2")
    assert trainer_images.frozen_epochs(scratch, 3, 10) == 0  # nothing pretrained to keep


# ---- Kubeflow ----------------------------------------------------------------------------------

def test_an_image_pipeline_compiles_for_kubeflow(folder, tmp_path):
    from tfxline.kubeflow import compile as kfp_compile
    from tfxline.kubeflow import spec as kfp_spec

    assert cli.main(["init", "--data", folder, "--dir", str(tmp_path / "p")]) == 0
    cfg = load_config(str(tmp_path / "p" / "config.yaml"))
    job = kfp_compile.compile_pipeline(cfg, image="example/tfxline:test", pipeline_root="gs://bucket/root",
                                       output=str(tmp_path / "pipeline.json"))
    kfp_spec.check_open_source_kfp(job)
    executors = job["pipelineSpec"]["deploymentSpec"]["executors"]
    text = str(executors)
    assert "tfxline.components.image_example_gen.Executor" in text
    stats = [t for name, t in job["pipelineSpec"]["root"]["dag"]["tasks"].items() if name.startswith("StatisticsGen")]
    options = json.loads(stats[0]["inputs"]["parameters"]["stats_options_json"]["runtimeValue"]["constant"])
    assert len(stats) == 1 and options["enable_semantic_domain_stats"] is True


def test_a_new_days_folder_of_another_format_is_an_anomaly_against_the_schema_init_wrote(folder, tmp_path):
    """The schema's image_format domain is the formats init saw (JPEG and PNG): a day of GIFs is an
    anomaly, which the AnomaliesGate stops the run on."""
    import pandas as pd
    import tensorflow_data_validation as tfdv
    from google.protobuf import text_format
    from tensorflow_metadata.proto.v0 import schema_pb2

    assert cli.main(["init", "--data", folder, "--dir", str(tmp_path / "p")]) == 0
    schema = text_format.Parse((tmp_path / "p" / "schema.pbtxt").read_text(), schema_pb2.Schema())
    frame = pd.DataFrame({"image": [b"GIF89a..."] * 4, "label": ["1"] * 4, "image_format": ["GIF"] * 4,
                          "image_width": [40] * 4, "image_height": [40] * 4})
    anomalies = tfdv.validate_statistics(tfdv.generate_statistics_from_dataframe(frame), schema)
    assert set(anomalies.anomaly_info) == {"image_format"}, anomalies
    same = frame.assign(image_format=["PNG", "JPEG"] * 2)
    assert not tfdv.validate_statistics(tfdv.generate_statistics_from_dataframe(same), schema).anomaly_info


def test_a_csv_of_image_paths_is_read_with_its_classes_and_other_columns(folder, tmp_path, capsys):
    """The CSV input: paths relative to the CSV's folder, a class column, another column kept as
    text; the truncated file left out and counted; init finds the path column."""
    from tfxline.components import image_example_gen

    rows = ["path,kind,source"] + [f"{os.path.relpath(p, tmp_path)},{'odd' if i % 2 else 'even'},cam{i % 3}"
                                   for i, p in enumerate(sorted(glob.glob(os.path.join(folder, "[0-9]", "*.png")))[:30])]
    rows.append(f"{os.path.relpath(os.path.join(folder, '0', TRUNCATED), tmp_path)},even,cam0")
    (tmp_path / "photos.csv").write_text("\n".join(rows) + "\n")
    config = image_example_gen.custom_config("path", "kind")
    out, examples = run_example_gen(image_example_gen.Executor, tmp_path, tmp_path / "out", "photos.csv", config)
    got = [e for split in out.values() for e in split]
    assert len(got) == 30 and {e.features.feature["kind"].bytes_list.value[0] for e in got} == {b"odd", b"even"}
    assert {e.features.feature["source"].bytes_list.value[0] for e in got} == {b"cam0", b"cam1", b"cam2"}
    assert all(e.features.feature["path_format"].bytes_list.value[0] == b"PNG" for e in got)
    assert examples.get_int_custom_property("bad_images") == 1
    assert TRUNCATED in examples.get_string_custom_property("bad_image_files")
    code = cli.main(["init", "--data", str(tmp_path / "photos.csv"), "--label", "kind", "--dir", str(tmp_path / "p")])
    assert code == 0, capsys.readouterr().err
    cfg = load_config(str(tmp_path / "p" / "config.yaml"))
    assert cfg.features.image.source == "path" and cfg.features.label.source == "kind" and cfg.data.format == "images"
    assert 'name: "source"' in (tmp_path / "p" / "schema.pbtxt").read_text()
