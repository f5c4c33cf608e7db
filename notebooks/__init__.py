"""The report's notebooks (NN_topic.ipynb), shipped with the package as
`dflash_postmortem.notebooks` and found by `report.notebook_dir()`; here, at the top of the
checkout, is where users open them in JupyterLab."""
