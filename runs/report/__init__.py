"""The run report: one self-contained HTML page per pipeline run.

``collect`` reads what a run produced through the ecosystem's APIs (MLMD for the run and
its artifacts, TFDV for statistics / anomalies / schema, TensorBoard for the training
curves, TFMA for the evaluation, TensorFlow for the serving signature); ``svg`` draws the
charts as inline SVG; ``render`` fills the Jinja2 template and writes the file.
"""
