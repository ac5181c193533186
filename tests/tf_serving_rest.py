"""TF Serving's REST predict request, as ``tensorflow_model_server`` turns its JSON into the
signature's input tensors, for a test to call a SavedModel signature as TF Serving would. Cited
from tensorflow_serving/util/json_tensor.cc at commit 9d981c5c2708d23c5407c7c1e30309e6f9798874
(the commit tests/tf_serving_rules.py cites):

- the body's keys: ``signature_name`` (a string, :56, :280-285; default serving_default) and
  ``instances`` (:60, :673-704);
- ``instances`` is a plain list when the signature has one input, else a list of objects whose
  keys equal the input names (:523-590: "instances is a plain list, but expecting list of objects
  ...", "keys must be equal to");
- a ``{"b64": "..."}`` object is a string tensor's value, base64-decoded; the object holds that one
  key with a string value (:357-389), and any other dtype refuses it (:404-408, TypeError);
- the elements are batched on a new first axis (:541-600).

``RestError`` carries the server's message where it refuses a request.
"""
from __future__ import annotations

import base64
import binascii
from typing import Any, Dict, Mapping

import numpy as np
import tensorflow as tf


class RestError(ValueError):
    """What TF Serving answers with HTTP 400."""


def _is_b64(value: Any) -> bool:  # json_tensor.cc:357-372
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get("b64"), str)


def _value(value: Any, dtype: tf.DType) -> Any:
    if isinstance(value, dict):  # json_tensor.cc:404-408
        if dtype != tf.string:
            raise RestError(f"JSON Value: {value} Type: Object is not of expected type: {dtype.name}")
        if not _is_b64(value):
            raise RestError(f"JSON Value: {value} not formatted correctly for base64 data")
        try:
            return base64.b64decode(value["b64"], validate=True)
        except binascii.Error:
            raise RestError("Unable to base64 decode") from None
    if isinstance(value, list):
        return [_value(v, dtype) for v in value]
    return value


def predict(loaded, body: Mapping[str, Any]) -> Dict[str, np.ndarray]:
    """The outputs of ``loaded``'s signature (a ``tf.saved_model.load``) for a REST predict body."""
    name = body.get("signature_name", "serving_default")
    if not isinstance(name, str):
        raise RestError("'signature_name' key must be a string value.")
    if name not in loaded.signatures:
        raise RestError(f"Serving signature name: \"{name}\" not found in signature def")
    signature = loaded.signatures[name]
    specs = signature.structured_input_signature[1]
    instances = body.get("instances")
    if not isinstance(instances, list) or not instances:
        raise RestError("Missing 'inputs' or 'instances' key")
    objects = isinstance(instances[0], dict) and not _is_b64(instances[0])
    if not objects and len(specs) > 1:
        raise RestError("instances is a plain list, but expecting list of objects as multiple input tensors "
                        "required as per tensorinfo_map")
    columns: Dict[str, list] = {k: [] for k in specs}
    for i, item in enumerate(instances):
        if objects:
            if set(item) != set(specs):
                raise RestError(f"Failed to process element: {i} of 'instances' list. keys must be equal to: "
                                f"{','.join(sorted(specs))}")
            for key, value in item.items():
                columns[key].append(_value(value, specs[key].dtype))
        else:
            key = next(iter(specs))
            columns[key].append(_value(item, specs[key].dtype))
    tensors = {k: tf.constant(v, dtype=specs[k].dtype) for k, v in columns.items()}
    return {k: v.numpy() for k, v in signature(**tensors).items()}
