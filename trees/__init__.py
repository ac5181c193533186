"""The model family's and the decision forest's side that needs no TensorFlow: which families a
run trains and the forest's settings (settings.py: ``model.family``, ``model.trees``), and the
categorical columns' rates the forest may read (rates.py: ``model.trees.encoding``). The config
loads them without TensorFlow; trainer/ trains and exports the forest (trainer/trees.py,
trees_run.py, trees_search.py, trees_ops.py)."""
